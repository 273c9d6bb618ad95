"""Predicting other speculative settings: accept length from the histogram, step time, L*, speedup.

Every expected number is worked out by hand from the formulas in docs/tune.md; the arithmetic is in
the comments. Probe results are built here in the ``spectui.probe/1`` shape, with 2 layers at
tensor parallel 8, so a forward runs 2 x 2 + 1 = 5 all-reduces.
"""

from __future__ import annotations

import pytest

from spectui.core.probe.predict import StepCosts
from spectui.core.tune import (
    MeasuredRun,
    SpecSetting,
    StepPoint,
    TuneError,
    accept_length,
    extrapolated_accept_length,
    measured_from_runs,
    needed_rate,
    predict_table,
    predicted_accept_length,
)


def probe(latency_by_tokens: dict[int, float], decode_latency: float) -> dict:
    sizes = [{"tokens": t, "median_ms": ms} for t, ms in sorted(latency_by_tokens.items())]
    return {"model": {"layers": 2}, "allreduce": {"world_size": 8, "sizes": sizes,
                                                  "decode_path": {"median_ms": decode_latency}}}


# The story: 12.2 ms plain decode step; a 4-position verify step of 30 ms; EAGLE-3 accept length 2.0.
# 5 all-reduces: decode 5 x 0.64 = 3.2 ms; 2 tokens 5 x 2.9 = 14.5; 4 tokens 5 x 4.14 = 20.7;
# 8 tokens 5 x 6.14 = 30.7. Per verified position beyond the first 0.1 ms; one draft forward 0.5 ms.
STORY = probe({1: 0.64, 2: 2.9, 4: 4.14, 8: 6.14, 16: 8.14}, decode_latency=0.64)
STORY_COSTS = StepCosts(decode_step_ms=12.2, token_ms=0.1, draft_step_ms=0.5)
# h = [4, 3, 2, 1]: accept length 1 + (0x4 + 1x3 + 2x2 + 3x1) / 10 = 2.0
STORY_HIST = (4, 3, 2, 1)
EAGLE3 = SpecSetting.chain("EAGLE3", 3)


def story_table(points=()):
    return predict_table(MeasuredRun(EAGLE3, STORY_HIST, tuple(points)), STORY, STORY_COSTS,
                         settings=[SpecSetting.chain("EAGLE3", k) for k in (1, 2, 3, 5)])


# -- accept length ----------------------------------------------------------------------------------

def test_chain_accept_length_is_exact_for_fewer_steps_on_a_known_acceptance():
    # Per-position acceptance q = 0.8, 0.6, 0.5, 0.3 for a 4-step chain, 10000 verify steps:
    # P(>=1) = .8, P(>=2) = .48, P(>=3) = .24, P(>=4) = .072, so
    # h0 = 2000, h1 = 8000 x .4 = 3200, h2 = 4800 x .5 = 2400, h3 = 2400 x .7 = 1680, h4 = 720.
    hist = [2000, 3200, 2400, 1680, 720]
    measured = MeasuredRun(SpecSetting.chain("EAGLE3", 4), tuple(hist))
    # closed form L(k') = 1 + sum_{j<=k'} P(>=j): 1.8, 2.28, 2.52, 2.592
    for k, expected in ((1, 1.8), (2, 2.28), (3, 2.52), (4, 2.592)):
        value, basis = predicted_accept_length(measured, SpecSetting.chain("EAGLE3", k))
        assert value == pytest.approx(expected, abs=1e-12)
        assert basis == "exact"
    # one step deeper: the last two positions' pooled rate (.24 + .072) / (.48 + .24) = .43333,
    # held constant: 2.592 + .072 x .43333 = 2.6232
    value, basis = predicted_accept_length(measured, SpecSetting.chain("EAGLE3", 5))
    assert value == pytest.approx(2.6232, abs=1e-9)
    assert basis == "extrapolated"


def test_histogram_accept_length_and_its_truncation():
    assert accept_length(STORY_HIST) == pytest.approx(2.0)
    assert accept_length(STORY_HIST, depth=1) == pytest.approx(1.6)   # 1 + 6/10
    # survival 1, .6, .3, .1; rate (.3 + .1) / (.6 + .3) = .4444; 2.0 + .1 x (.4444 + .4444^2) = 2.06420
    assert extrapolated_accept_length(STORY_HIST, 3, 5) == pytest.approx(2.0 + 0.1 * (4 / 9 + 16 / 81))


def test_trees_are_marked_model():
    measured = MeasuredRun(SpecSetting.ngram(8), (50, 30, 15, 5))
    value, basis = predicted_accept_length(measured, SpecSetting.ngram(3))
    # NGRAM with 3 draft tokens accepts at most 2 drafts: 1 + (30 + 2 x 15 + 2 x 5) / 100 = 1.7
    assert (value, basis) == (pytest.approx(1.7), "model")


def test_another_drafter_cannot_be_predicted():
    with pytest.raises(TuneError, match="cannot predict"):
        predicted_accept_length(MeasuredRun(EAGLE3, STORY_HIST), SpecSetting.ngram(4))


def test_a_histogram_deeper_than_the_setting_is_refused():
    with pytest.raises(TuneError, match="do not match its histogram"):
        predicted_accept_length(MeasuredRun(SpecSetting.chain("EAGLE3", 2), STORY_HIST), EAGLE3)


# -- step time, L*, speedup ----------------------------------------------------------------------

def test_story_lstar_from_the_step_model():
    row = story_table().row(EAGLE3, 1)
    # S = T + [comm(4) - comm_decode] + 3 x 0.1 + 4 x 0.5 = 12.2 + (20.7 - 3.2) + 0.3 + 2.0 = 32.0
    assert row.step_ms == pytest.approx(32.0)
    assert row.step_basis == "modelled"
    # L* = 32.0 / 12.2 = 2.62295: the story's "about 2.5-2.7"
    assert row.lstar == pytest.approx(32.0 / 12.2)
    assert 2.5 < row.lstar < 2.7
    assert row.can_win is True                        # a 3-step chain can accept up to 4
    assert row.accept_length == pytest.approx(2.0)
    assert row.tok_s == pytest.approx(62.5)           # 1000 x 2.0 / 32.0
    assert row.baseline_tok_s == pytest.approx(1000 / 12.2)
    assert row.speedup_vs_baseline == pytest.approx(2.0 / (32.0 / 12.2))   # 0.7625
    # a drafter reaching L* with a constant per-position acceptance p: 1 + p + p^2 + p^3 = 2.62295
    p = row.needed_rate
    assert 1 + p + p ** 2 + p ** 3 == pytest.approx(32.0 / 12.2, abs=1e-9)


def test_one_step_chain_cannot_win_on_this_hardware():
    row = story_table().row(SpecSetting.chain("EAGLE3", 1), 1)
    # S = 12.2 + (14.5 - 3.2) + 1 x 0.1 + 2 x 0.5 = 24.6; L* = 24.6 / 12.2 = 2.0164 >= 2 (its longest accept length)
    assert row.step_ms == pytest.approx(24.6)
    assert row.lstar == pytest.approx(24.6 / 12.2)
    assert row.max_accept == 2
    assert row.can_win is False
    assert row.needed_rate is None
    assert row.accept_length == pytest.approx(1.6) and row.accept_basis == "exact"
    assert SpecSetting.chain("EAGLE3", 1) in story_table().cannot_win()


def test_interpolated_verify_size_is_marked():
    row = story_table().row(SpecSetting.chain("EAGLE3", 2), 1)
    # 3 tokens: latency between 2.9 and 4.14 -> 3.52, comm 17.6; S = 12.2 + 14.4 + 0.2 + 1.5 = 28.3
    assert row.step_ms == pytest.approx(28.3)
    assert row.interpolated is True
    assert row.accept_length == pytest.approx(1.9)    # 1 + (3 + 2 x 2 + 2 x 1) / 10


def test_deeper_chain_uses_the_extrapolated_accept_length():
    row = story_table().row(SpecSetting.chain("EAGLE3", 5), 1)
    # 6 tokens: latency 5.14, comm 25.7; S = 12.2 + 22.5 + 0.5 + 3.0 = 38.2
    assert row.step_ms == pytest.approx(38.2)
    assert row.accept_basis == "extrapolated"
    assert row.accept_length == pytest.approx(2.0 + 0.1 * (4 / 9 + 16 / 81))


def test_measured_steps_anchor_the_prediction_at_each_concurrency():
    table = story_table([StepPoint(1, spec_step_ms=33.0, base_step_ms=12.2),
                         StepPoint(2, spec_step_ms=40.0, base_step_ms=13.0)])
    own = table.row(EAGLE3, 1)
    assert (own.step_ms, own.step_basis, own.is_measured) == (33.0, "measured", True)
    # the model says 32.0 at c=1; at c=2: 8 tokens 30.7 - 3.2 + 3 x 2 x 0.1 + 4 x 0.5 = 30.1 over 13.0
    assert dict(table.residual_ms) == {1: pytest.approx(1.0), 2: pytest.approx(40.0 - 43.1)}
    one = SpecSetting.chain("EAGLE3", 1)
    # c=1: 33.0 + (24.6 - 12.2) - (32.0 - 12.2) = 25.6
    assert table.row(one, 1).step_ms == pytest.approx(25.6)
    assert table.row(one, 1).step_basis == "anchored"
    # c=2: one step's extra = (20.7 - 3.2) + 1 x 2 x 0.1 + 2 x 0.5 = 18.7; 40.0 + 18.7 - 30.1 = 28.6; L* 28.6 / 13
    row = table.row(one, 2)
    assert row.step_ms == pytest.approx(28.6)
    assert row.lstar == pytest.approx(2.2)
    assert row.baseline_tok_s == pytest.approx(1000 / 13.0)
    assert table.concurrencies == (1, 2)


def test_without_a_baseline_there_is_a_step_time_but_no_lstar():
    costs = StepCosts(token_ms=0.1, draft_step_ms=0.5)
    table = predict_table(MeasuredRun(EAGLE3, STORY_HIST, (StepPoint(4, spec_step_ms=50.0),)), STORY, costs,
                          settings=[EAGLE3])
    row = table.row(EAGLE3, 4)
    assert row.step_ms == 50.0 and row.tok_s == pytest.approx(40.0)
    assert row.lstar is None and row.can_win is None and row.speedup_vs_baseline is None
    assert any("baseline" in n for n in table.notes)


def test_needed_rate_has_no_answer_past_the_longest_accept_length():
    assert needed_rate(4.0, 3) is None
    assert needed_rate(1.0, 3) == 0.0


# -- from benchmark history ----------------------------------------------------------------------

def _run(conc, step, hist=None, speculative=None, state="done"):
    return {"concurrency": conc, "state": state, "profile": "kimi-eagle3" if speculative else "kimi-baseline",
            "speculative": speculative, "stats": {"step_ms": step, "correct_drafts_histogram": hist}}


def test_measured_from_runs_pools_histograms_and_takes_median_steps():
    spec = {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4}
    runs = [_run(1, 33.0, [2, 1, 1], spec), _run(1, 35.0, [2, 2, 1, 1], spec), _run(1, 34.0, [0, 0, 0, 0], spec),
            _run(4, 41.0, [0, 0, 0, 0], spec), _run(4, 99.0, [9], spec, state="interrupted")]
    base = [_run(1, 12.0), _run(1, 12.4), _run(4, 13.0)]
    m = measured_from_runs(runs, base)
    assert m.setting == EAGLE3
    assert m.histogram == (4, 3, 2, 1)
    assert m.points == (StepPoint(1, 34.0, 12.2), StepPoint(4, 41.0, 13.0))
    assert m.profile == "kimi-eagle3"


def test_measured_from_runs_refuses_mixed_settings_and_plain_runs():
    a = {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4}
    b = {"algorithm": "EAGLE3", "num_steps": 2, "topk": 1, "draft_tokens": 3}
    with pytest.raises(TuneError, match="different speculative settings"):
        measured_from_runs([_run(1, 30.0, [1, 1], a), _run(1, 30.0, [1, 1], b)])
    with pytest.raises(TuneError, match="no speculative algorithm"):
        measured_from_runs([_run(1, 12.0, [1], {"algorithm": None})])
    with pytest.raises(TuneError, match="no correct-drafts histogram"):
        measured_from_runs([_run(1, 30.0, None, a)])


def test_settings_follow_sglang_resolution():
    # NGRAM without draft tokens gets SGLang's 12 (speculative_hook.py _handle_ngram)
    assert SpecSetting.from_settings({"algorithm": "NGRAM"}).draft_tokens == 12
    assert SpecSetting.from_settings({"algorithm": "EAGLE", "num_steps": 2, "draft_tokens": 9}).draft_tokens == 3
    tree = SpecSetting.from_settings({"algorithm": "EAGLE3", "num_steps": 3, "topk": 4, "draft_tokens": 8})
    assert (tree.shape, tree.max_accept) == ("eagle-tree", 4)
    assert SpecSetting.ngram(8).max_accept == 8
    with pytest.raises(TuneError, match="speculative-num-steps"):
        SpecSetting.from_settings({"algorithm": "EAGLE3"})
