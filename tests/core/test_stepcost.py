"""Step costs from the device timer's counters (spectui.core.stepcost): hand-computed windows, a counter
reset, a series that appears, a category that never moves, the timer off, and real 0.5.23 text."""

from __future__ import annotations

from pathlib import Path

import pytest

from spectui.agent.servers.metrics import mode_key, parse_metrics
from spectui.core.stepcost import (
    FORWARD_SECONDS,
    PASSES,
    TIMER_ENV,
    StepSample,
    labelled_series,
    live_l_star,
    series_from_pairs,
    step_costs,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sglang-0.5.23-cpu-step-counters"
RANK = {"tp_rank": "0", "pp_rank": "0"}


def sample(t, seconds=None, passes=None, idle=None):
    """A StepSample from ``{category: s}``, ``{mode: n}`` and the idle seconds."""
    data = {}
    if seconds is not None:
        data[FORWARD_SECONDS] = [[dict(RANK, category=c), v] for c, v in seconds.items()]
    if passes is not None:
        data[PASSES] = [[dict(RANK, mode=m), v] for m, v in passes.items()]
    if idle is not None:
        data["scheduler_idle_seconds_total"] = [[dict(RANK), idle]]
    return StepSample(t, series_from_pairs(data))


def test_plain_server_decode_ms_per_decode_batch():
    # 0.150 s of decode over 10 + 20 decode batches = 5.0 ms; prefill 0.06 s over 3 batches = 20 ms
    before = sample(100.0, {"decode": 1.0, "extend": 0.5}, {"decode_none": 10, "decode_cuda_graph": 20,
                                                            "prefill_none": 1}, idle=3.0)
    after = sample(110.0, {"decode": 1.15, "extend": 0.56}, {"decode_none": 20, "decode_cuda_graph": 40,
                                                             "prefill_none": 4}, idle=7.5)
    costs = step_costs(before, after, speculative=False)
    assert costs.window_s == 10.0 and costs.timer
    assert costs.decode.value == pytest.approx(5.0)
    assert (costs.decode.seconds, costs.decode.steps) == (pytest.approx(0.15), 30)
    assert "category=decode" in costs.decode.source and "decode_cuda_graph|decode_none" in costs.decode.source
    assert costs.extend.value == pytest.approx(20.0)
    assert costs.idle_s == pytest.approx(4.5)
    assert costs.verify.value is None and "not a speculative server" in costs.verify.reason
    assert costs.ratio.value is None


def test_speculative_server_verify_draft_and_live_l_star():
    # 40 cycles: target_verify 0.32 s -> 8 ms, drafting 0.04 (graph) + 0.02 (eager, under decode) -> 1.5 ms
    before = sample(0.0, {"target_verify": 2.0, "eagle_draft": 1.0, "decode": 0.5}, {"decode_cuda_graph": 100})
    after = sample(4.0, {"target_verify": 2.32, "eagle_draft": 1.04, "decode": 0.52}, {"decode_cuda_graph": 140})
    costs = step_costs(before, after, speculative=True)
    assert costs.verify.value == pytest.approx(8.0)
    assert costs.draft.value == pytest.approx(1.5)
    assert costs.decode.value is None and "baseline" in costs.decode.reason
    assert live_l_star(costs).value is None  # no plain decode step in a speculative window
    # decode from a plain window: 0.05 s over 10 steps = 5 ms -> L* = (8 + 1.5) / 5 = 1.9
    plain = step_costs(sample(0.0, {"decode": 0.0}, {"decode_none": 0}),
                       sample(2.0, {"decode": 0.05}, {"decode_none": 10}), speculative=False)
    l_star = live_l_star(costs, decode=plain.decode)
    assert l_star.value == pytest.approx(1.9)
    assert "draft" in l_star.source and "another window" in l_star.source
    # the verify/decode ratio within one window: a speculative window has no decode, so none
    assert "no decode cost" in costs.ratio.reason


def test_counter_reset_and_series_that_appears():
    # the server restarted: decode seconds 5.0 -> 0.06 and passes 900 -> 12 count from zero: 60 ms / 12 = 5 ms;
    # decode_cuda_graph appears only in the later read: it rose from zero (its 8 count)
    before = sample(0.0, {"decode": 5.0}, {"decode_none": 900})
    after = sample(5.0, {"decode": 0.1}, {"decode_none": 12, "decode_cuda_graph": 8})
    costs = step_costs(before, after, speculative=False)
    assert costs.decode.reset
    assert costs.decode.steps == 20
    assert costs.decode.value == pytest.approx(5.0)


def test_category_that_never_moves_has_a_reason():
    before = sample(0.0, {"target_verify": 1.0, "decode": 0.0}, {"decode_cuda_graph": 10})
    after = sample(3.0, {"target_verify": 1.03, "decode": 0.0}, {"decode_cuda_graph": 13})
    costs = step_costs(before, after, speculative=True)
    assert costs.verify.value == pytest.approx(10.0)
    assert costs.draft.value is None and "did not move" in costs.draft.reason
    # no decode batch at all in the window
    idle = step_costs(after, sample(6.0, {"target_verify": 1.03}, {"decode_cuda_graph": 13}), speculative=True)
    assert idle.verify.value is None and "no verify cycle finished" in idle.verify.reason
    l_star = live_l_star(costs, decode=idle.verify)
    assert l_star.value is None and "no decode cost" in l_star.reason


def test_timer_off_names_the_variable():
    before = sample(0.0, passes={"decode_none": 10})
    after = sample(2.0, passes={"decode_none": 30})
    costs = step_costs(before, after, speculative=False)
    assert not costs.timer
    assert costs.decode.value is None and TIMER_ENV + "=1" in costs.decode.reason
    assert costs.decode.steps == 20


def test_window_must_move_forward():
    with pytest.raises(ValueError, match="later sample"):
        step_costs(sample(5.0), sample(5.0), speculative=False)


def test_real_0523_text_timer_off():
    """Real /metrics of sglang 0.5.23 on a CPU (tests/fixtures/.../README.md): the agent's parser keys the step
    counter by mode, the labelled reader keeps its labels, and the timer-off reason names the variable."""
    texts = [(FIXTURE / name).read_text() for name in ("metrics-before.txt", "metrics-after.txt")]
    snap = parse_metrics(texts[1])
    assert mode_key(PASSES, "decode_none") in snap.counters
    assert "scheduler_idle_seconds_total" in snap.counters
    series = [labelled_series(t) for t in texts]
    assert FORWARD_SECONDS not in series[1]  # the timer is off: the family has no sample at all
    modes = {dict(labels)["mode"] for labels in series[1][PASSES]}
    assert modes == {"prefill_none", "decode_none"}
    assert all(dict(labels)["tp_rank"] == "0" for labels in series[1][PASSES])
    costs = step_costs(StepSample(0.0, series[0]), StepSample(10.0, series[1]), speculative=False)
    # three requests of 8 tokens: 3 prefill batches and 3 x 7 decode steps
    assert costs.decode.steps == 3 * 7 and costs.extend.steps == 3
    assert costs.decode.value is None and TIMER_ENV in costs.decode.reason
    assert costs.idle_s is not None and costs.idle_s > 0
