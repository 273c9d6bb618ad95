"""``--sim-slow-after S`` / ``--sim-slow-factor F``: S seconds after ready every forward pass (prefill,
decode, verify) takes F times its modelled time, as on a GPU that throttles its clocks; and requests
beyond ``--max-running-requests`` wait in the queue, where ``sglang:num_queue_reqs`` counts them."""

import asyncio
import io
import re
import textwrap
import threading
import time

import pytest

from spectui.core.profiles.argv import build_argv
from spectui.core.profiles.discovery import ProfileLayer
from spectui.core.profiles.flags import check_against, parse_help_flags
from spectui.core.profiles.loader import load_profile
from spectui.sim import workload
from spectui.sim.engine.request import Request, SamplingParams
from spectui.sim.engine.scheduler import Scheduler, SchedulerConfig
from spectui.sim.engine.speculation import SpecConfig
from spectui.sim.hardware import cost_model
from spectui.sim.logfmt import LogFormat, SimLogger
from spectui.sim.model import get_model
from spectui.sim.server.cli import build_parser, parse_args

SMALL = ["--model-path", "meta-llama/Llama-3.1-70B-Instruct", "--tp-size", "2", "--sim-load-time", "0.3"]


async def _serve(slow_factor: float, algorithm: str) -> tuple[Scheduler, float]:
    """Two greedy requests served to the end by a scheduler of its own; (the scheduler, wall seconds)."""
    model = get_model()
    spec = SpecConfig() if algorithm == "NONE" else SpecConfig(algorithm="NGRAM", num_draft_tokens=8)
    sched = Scheduler(model, cost_model("pcie-8gpu", 2, 140.0), spec, SchedulerConfig(max_running_requests=2),
                      SimLogger(io.StringIO()), LogFormat())
    sched.slow_factor = slow_factor
    reqs = [Request(model.vocab.encode(workload.repetitive_prompt(model, i)),
                    SamplingParams(max_new_tokens=24, ignore_eos=True, temperature=0.0)) for i in range(2)]
    task = asyncio.create_task(sched.run())
    t0 = time.monotonic()
    try:
        for r in reqs:
            sched.submit(r)
        await asyncio.wait_for(asyncio.gather(*(r.done.wait() for r in reqs)), 30)
    finally:
        task.cancel()
    return sched, time.monotonic() - t0


@pytest.mark.parametrize("algorithm", ["NONE", "NGRAM"])
async def test_the_slow_factor_multiplies_every_forward_pass(algorithm):
    plain, plain_s = await _serve(1.0, algorithm)
    slow, slow_s = await _serve(4.0, algorithm)
    a, b = plain.counters, slow.counters
    # the same passes (the output does not depend on time), each 4 times as long
    assert (b.prefill_steps, b.decode_steps, b.decode_tokens) == (a.prefill_steps, a.decode_steps, a.decode_tokens)
    assert b.prefill_s == pytest.approx(4 * a.prefill_s) and b.decode_s == pytest.approx(4 * a.decode_s)
    assert slow.timing.model_s == pytest.approx(4 * plain.timing.model_s)
    assert a.decode_s > 0.1
    # and the clients see it: the scheduler sleeps for the modelled time
    assert slow_s >= 0.95 * slow.timing.model_s and slow_s > 2 * plain_s


def test_the_flags_parse_and_a_factor_under_one_is_refused(capsys):
    ns = parse_args(SMALL + ["--sim-slow-after", "4", "--sim-slow-factor", "2.5"])
    assert (ns.sim_slow_after, ns.sim_slow_factor) == (4.0, 2.5)
    ns = parse_args(SMALL)
    assert (ns.sim_slow_after, ns.sim_slow_factor) == (None, 6.0)
    with pytest.raises(SystemExit) as exc:
        parse_args(SMALL + ["--sim-slow-factor", "0.5"])
    assert exc.value.code == 2
    assert "argument --sim-slow-factor: must be at least 1, not 0.5" in capsys.readouterr().err
    help_text = build_parser().format_help()
    assert "--sim-slow-after S" in help_text and "--sim-slow-factor F" in help_text


def test_a_profile_passes_the_knobs_as_simulator_flags(tmp_path):
    (tmp_path / "slow.yaml").write_text(textwrap.dedent("""\
        model: org/m
        args:
          max-running-requests: 2
        sim:
          slow-after: 4
          slow-factor: 3
        """))
    profile = load_profile(tmp_path / "slow.yaml", layers=[ProfileLayer("test", (tmp_path,))])
    argv = build_argv(profile, simulated=True)
    assert argv[argv.index("--sim-slow-after") + 1] == "4" and argv[argv.index("--sim-slow-factor") + 1] == "3"
    assert check_against(profile, parse_help_flags(build_parser().format_help()), simulated=True) == []


def test_a_server_slows_down_after_the_given_seconds_and_stays_healthy(sim_server):
    sp = sim_server(*SMALL, "--enable-metrics", "--sim-slow-after", "1.5", "--sim-slow-factor", "5")
    body = {"text": "The rabbit hole went straight on", "sampling_params": {"max_new_tokens": 16, "ignore_eos": True,
                                                                           "temperature": 0}}

    def step_ms():
        before = sp.get_json("/sim/stats")["counters"]
        assert sp.post("/generate", body)[0] == 200
        after = sp.get_json("/sim/stats")["counters"]
        return 1000.0 * (after["decode_s"] - before["decode_s"]) / (after["decode_steps"] - before["decode_steps"])

    assert sp.get_json("/sim/stats")["slow_factor"] == 1.0
    fast = step_ms()
    time.sleep(1.6)
    stats = sp.get_json("/sim/stats")
    assert stats["slow_factor"] == 5.0 and stats["ready"]
    assert step_ms() == pytest.approx(5 * fast)
    assert sp.get("/health")[0] == 200
    assert "Scheduler hit an exception" not in sp.log()


def test_requests_beyond_max_running_requests_wait_in_the_queue(sim_server):
    sp = sim_server(*SMALL, "--enable-metrics", "--max-running-requests", "2")
    body = {"text": "Alice was beginning to get very tired", "sampling_params": {"max_new_tokens": 48,
                                                                                "ignore_eos": True}}
    codes = []
    clients = [threading.Thread(target=lambda: codes.append(sp.post("/generate", body)[0])) for _ in range(6)]
    for c in clients:
        c.start()
    running, waiting, queue_gauge = set(), set(), set()
    while any(c.is_alive() for c in clients):
        stats = sp.get_json("/sim/stats")
        running.add(stats["running"])
        waiting.add(stats["waiting"])
        m = re.search(r"^sglang:num_queue_reqs\{[^}]*\} ([\d.]+)$", sp.get("/metrics")[1].decode(), re.M)
        queue_gauge.add(float(m.group(1)))
        time.sleep(0.05)
    for c in clients:
        c.join()
    assert codes == [200] * 6
    assert max(running) == 2 and max(waiting) >= 2 and max(queue_gauge) >= 1, (running, waiting, queue_gauge)
