"""The arithmetic of benchmark figures."""

import pytest

from spectui.core.bench import stats
from spectui.core.breakeven import break_even


def test_percentiles_interpolate_between_ranks():
    xs = [10, 20, 30, 40, 50]
    assert stats.percentile(xs, 50) == 30
    assert stats.percentile(xs, 90) == pytest.approx(46.0)
    assert stats.percentile(xs, 99) == pytest.approx(49.6)
    assert stats.percentile([7], 99) == 7
    assert stats.percentile([], 50) is None
    s = stats.summary([4, 1, 3, 2])
    assert s["p50"] == 2.5 and s["mean"] == 2.5 and s["n"] == 4


def test_accept_length_is_weighted_by_verify_steps():
    recs = [{"output_tokens": 100, "spec": {"verify_ct": 50, "accept_length": 2.0}},
            {"output_tokens": 30, "spec": {"verify_ct": 30, "accept_length": 1.0}},
            {"output_tokens": 10, "spec": None}]
    # an unweighted mean would say 1.5; 130 tokens over 80 verify steps is 1.625
    assert stats.weighted_accept_length(recs) == pytest.approx(130 / 80)
    assert stats.weighted_accept_length([{"output_tokens": 5}]) is None


def test_pooled_histogram_adds_index_by_index():
    recs = [{"spec": {"histogram": [1, 2, 3]}}, {"spec": {"histogram": [4, 5]}}, {"spec": {}}]
    assert stats.pooled_histogram(recs) == [5, 7, 3]
    assert stats.pooled_histogram([{"spec": None}]) is None


def test_accept_rate_names_its_formula():
    recs = [{"spec": {"correct_drafts": 30, "proposed_drafts": 90}}, {"spec": {"correct_drafts": 10, "proposed_drafts": 30}}]
    r = stats.accept_rate(recs, 2.0, 4)
    assert r["value"] == pytest.approx(40 / 120) and r["formula"] == "correct drafts / proposed drafts"
    derived = stats.accept_rate([{"spec": {}}], 2.0, 4)
    assert derived["value"] == pytest.approx(1 / 3) and derived["source"] == "derived"
    assert derived["formula"] == "(accept length - 1) / (draft tokens - 1)"


def test_spread_and_noise():
    assert stats.spread([100, 102, 98]) == pytest.approx(4 / 200)
    assert stats.spread([100]) is None
    assert stats.is_noise(1.03, 0.02, 0.02) is True
    assert stats.is_noise(1.05, 0.02, 0.02) is False
    assert stats.is_noise(0.95, 0.02, 0.02) is False
    assert stats.is_noise(1.01, None, 0.02) is None


def test_step_time_and_break_even_match_the_story():
    # 82 tok/s plain decode: 12.2 ms a step; EAGLE-3 at 60 tok/s accepting 2.0: 33.3 ms a verify step
    base = stats.step_ms(82.0, None)
    spec = stats.step_ms(60.0, 2.0)
    assert base == pytest.approx(12.195, abs=1e-3) and spec == pytest.approx(33.33, abs=1e-2)
    assert break_even(spec, base) == pytest.approx(2.733, abs=1e-3)
    assert break_even(None, base) is None


def test_counter_delta_treats_a_drop_as_a_restart():
    a = {"counters": {"generation_tokens_total": 100.0}}
    b = {"counters": {"generation_tokens_total": 160.0}}
    assert stats.counter_delta(a, b, "generation_tokens_total") == 60
    assert stats.counter_delta(b, a, "generation_tokens_total") == 100
    assert stats.counter_delta(a, {"error": "HTTP 404"}, "generation_tokens_total") is None


def test_run_stats_from_records():
    recs = [
        {"i": 0, "ok": True, "t_start": 0.0, "ttft_ms": 50.0, "e2e_ms": 1050.0, "output_tokens": 21,
         "first_chunk_tokens": 1, "itl_ms": [50.0] * 10, "chunk_tokens": [2] * 10, "prompt_tokens": 9,
         "spec": {"verify_ct": 10, "accept_length": 2.1, "correct_drafts": 11, "proposed_drafts": 30,
                  "histogram": [2, 5, 3, 0]}},
        {"i": 1, "ok": False, "t_start": 1.05, "ttft_ms": None, "e2e_ms": 3.0, "output_tokens": 0, "error": "HTTP 400: x"},
        {"i": 2, "ok": False, "cancelled": True, "t_start": 1.1, "e2e_ms": 5.0, "error": "cancelled"},
    ]
    summary = {"duration_s": 2.0, "flush": {"flushed": True},
               "metrics_before": {"counters": {"generation_tokens_total": 0, "spec_verify_calls_total": 0}},
               "metrics_after": {"counters": {"generation_tokens_total": 21, "spec_verify_calls_total": 10}},
               "server_info_after": {"avg_spec_accept_length": 2.1}}
    s = stats.run_stats(recs, summary, draft_tokens=4)
    assert (s["requests"], s["completed"], s["errors"], s["cancelled"]) == (2, 1, 1, 1)
    assert s["output_tok_s"] == pytest.approx(21 / 2.0)
    assert s["decode_tok_s"] == pytest.approx(20 / 1.0)
    assert s["step_ms"] == pytest.approx(1000 * 2.1 / 20)
    assert s["tpot_ms"]["p50"] == pytest.approx(50.0)
    assert s["accept_length"]["per_request"] == pytest.approx(2.1)
    assert s["accept_length"]["metrics"] == pytest.approx(2.1)
    assert s["accept_rate"]["value"] == pytest.approx(11 / 30)
    assert s["error_messages"] == ["HTTP 400: x"]
    plain = stats.run_stats([recs[0] | {"spec": None}], {"duration_s": 2.0}, speculative=False)
    assert plain["accept_length"] is None and plain["step_kind"] == "decode"
    assert plain["step_ms"] == pytest.approx(50.0)
