"""Acceptance per draft position in stored runs, comparisons, history show and --json.

The requests' meta_info below has the shape SGLang 0.5.23 sends for a finished speculative request
(sglang 0.5.23 wheel, sglang/srt/managers/tokenizer_manager.py:3148-3205): ``spec_num_proposed_drafts`` =
``spec_verify_ct`` x (speculative_num_draft_tokens - 1), ``spec_correct_drafts_histogram`` only as long as the
most correct drafts one verify step had (sglang/srt/managers/schedule_batch.py:1566-1572).
"""

import json

import pytest

from spectui.agent.bench.runner import spec_figures
from spectui.cli.main import main
from spectui.core.bench.compare import build_comparison
from spectui.core.bench.presets import Preset
from spectui.core.bench.runs import RunResult
from spectui.core.bench.stats import run_stats
from spectui.core.bench.table import render_comparison
from spectui.core.history import HistoryStore

DRAFT_TOKENS = 4  # --speculative-num-draft-tokens: 3 drafts proposed per verify step


def meta_info(histogram, completion_tokens):
    verify_ct = sum(histogram)
    correct = sum(i * n for i, n in enumerate(histogram))
    proposed = verify_ct * (DRAFT_TOKENS - 1)
    return {"id": "x", "finish_reason": {"type": "length", "length": completion_tokens},
            "prompt_tokens": 12, "completion_tokens": completion_tokens, "cached_tokens": 0,
            "spec_accept_rate": correct / proposed, "spec_accept_length": completion_tokens / verify_ct,
            "spec_num_correct_drafts": correct, "spec_num_proposed_drafts": proposed, "spec_verify_ct": verify_ct,
            "spec_correct_drafts_histogram": list(histogram)}


HISTOGRAMS = ([2, 3, 4, 1], [4, 2, 2])


def expected_positions():
    """P(k) counted by hand from the pooled histograms: verify steps with at least k correct drafts."""
    steps = [i for h in HISTOGRAMS for i, n in enumerate(h) for _ in range(n)]
    return [sum(1 for s in steps if s >= k) / len(steps) for k in range(1, DRAFT_TOKENS)]


def records(step_ms=None):
    out = []
    for i, h in enumerate(HISTOGRAMS):
        tokens = sum(j * n for j, n in enumerate(h)) + sum(h) + 1
        meta = meta_info(h, tokens)
        accept = meta["spec_accept_length"]
        e2e = 10.0 + (tokens - 1) * (step_ms or 30.0) / accept
        out.append({"i": i, "ok": True, "t_start": float(i), "ttft_ms": 10.0, "e2e_ms": e2e, "output_tokens": tokens,
                    "first_chunk_tokens": 1, "itl_ms": [5.0], "chunk_tokens": [1], "prompt_tokens": 12,
                    "spec": spec_figures(meta)})
    return out


def plain_records(step_ms):
    return [{"i": i, "ok": True, "t_start": float(i), "ttft_ms": 10.0, "e2e_ms": 10.0 + 100 * step_ms,
             "output_tokens": 101, "first_chunk_tokens": 1, "itl_ms": [5.0], "chunk_tokens": [1], "spec": None}
            for i in range(2)]


def result(profile, recs, speculative):
    stats = run_stats(recs, {"duration_s": 2.0}, draft_tokens=DRAFT_TOKENS if speculative else None,
                      speculative=speculative)
    return RunResult(run_id=f"r-{profile}", host="h", state="done", profile=profile, concurrency=1, stats=stats,
                     records=recs, preset={"name": "p"},
                     speculative={"algorithm": "EAGLE3", "draft_tokens": DRAFT_TOKENS} if speculative else None)


def test_a_run_keeps_acceptance_by_position_from_the_requests_meta_info():
    stats = run_stats(records(), {"duration_s": 2.0}, draft_tokens=DRAFT_TOKENS, speculative=True)
    acc = stats["acceptance_by_position"]
    assert acc["width"] == DRAFT_TOKENS - 1 and acc["requests"] == 2
    assert acc["positions"] == pytest.approx(expected_positions())
    assert acc["accept_length"] == pytest.approx(1 + sum(expected_positions()))
    assert acc["verify_steps"] == sum(map(sum, HISTOGRAMS))
    assert acc["marginal"] is None and "baseline" in acc["marginal_reason"]
    assert "spec_correct_drafts_histogram" in acc["source"]
    plain = run_stats(plain_records(20.0), {"duration_s": 2.0}, speculative=False)
    assert plain["acceptance_by_position"] is None


def test_requests_that_disagree_on_the_width_say_so_instead_of_guessing():
    recs = records()
    recs[1]["spec"]["proposed_drafts"] = recs[1]["spec"]["verify_ct"] * 5
    acc = run_stats(recs, {"duration_s": 2.0}, draft_tokens=DRAFT_TOKENS, speculative=True)["acceptance_by_position"]
    assert acc["positions"] is None and "width" in acc["reason"]


def test_history_show_prints_acceptance_by_position_and_json_carries_it(env, capsys):
    store = HistoryStore()
    rid = store.save_run(result("spec", records(), True))
    old = result("old", records(), True)
    old.stats.pop("acceptance_by_position")  # a run kept before the figure existed: computed from its requests
    old_id = store.save_run(old)
    want = "P(accept) by position 1..3: " + " ".join(f"{p:.2f}" for p in expected_positions())
    for ident in (rid, old_id):
        assert main(["history", "show", str(ident)]) == 0
        out = capsys.readouterr().out
        line = next(ln for ln in out.splitlines() if ln.startswith("P(accept)"))
        assert line.startswith(want) and f"accept length {1 + sum(expected_positions()):.2f}" in line
        assert "baseline" in line
        assert main(["history", "show", str(ident), "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["stats"]["acceptance_by_position"]["positions"] == pytest.approx(expected_positions())


def test_a_comparison_prices_each_position_against_the_baseline_decode_step():
    base_ms, verify_ms = 20.0, 30.0
    runs = [result("base", plain_records(base_ms), False), result("spec", records(verify_ms), True)]
    comp = build_comparison(runs, profiles=["base", "spec"], baseline="base",
                            preset=Preset(name="p", concurrency=(1,), repeats=1), host="h")
    cells = {r["name"]: r["cells"]["1"] for r in comp["profiles"]}
    assert cells["base"].get("acceptance_by_position") is None
    acc = cells["spec"]["acceptance_by_position"]
    position_ms = (cells["spec"]["step_ms"] - cells["base"]["step_ms"]) / (DRAFT_TOKENS - 1)
    paying = [k for k, p in enumerate(expected_positions(), 1) if p * cells["base"]["step_ms"] >= position_ms]
    assert 0 < len(paying) < DRAFT_TOKENS - 1  # the figures above leave a tail that does not pay
    assert acc["marginal"] == len(paying) and acc["decode_ms"] == pytest.approx(cells["base"]["step_ms"])
    assert acc["position_ms"] == pytest.approx(position_ms) and acc["costs_from"]
    text = render_comparison(comp)
    line = next(ln for ln in text.splitlines() if "P(accept) by position" in ln)
    assert line.lstrip().startswith("spec") and f"the tail stops paying after position {len(paying)}" in line
    assert "base" not in line
    assert json.loads(render_comparison(comp, "json"))["profiles"][1]["cells"]["1"]["acceptance_by_position"][
        "marginal"] == len(paying)
    md = render_comparison(comp, "markdown")
    assert "P(accept) by position 1..3" in md
