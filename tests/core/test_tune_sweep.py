"""Sweeps and tune on top of the prediction model: which runs it predicts from, which settings it
picks, how variants are named and kept in the history, and the recommendation's sentences."""

from __future__ import annotations

import pytest

from spectui.core.bench.compare import build_comparison
from spectui.core.bench.presets import Preset
from spectui.core.bench.runs import RunResult
from spectui.core.history import HistoryStore
from spectui.core.profiles import load_profiles
from spectui.core.tune import SpecSetting, build_variants, parse_sweep, predict_table
from spectui.core.tune.sweep import (baseline_for, history_measured, predict_variants, predicted_vs_measured,
                                     promising_settings, recommend, variant_for_setting)
from tests.core.test_tune_predict import EAGLE3, STORY, STORY_COSTS, STORY_HIST

SPEC = {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4}


def _run(rid, profile, conc, step, key, hist=None, host="demo", state="done"):
    return {"id": rid, "profile": profile, "concurrency": conc, "state": state, "host": host, "comparison_key": key,
            "speculative": SPEC if hist else None,
            "stats": {"step_ms": step, "correct_drafts_histogram": hist}}


def test_history_measured_takes_the_latest_comparison_and_its_own_baseline():
    runs = [_run(1, "kimi-baseline", 1, 11.0, "old"), _run(2, "kimi-eagle3", 1, 40.0, "old", [9, 0, 0, 1]),
            _run(3, "kimi-baseline", 1, 12.2, "new"), _run(4, "kimi-eagle3", 1, 30.0, "new", [4, 3, 2, 1]),
            _run(5, "kimi-eagle3", 1, 99.0, "new", [1, 1, 1, 1], state="interrupted"),
            _run(6, "kimi-eagle3", 1, 50.0, "other-host", [1, 0, 0, 0], host="h200")]
    m = history_measured(runs, "kimi-eagle3", host="demo", baseline="kimi-baseline")
    assert m.histogram == STORY_HIST and m.setting == EAGLE3
    assert m.point(1).spec_step_ms == 30.0 and m.point(1).base_step_ms == 12.2
    assert m.source == "history run 4"
    assert history_measured(runs, "kimi-ngram", host="demo") is None
    assert history_measured(runs, "kimi-eagle3", host="nowhere") is None


def test_history_measured_falls_back_to_the_latest_baseline_on_the_host():
    runs = [_run(1, "kimi-baseline", 1, 12.0, "a"), _run(2, "kimi-eagle3", 1, 30.0, "b", [4, 3, 2, 1])]
    assert history_measured(runs, "kimi-eagle3", baseline="kimi-baseline").point(1).base_step_ms == 12.0


def test_baseline_is_the_nearest_plain_ancestor():
    lib = load_profiles()
    assert baseline_for(lib.get("kimi-ngram"), lib.get) == "kimi-baseline"
    assert baseline_for(lib.get("nvlink-eagle3"), lib.get) == "nvlink-baseline"
    assert baseline_for(lib.get("kimi-baseline"), lib.get) is None


def test_variant_for_a_setting_changes_only_its_flags_and_is_named_like_a_sweep():
    lib = load_profiles()
    v = variant_for_setting(lib.get("kimi-eagle3"), SpecSetting.chain("EAGLE3", 2))
    assert v.display_name == "kimi-eagle3[num-steps=2,num-draft-tokens=3]"
    assert v.server_name == "kimi-eagle3.ns2.ndt3" and v.problems == ()
    assert v.profile.args["speculative-num-steps"] == 2 and v.profile.extends == "kimi-eagle3"
    same = build_variants(lib.get("kimi-eagle3"), parse_sweep(["num-steps=2", "num-draft-tokens=3"]))[0]
    assert same.server_name == v.server_name and same.profile.args == v.profile.args
    n = variant_for_setting(lib.get("kimi-ngram"), SpecSetting.ngram(4))
    assert n.display_name == "kimi-ngram[num-draft-tokens=4]" and n.server_name == "kimi-ngram.ndt4"


def test_promising_settings_are_the_best_predicted_and_never_the_measured_one():
    from spectui.core.tune import MeasuredRun, StepPoint
    table = predict_table(MeasuredRun(EAGLE3, STORY_HIST, (StepPoint(1, 30.0, 12.2),)), STORY, STORY_COSTS)
    picked = promising_settings(table, 2)
    assert len(picked) == 2 and EAGLE3 not in picked
    speed = {r.setting: r.speedup_vs_baseline for r in table.at(1)}
    others = sorted((v for s, v in speed.items() if s != EAGLE3), reverse=True)
    assert [speed[s] for s in picked] == others[:2]
    assert promising_settings(table, 0) == ()


def _result(rid, profile, conc, tok, *, spec=None, step=None, records=()):
    return RunResult(run_id=rid, host="demo", state="done", server=profile, profile=profile, concurrency=conc,
                     speculative=spec, stats={"output_tok_s": tok}, records=list(records))


def _comp(rows_tok: dict[str, list[float]], variants=None, conc=1):
    results = []
    for name, toks in rows_tok.items():
        for i, t in enumerate(toks):
            results.append(_result(f"{name}-{i}", name, conc, t, spec=None if name == "base" else SPEC))
    meta = {n: {"variant": v} for n, v in (variants or {}).items()}
    return build_comparison(results, profiles=list(rows_tok), baseline="base",
                            preset=Preset(name="p", concurrency=(conc,), repeats=2), host="demo", profile_meta=meta)


def test_a_variant_row_keeps_its_name_in_the_history(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(tmp_path))
    variant = {"display_name": "kimi-ngram[num-draft-tokens=3]", "base": "kimi-ngram",
               "changes": [["speculative-num-draft-tokens", 3]]}
    comp = _comp({"base": [100, 100], "kimi-ngram.ndt3": [50, 52]}, {"kimi-ngram.ndt3": variant})
    store = HistoryStore()
    cid = store.save_comparison(comp, "k1")
    rows = {r["name"]: r for r in store.comparison(cid)["profiles"]}
    assert rows["kimi-ngram.ndt3"]["variant"] == variant and "variant" not in rows["base"]


def test_recommend_picks_the_fastest_and_marks_noise():
    fast = _comp({"base": [100, 102], "a": [120, 121], "b": [130, 131]})
    pick, = recommend([fast], [1], {"b": "p[num-steps=2]"}).picks
    assert pick.name == "p[num-steps=2]" and pick.beats_baseline and pick.speedup == pytest.approx(130.5 / 101)
    assert "p[num-steps=2] at 1.29x the baseline" in pick.sentence()
    noisy = _comp({"base": [100, 120], "a": [108, 112]})
    pick, = recommend([noisy], [1]).picks
    assert pick.noise and not pick.beats_baseline
    assert recommend([noisy], [1]).summary.startswith("no setting beats the baseline")


def test_no_winner_says_what_verify_and_decode_cost_and_the_accept_length_needed():
    comp = _comp({"base": [100, 100], "a": [60, 60]})
    cell = comp["profiles"][1]["cells"]["1"]
    cell.update(step_ms=34.8, l_star=2.83, accept_length={"per_request": 1.95})
    comp["profiles"][0]["cells"]["1"]["step_ms"] = 12.3
    text = recommend([comp], [1]).picks[0].sentence()
    assert ("no setting beats the baseline here, because verify costs 34.8 ms against 12.3 ms for decode; "
            "the drafter would need accept length 2.83") in text
    assert "accepting 1.95" in text


def test_predicted_beside_measured_reads_the_per_stream_rate_of_each_variant():
    from spectui.core.tune import MeasuredRun, StepPoint
    lib = load_profiles()
    v = variant_for_setting(lib.get("kimi-eagle3"), SpecSetting.chain("EAGLE3", 2))
    measured = MeasuredRun(EAGLE3, STORY_HIST, (StepPoint(1, 30.0, 12.2),))
    (vp,) = predict_variants(measured, STORY, [(v.display_name, v.profile)], [1], STORY_COSTS)
    comp = {"profiles": [{"name": v.server_name, "cells": {"1": {"decode_tok_s": 50.0, "speedup": 0.7}}}]}
    (row,) = predicted_vs_measured(comp, [vp])
    assert row["name"] == v.display_name and row["predicted_tok_s"] == pytest.approx(vp.at(1).tok_s)
    assert row["ratio"] == pytest.approx(vp.at(1).tok_s / 50.0) and row["measured_speedup"] == 0.7
