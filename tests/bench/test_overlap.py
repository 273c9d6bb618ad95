"""One benchmark per server at a time: a second start is refused in one sentence, a dead runner does not
block, and ``--allow-overlap`` runs both and marks them overlapped (on the simulated host)."""

import asyncio
import json
import re
import subprocess
import time

import pytest

from spectui.cli.main import main
from spectui.core.bench import BENCH_BUSY, BenchClient, Preset, build_spec, start_run
from spectui.core.errors import AgentCallError
from spectui.core.history import HistoryStore
from spectui.core.profiles import load_profiles
from spectui.core.servers import ServerControl
from spectui.core.session import HostTarget, open_session
from tests.bench.conftest import write_preset, write_sim_profile
from tests.support.sshd import free_port

pytestmark = pytest.mark.timeout(240)

# long enough (minutes) to be still running while the second start is tried; the tests cancel it
LONG = Preset(name="long", dataset="random", input_len=16, output_len=1000, num_prompts=30, concurrency=(1,),
              warmup=0, repeats=1, seed=1)


async def ready(session, name):
    sw = await ServerControl(session).switch(load_profiles().get(name), timeout_s=90)
    assert sw["server"]["state"] == "ready", sw
    return sw["server"]


async def wait_state(client, run_id, states, timeout=60):
    t0 = time.monotonic()
    while True:
        st = await client.status(run_id)
        if st["state"] in states:
            return st
        assert time.monotonic() - t0 < timeout, st
        await asyncio.sleep(0.1)


def start_ticks(pid):
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[19])


def fake_run(state_dir, run_id, *, server, status=None, launch=None, created_at=None):
    """A run folder as another agent leaves it: spec, and a status and/or launch record."""
    d = state_dir / "bench" / run_id
    d.mkdir(parents=True)
    (d / "spec.json").write_text(json.dumps({"run_id": run_id, "server": server, "labels": {"preset": "other"},
                                             "created_at": created_at or time.time(), "prompts": ["x"]}))
    if status is not None:
        (d / "status.json").write_text(json.dumps(dict({"run_id": run_id, "labels": {"preset": "other"}}, **status)))
    if launch is not None:
        (d / "launch.json").write_text(json.dumps(dict({"run_id": run_id, "server": server}, **launch)))
    return d


async def test_a_second_start_on_a_busy_server_is_refused_with_one_sentence(env, demo, state_dir):
    port = free_port()
    write_sim_profile(env["profiles"], "eagle", port=port, speculative="EAGLE3")
    await ready(demo, "eagle")
    first = await start_run(demo, LONG, server="eagle")
    other = await open_session(HostTarget.demo(str(state_dir)))  # another console: another agent
    try:
        client = BenchClient(other)
        await wait_state(client, first.run_id, ("running",))
        # by name, from the other agent, which never saw this run start
        with pytest.raises(AgentCallError) as info:
            await start_run(other, LONG, server="eagle")
        exc = info.value
        assert exc.code == BENCH_BUSY
        text = str(exc)
        assert re.fullmatch(
            rf"server eagle is already being benchmarked by run {first.run_id} \(preset long, started \d+ s ago\); "
            rf"wait for it to end, cancel it \(spectui bench --cancel {first.run_id}, or c on the benchmark screen "
            rf"of the console running it\), or pass --allow-overlap to measure both at once", text), text
        # by address and port: the same server, not named
        spec = build_spec(LONG, 1)
        with pytest.raises(AgentCallError, match=rf"the server at 127.0.0.1:{port} is already being benchmarked "
                                                 rf"by run {first.run_id}") as info:
            await client.start(spec, port=port)
        assert info.value.code == BENCH_BUSY
        assert [s["run_id"] for s in await client.list()] == [first.run_id]  # nothing was started

        partial = await first.cancel()
        assert partial.state == "interrupted" and partial.overlapped_with == []
        # free again; two starts at once from two agents: exactly one wins
        outcomes = await asyncio.gather(client.start(spec, server="eagle"), BenchClient(demo).start(spec, server="eagle"),
                                        return_exceptions=True)
        won = [o for o in outcomes if isinstance(o, dict)]
        lost = [o for o in outcomes if isinstance(o, AgentCallError)]
        assert len(won) == 1 and len(lost) == 1, outcomes
        assert lost[0].code == BENCH_BUSY and won[0]["run_id"] in str(lost[0])
        assert won[0]["overlapped_with"] == []
        await client.cancel(won[0]["run_id"])
    finally:
        await other.close()


async def test_a_runner_that_died_does_not_block_but_a_live_one_does(env, demo, state_dir):
    client = BenchClient(demo)
    spec = build_spec(Preset(name="tiny", dataset="random", input_len=4, output_len=2, num_prompts=1), 1)
    dead = subprocess.Popen(["true"])
    dead.wait()
    live = subprocess.Popen(["sleep", "60"])
    try:
        busy_port, free_port_ = free_port(), free_port()
        # a live runner recorded by another agent (its pid and start time match), on busy_port
        fake_run(state_dir, "20200101-000000-aaaaaa", server={"name": "eagle", "host": "0.0.0.0", "port": busy_port},
                 status={"state": "running", "pid": live.pid, "start_ticks": start_ticks(live.pid),
                         "started_at": time.time() - 125})
        with pytest.raises(AgentCallError, match=r"the server at 127.0.0.1:%d is already being benchmarked by run "
                                                 r"20200101-000000-aaaaaa \(preset other, started 2 min ago\)"
                           % busy_port) as info:
            await client.start(spec, port=busy_port)
        assert info.value.code == BENCH_BUSY

        # on free_port_: a runner killed mid-run, and one that died before writing any status
        fake_run(state_dir, "20200101-000001-bbbbbb", server={"name": None, "host": "127.0.0.1", "port": free_port_},
                 status={"state": "running", "pid": dead.pid, "start_ticks": 1})
        fake_run(state_dir, "20200101-000002-cccccc", server={"name": None, "host": "127.0.0.1", "port": free_port_},
                 launch={"pid": dead.pid, "start_ticks": 1})
        started = await client.start(spec, port=free_port_)  # nothing listens there: the run fails fast
        assert started["overlapped_with"] == []
        b = await client.status("20200101-000001-bbbbbb")
        c = await client.status("20200101-000002-cccccc")
        assert b["state"] == "interrupted" and "ended before the run finished" in b["reason"]
        assert c["state"] == "interrupted" and "before it started the run" in c["reason"]
        await wait_state(client, started["run_id"], ("done", "failed", "interrupted"))
    finally:
        live.kill()
        live.wait()


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def test_allow_overlap_runs_both_and_marks_them_in_the_history(env, demo, state_dir, capsys):
    write_sim_profile(env["profiles"], "eagle", port=free_port(), speculative="EAGLE3")
    await ready(demo, "eagle")
    quick = write_preset(env["presets"], "quick", dataset="random", input_len=16, output_len=12, num_prompts=2,
                         concurrency=1, warmup=0, repeats=1, seed=2)
    first = await start_run(demo, LONG, server="eagle")
    cli = ["bench", "--demo", "--state-dir", str(state_dir), "--preset", str(quick)]

    code, out, err = await asyncio.to_thread(run_cli, capsys, *cli)
    assert code == 1 and out == ""
    assert err.startswith(f"spectui: server eagle is already being benchmarked by run {first.run_id} (preset long")
    assert err.count("\n") == 1 and "Traceback" not in err and "--allow-overlap" in err

    code, out, err = await asyncio.to_thread(run_cli, capsys, *cli, "--allow-overlap", "--json")
    assert code == 0, err
    (later,) = json.loads(out)["runs"]
    assert later["state"] == "done" and later["overlapped_with"] == [first.run_id]
    assert f"shares eagle with run {first.run_id}" in err
    # no /flush_cache under another run: it would wait for its requests and reset the figures it reads
    assert later["summary"]["flush"] == {"flushed": False, "message": f"not flushed: run {first.run_id} measures "
                                                                      f"this server too (overlap allowed)"}

    # the refusal's remedy: cancel the earlier run from the CLI
    code, out, _ = await asyncio.to_thread(run_cli, capsys, "bench", "--demo", "--state-dir", str(state_dir),
                                           "--cancel", first.run_id)
    assert code == 0 and f"run {first.run_id}: interrupted (cancelled)" in out
    result = await first.wait()  # the earlier run learnt of the later one
    assert result.state == "interrupted"
    assert result.overlapped_with == [later["run_id"]] and result.overlapped
    store = HistoryStore()
    first_id = store.save_run(result)

    code, out, _ = await asyncio.to_thread(run_cli, capsys, "history", "list")
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert f"† overlapped with run {first_id}" in rows[str(later["id"])]
    assert f"† overlapped with run {later['id']}" in rows[str(first_id)]
    code, out, _ = await asyncio.to_thread(run_cli, capsys, "history", "show", str(first_id))
    assert code == 0
    assert f"† overlapped with run {later['id']}: its latency and throughput are not those of a lone run" in out
