"""The prediction arithmetic, against cases worked out by hand."""

import pytest

from spectui.core.probe import (
    StepCosts,
    allreduces_per_forward,
    comm_ms,
    decode_comm_ms,
    latency_ms,
    predict,
    predict_for_settings,
)
from spectui.core.breakeven import predicted_break_even
from spectui.core.probe.predict import PredictionError


def result(latencies, *, layers=10, world=8, decode_path=None, modelled=None):
    """A probe result with the given median latency (ms) per token count."""
    return {
        "schema": "spectui.probe/1",
        "provenance": {"kind": "measured", "world_size": world},
        "model": {"model": "m", "hidden_size": 1024, "layers": layers, "dtype": "bfloat16", "dtype_bytes": 2},
        "allreduce": {"world_size": world, "decode_path": decode_path,
                      "sizes": [{"tokens": t, "bytes": 2048 * t, "median_ms": v, "p99_ms": v * 2}
                                for t, v in latencies.items()]},
        "modelled": modelled,
    }


LAT = {1: 0.10, 2: 0.12, 4: 0.20, 8: 0.30, 16: 0.50}


def test_allreduces_per_forward():
    assert allreduces_per_forward(61, 8) == 123      # Kimi-K2.5 / DeepSeek-V3: 2 x 61 + 1
    assert allreduces_per_forward(10, 2) == 21
    assert allreduces_per_forward(61, 1) == 0        # tensor parallel 1: no all-reduce


def test_latency_exact_interpolated_and_extended():
    r = result(LAT)
    assert latency_ms(r, 4) == (0.20, False)
    lat, interp = latency_ms(r, 6)                   # halfway between 4 (0.20) and 8 (0.30)
    assert interp and lat == pytest.approx(0.25)
    lat, _ = latency_ms(r, 32)                       # along 8 -> 16: +0.2 per 8 tokens, 16 more tokens
    assert lat == pytest.approx(0.50 + 0.20 * 16 / 8)
    assert latency_ms(r, 4, stat="p99_ms") == (0.40, False)


def test_comm_per_step():
    r = result(LAT)
    assert comm_ms(r, 1) == pytest.approx(21 * 0.10)   # 2.1 ms
    assert comm_ms(r, 4) == pytest.approx(21 * 0.20)   # 4.2 ms
    assert decode_comm_ms(r) == pytest.approx(2.1)
    with_path = result(LAT, decode_path={"tokens": 1, "median_ms": 0.05})
    assert decode_comm_ms(with_path) == pytest.approx(21 * 0.05)


def test_break_even_chain_and_tree_by_hand():
    # T = 10 ms; 21 all-reduces per step; chain of 3 draft steps verifies 4 tokens:
    # extra communication 21 x (0.20 - 0.10) = 2.1 ms
    r = result(LAT)
    costs = StepCosts(decode_step_ms=10.0, token_ms=0.1, draft_step_ms=0.5, tree_draft_ms=0.4)
    p = predict(r, costs)
    chain = p.row("chain", 4)
    assert chain.num_steps == 3 and chain.max_accept == 4
    assert chain.extra_comm_ms == pytest.approx(2.1)
    assert chain.comm_only == pytest.approx(12.1 / 10)                   # 1.21
    # + 3 extra tokens x 0.1 ms + 4 draft forwards (3 steps + draft extend) x 0.5 ms
    assert chain.predicted == pytest.approx((10 + 2.1 + 0.3 + 2.0) / 10)  # 1.44
    tree = p.row("tree", 4)
    assert tree.predicted == pytest.approx((10 + 2.1 + 0.3 + 0.4) / 10)   # 1.28
    assert [(x.shape, x.draft_tokens) for x in p.rows] == [
        ("chain", 2), ("tree", 2), ("chain", 4), ("tree", 4), ("chain", 8), ("tree", 8), ("chain", 16), ("tree", 16)]
    assert p.allreduces_per_forward == 21 and p.notes == ()


def test_the_story_numbers():
    """The README's story: plain decode 12.2 ms of which about 3.15 ms all-reduce; a verify of
    4 tokens spends about 25 ms in all-reduce. Kimi-K2.5 has 61 layers: 123 all-reduces."""
    r = result({1: 25.0 / 123, 4: 25.0 / 123}, layers=61, decode_path={"tokens": 1, "median_ms": 3.15 / 123})
    row = predict(r, StepCosts(decode_step_ms=12.2)).row("chain", 4)
    assert row.extra_comm_ms == pytest.approx(25.0 - 3.15)
    assert row.comm_only == pytest.approx((12.2 + 21.85) / 12.2)        # 2.79: above 2.7 from communication alone


def test_without_a_decode_step_time_there_is_no_lstar_but_the_extra_communication():
    p = predict(result(LAT))
    row = p.row("chain", 8)
    assert row.comm_only is None and row.predicted is None and row.reachable is None
    assert row.extra_comm_ms == pytest.approx(21 * 0.20)
    assert "--decode-step-ms" in p.notes[0]


def test_noise_never_makes_verification_cheaper_than_decoding():
    r = result({1: 0.30, 2: 0.25, 4: 0.31})
    row = predict(r, StepCosts(decode_step_ms=10.0)).row("chain", 2)
    assert row.extra_comm_ms < 0 and row.comm_only == 1.0


def test_unreachable_break_even():
    # 21 x (2.0 - 0.1) = 39.9 ms extra on a 10 ms step: L* 4.99 > 2 tokens a 1-step chain can accept
    row = predict(result({1: 0.1, 2: 2.0}), StepCosts(decode_step_ms=10.0)).row("chain", 2)
    assert row.comm_only == pytest.approx(4.99) and row.reachable is False


def test_tensor_parallel_one_costs_only_drafting():
    r = result({1: 0.0, 4: 0.0}, world=1)
    row = predict(r, StepCosts(decode_step_ms=8.0, draft_step_ms=1.0)).row("chain", 4)
    assert row.comm_only == 1.0 and row.predicted == pytest.approx((8 + 4 * 1.0) / 8)


def test_profile_settings():
    r = result(LAT)
    costs = StepCosts(decode_step_ms=10.0, draft_step_ms=0.5, draft_token_ms=0.01, tree_draft_ms=0.4)
    eagle = predict_for_settings(r, {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4}, costs)
    assert (eagle.shape, eagle.draft_tokens) == ("chain", 4)
    assert eagle.drafting_ms == pytest.approx(4 * (0.5 + 0.01))
    # topk 1 verifies num_steps + 1 tokens whatever draft_tokens says (SGLang adjusts it)
    assert predict_for_settings(r, {"algorithm": "EAGLE", "num_steps": 3, "topk": 1, "draft_tokens": 9},
                                costs).draft_tokens == 4
    tree = predict_for_settings(r, {"algorithm": "EAGLE3", "num_steps": 5, "topk": 8, "draft_tokens": 32}, costs)
    assert (tree.shape, tree.draft_tokens, tree.max_accept) == ("eagle-tree", 32, 6)
    assert tree.drafting_ms == pytest.approx(6 * (0.5 + 8 * 0.01))
    ngram = predict_for_settings(r, {"algorithm": "NGRAM", "draft_tokens": None}, costs)
    assert (ngram.shape, ngram.draft_tokens) == ("tree", 12)          # SGLang's NGRAM default
    assert ngram.drafting_ms == 0.4
    assert predict_for_settings(r, {"algorithm": None}, costs) is None


def test_costs_from_a_modelled_result_and_overrides():
    r = result(LAT, modelled={"decode_step_ms": 12.2, "token_ms": 0.05, "draft_step_ms": 1.15,
                              "draft_token_ms": 0.01, "tree_draft_ms": 0.32, "source": "model X"})
    c = StepCosts.from_result(r)
    assert (c.decode_step_ms, c.token_ms, c.draft_step_ms, c.draft_token_ms, c.tree_draft_ms) == \
        (12.2, 0.05, 1.15, 0.01, 0.32)
    assert c.source == "model X"
    c = StepCosts.from_result(r, decode_step_ms=11.0, draft_step_ms=2.0)
    assert (c.decode_step_ms, c.draft_step_ms, c.draft_token_ms) == (11.0, 2.0, 0.0)
    assert c.source == "given: decode step, draft step; model X"


def test_errors():
    with pytest.raises(PredictionError):
        predict({"model": {"layers": 1}, "allreduce": {"sizes": []}})
    with pytest.raises(PredictionError):
        predicted_break_even(0.0, 1.0)


def test_a_decode_step_shorter_than_its_measured_allreduce_is_pointed_out():
    r = result(LAT)                                   # comm_decode 2.1 ms
    r["allreduce"]["device"] = "cuda"
    notes = predict(r, StepCosts(decode_step_ms=2.0)).notes
    assert any("shorter than the probe's all-reduce time for it (2.10 ms)" in n and "CUDA graphs" in n
               for n in notes)
    r["allreduce"]["device"] = "cpu"
    notes = predict(r, StepCosts(decode_step_ms=2.0)).notes
    assert any(n.endswith("cheaper than what the probe measured") for n in notes)
    assert not any("shorter" in n for n in predict(r, StepCosts(decode_step_ms=2.2)).notes)
