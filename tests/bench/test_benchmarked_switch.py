"""A switch or stop never ends another console's live benchmark unannounced: the host refuses it in one
sentence naming the run, until the run ends or is cancelled, or ``--stop-benchmark`` cancels it first (on the
simulated host; the run is started by a second agent, as another console would)."""

import asyncio
import re

import pytest

from spectui.cli.main import main
from spectui.core.bench import BenchClient, Preset, run_comparison, start_run
from spectui.core.errors import AgentCallError
from spectui.core.profiles import load_profiles
from spectui.core.servers import SERVER_BENCHMARKED, ServerControl
from spectui.core.session import HostTarget, open_session
from tests.bench.conftest import write_sim_profile
from tests.bench.test_overlap import wait_state
from tests.support.sshd import free_port

pytestmark = pytest.mark.timeout(240)

# minutes long: still running while the switches are tried; the tests cancel it or have it cut short
LONG = Preset(name="long", dataset="random", input_len=16, output_len=1000, num_prompts=30, concurrency=(1,),
              warmup=0, repeats=1, seed=1)
SHORT = Preset(name="short", dataset="random", input_len=8, output_len=6, num_prompts=2, concurrency=(1,),
               warmup=0, repeats=1, seed=3)


def two_profiles(env):
    """eagle and ngram on all eight GPUs, on their own ports: a switch to one stops the other."""
    write_sim_profile(env["profiles"], "eagle", port=free_port(), speculative="EAGLE3")
    write_sim_profile(env["profiles"], "ngram", port=free_port(), speculative="NGRAM")
    return load_profiles()


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def servers(ctl):
    return {s["name"]: s for s in await ctl.list()}


async def test_a_switch_or_stop_of_a_benchmarked_server_is_refused_until_the_run_is_cancelled(env, demo, state_dir,
                                                                                              capsys):
    lib = two_profiles(env)
    ctl = ServerControl(demo)
    eagle = (await ctl.switch(lib.get("eagle"), timeout_s=90))["server"]
    assert eagle["state"] == "ready"
    other = await open_session(HostTarget.demo(str(state_dir)))  # another console: another agent
    try:
        run = await start_run(other, LONG, server="eagle")
        client = BenchClient(other)
        await wait_state(client, run.run_id, ("running",))

        # the switch from this console, whose agent never saw the run start
        with pytest.raises(AgentCallError) as info:
            await ctl.switch(lib.get("ngram"), timeout_s=90)
        assert info.value.code == SERVER_BENCHMARKED
        text = str(info.value)
        assert re.fullmatch(
            rf"server eagle is being benchmarked by run {run.run_id} \(preset long, started \d+ s ago\), and "
            rf"switching to ngram would stop it and cut the run short; wait for the run to end, cancel it "
            rf"\(spectui bench --cancel {run.run_id}\), or switch anyway with spectui servers switch ngram "
            rf"--stop-benchmark \(the run then ends interrupted\)", text), text
        with pytest.raises(AgentCallError, match=rf"^server eagle is being benchmarked by run {run.run_id} "
                                                 rf"\(preset long, .*\), and stopping it would cut the run short; .*"
                                                 rf"stop it anyway with spectui servers stop eagle --stop-benchmark") \
                as info:
            await ctl.stop("eagle")
        assert info.value.code == SERVER_BENCHMARKED

        # the CLI: one sentence, exit status 1, for a switch, a stop, and a stop of every server
        base = ["--demo", "--state-dir", str(state_dir)]
        for argv, doing in ((["servers", "switch", "ngram"], "switching to ngram would stop it"),
                            (["servers", "stop", "eagle"], "stopping it would cut the run short"),
                            (["servers", "stop"], "stopping it would cut the run short")):
            code, out, err = await asyncio.to_thread(run_cli, capsys, *argv, *base)
            assert code == 1, (argv, out, err)
            said = [line for line in err.splitlines() if line.startswith("spectui:")]  # after any progress lines
            assert len(said) == 1 and "Traceback" not in err, err
            assert said[0].startswith(f"spectui: server eagle is being benchmarked by run {run.run_id} (preset long")
            assert doing in said[0], said

        # nothing was stopped or started, and the run still measures
        now = await servers(ctl)
        assert now["eagle"]["state"] == "ready" and now["eagle"]["pid"] == eagle["pid"]
        assert "ngram" not in now or now["ngram"]["state"] == "stopped"
        assert (await client.status(run.run_id))["state"] == "running"

        # the remedy the sentence gives: cancel the run; then the switch goes through
        code, out, _ = await asyncio.to_thread(run_cli, capsys, "bench", *base, "--cancel", run.run_id)
        assert code == 0 and f"run {run.run_id}: interrupted (cancelled)" in out, out
        sw = await ctl.switch(lib.get("ngram"), timeout_s=90)
        assert sw["server"]["state"] == "ready" and "benchmarks_cancelled" not in sw
        now = await servers(ctl)
        assert now["eagle"]["state"] == "stopped" and now["ngram"]["state"] == "ready"

        # a run that ended by itself blocks nothing either
        done = await (await start_run(other, SHORT, server="ngram")).wait()
        assert done.state == "done"
        stopped = await ctl.stop("ngram")
        assert stopped["state"] == "stopped" and "benchmarks_cancelled" not in stopped
    finally:
        await other.close()


async def test_stop_benchmark_cancels_the_run_first_and_it_ends_interrupted_saying_why(env, demo, state_dir, capsys):
    lib = two_profiles(env)
    ctl = ServerControl(demo)
    assert (await ctl.switch(lib.get("eagle"), timeout_s=90))["server"]["state"] == "ready"
    other = await open_session(HostTarget.demo(str(state_dir)))
    try:
        run = await start_run(other, LONG, server="eagle")
        await wait_state(BenchClient(other), run.run_id, ("running",))
        code, out, err = await asyncio.to_thread(
            run_cli, capsys, "servers", "switch", "ngram", "--demo", "--state-dir", str(state_dir), "--stop-benchmark")
        assert code == 0, err
        assert out.splitlines()[0].startswith("ngram: ready") and \
            out.splitlines()[0].endswith(f"; benchmark run {run.run_id} cancelled (interrupted)"), out
        result = await run.wait()  # the other console's run ends, and says why
        assert result.state == "interrupted"
        assert result.reason == "cancelled: server eagle was stopped for a switch to ngram while this run measured it"
        now = await servers(ctl)
        assert now["eagle"]["state"] == "stopped" and now["ngram"]["state"] == "ready"

        # the same through the API's stop
        run = await start_run(other, LONG, server="ngram")
        await wait_state(BenchClient(other), run.run_id, ("running",))
        stopped = await ctl.stop("ngram", stop_benchmark=True)
        assert stopped["state"] == "stopped" and stopped["benchmarks_cancelled"] == [run.run_id]
        result = await run.wait()
        assert result.state == "interrupted" and result.reason == ("cancelled: server ngram was stopped while this "
                                                                   "run measured it")
    finally:
        await other.close()


async def test_a_comparison_switches_between_its_own_runs_but_not_under_another_consoles_run(env, demo, state_dir):
    lib = two_profiles(env)
    # its own runs never block it: each switch comes after its previous run ended
    comp = await run_comparison(demo, [lib.get("eagle"), lib.get("ngram")], SHORT, baseline="eagle")
    assert comp["state"] == "complete" and len(comp["run_ids"]) == 2, comp
    assert [(row["name"], row["failed"]) for row in comp["profiles"]] == [("eagle", None), ("ngram", None)]

    # another console's live run on ngram: the comparison's switch to eagle would stop it, so eagle fails
    other = await open_session(HostTarget.demo(str(state_dir)))
    try:
        run = await start_run(other, LONG, server="ngram")
        await wait_state(BenchClient(other), run.run_id, ("running",))
        comp = await run_comparison(demo, [lib.get("eagle")], SHORT, baseline="eagle")
        (row,) = comp["profiles"]
        assert (row["failed"] or "").startswith(f"server ngram is being benchmarked by run {run.run_id}"), row
        assert comp["run_ids"] == []
        assert (await BenchClient(other).status(run.run_id))["state"] == "running"
        await run.cancel()
    finally:
        await other.close()
