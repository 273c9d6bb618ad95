"""The live L* across a host's servers: each server's step costs over the last STEP_WINDOW_S seconds of frames,
a speculative cycle over the newest plain decode step timed on the same host."""

from __future__ import annotations

import pytest

from spectui.core.server_frames import STEP_WINDOW_S, ServerFrame, ServerSeries, timed_l_star


def frame(name, t, *, speculative, seconds, cycles, timer=True):
    series = {"cuda_graph_passes_total": [[{"mode": "decode_cuda_graph"}, cycles]]}
    if timer:
        series["forward_execution_seconds_total"] = [[{"category": c}, v] for c, v in seconds.items()]
    return ServerFrame.from_event({"name": name, "t": t, "step_series": series,
                                   "speculative": {"algorithm": "EAGLE3"} if speculative else {}}, received_at=t)


def fill(name, start, end, *, speculative, per_step, rate, busy_until=None, timer=True):
    s = ServerSeries()
    steps = 0.0
    for t in range(start, end + 1):
        if busy_until is None or t <= busy_until:
            steps = rate * (t - start)
        s.add(frame(name, float(t), speculative=speculative, cycles=steps, timer=timer,
                    seconds={c: steps * v for c, v in per_step.items()}))
    return s


def test_the_window_is_the_last_ten_seconds_and_the_l_star_divides_by_the_plain_decode_step():
    base = fill("base", 0, 30, speculative=False, per_step={"decode": 0.0122}, rate=80)
    spec = fill("spec", 40, 70, speculative=True, per_step={"target_verify": 0.0294, "eagle_draft": 0.0046}, rate=25)
    assert spec.step_costs.window_s == pytest.approx(STEP_WINDOW_S)
    live = timed_l_star({"base": base, "spec": spec}, "spec")
    assert live.drafted and live.step.value == pytest.approx(34.0)
    assert live.decode_server == "base" and live.decode.value == pytest.approx(12.2) and live.decode_until == 30.0
    assert live.l_star.value == pytest.approx(34.0 / 12.2)


def test_an_idle_window_holds_the_last_timed_one_and_says_until_when():
    spec = fill("spec", 0, 40, speculative=True, per_step={"target_verify": 0.03}, rate=25, busy_until=20)
    assert spec.step_costs.verify.value is None  # nothing ran in the last 10 s
    live = timed_l_star({"spec": spec}, "spec")
    # the last window that held a verify cycle: the one ending a frame before it held none
    assert live.step.value == pytest.approx(30.0) and live.until == 20 + STEP_WINDOW_S - 1 and not live.drafted
    assert live.l_star is None and "no plain server" in live.reason


def test_without_the_timer_the_reason_says_so_and_a_plain_server_has_no_live_l_star():
    spec = fill("spec", 0, 20, speculative=True, per_step={}, rate=25, timer=False)
    live = timed_l_star({"spec": spec}, "spec")
    assert live.step is None and "SGLANG_ENABLE_METRICS_DEVICE_TIMER=1" in live.reason
    base = fill("base", 0, 20, speculative=False, per_step={"decode": 0.0122}, rate=80)
    assert timed_l_star({"base": base}, "base") is None and timed_l_star({}, "x") is None
