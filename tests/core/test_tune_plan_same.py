"""One planner for both front ends: ``spectui tune PROFILE --budget 2`` and the console's tune with the
2-minute budget build the same inputs and get the same plan (the same runs, the same per-run estimate),
taken from the history's own timings on the host rather than a fixed guess."""

from __future__ import annotations

import pytest

from spectui.cli.main import build_parser
from spectui.cli.tune import inputs_from_args
from spectui.core.bench.presets import Preset, load_presets
from spectui.core.console.tunejob import TuneJob
from spectui.core.profiles import load_profiles
from spectui.core.tune.plan import RUN_S, plan_tune, tune_inputs
from spectui.core.tune.predict import StepPoint
from spectui.core.tune.run import TuneEvent, TuneOutcome, plan_text
from spectui.core.tune.sweep import recommend
from spectui.ui.controllers.tune import console_inputs
from spectui.ui.screens.tune import progress_text, results_text
from tests.core.test_tune_predict import EAGLE3, story_table

RUN = 10.0      # each earlier run took this long on the host
SWITCH = 5.0    # and each switch between profiles this long
HOST = "demo"
HIST = [4, 3, 2, 1]
SPEC = {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4}


def history(preset, key="k1", t0=1000.0):
    """A comparison of kimi-baseline and kimi-eagle3 with ``preset``, timed as above."""
    runs, t = [], t0
    for i, prof in enumerate(("kimi-baseline", "kimi-eagle3")):
        t += SWITCH if i else 0.0
        for c in preset.concurrency:
            for rep in range(preset.repeats):
                spec = prof != "kimi-baseline"
                runs.append({"id": len(runs) + 1, "profile": prof, "concurrency": c, "repeat": rep + 1,
                             "state": "done", "host": HOST, "comparison_key": key, "preset": preset.to_dict(),
                             "started_at": t, "ended_at": t + RUN, "speculative": SPEC if spec else None,
                             "stats": {"step_ms": 30.0 if spec else 12.2,
                                       "correct_drafts_histogram": HIST if spec else None}})
                t += RUN
    return runs


def cli_inputs(*argv):
    return inputs_from_args(build_parser().parse_args(["tune", *argv]), load_profiles())


@pytest.mark.parametrize("covered", [True, False])
def test_the_cli_and_the_console_plan_a_2_minute_budget_the_same_way(covered):
    lib = load_profiles()
    runs = history(load_presets().get("tune")) if covered else []
    cli = cli_inputs("kimi-eagle3", "--demo", "--budget", "2")
    console = console_inputs(lib, "kimi-eagle3", 2.0)
    assert cli.key() == console.key()
    assert plan_tune(cli, runs, HOST) == plan_tune(console, runs, HOST)


def test_the_per_run_estimate_comes_from_the_hosts_own_timings_not_a_guess():
    lib = load_profiles()
    inputs = tune_inputs(lib, "kimi-eagle3", 2.0)
    runs = history(inputs.preset)
    plan = plan_tune(inputs, runs, HOST)
    assert plan.run_s == pytest.approx(RUN) and plan.switch_s == pytest.approx(SWITCH)
    assert "earlier run" in plan.run_basis
    # the history covers the profile: nothing is measured first, but the tune still measures the profile and its
    # baseline when the budget holds them, so that its recommendation rests on what it measured
    assert not plan.measure_first
    per = SWITCH + len(inputs.preset.concurrency) * inputs.preset.repeats * RUN
    assert 2 * per <= inputs.budget_s
    assert {r.profile for r in plan.runs} == {"kimi-baseline", "kimi-eagle3"}
    assert plan.total_s <= inputs.budget_s
    # a load the host never ran, or another host: a guess, and the plan says so
    other = plan_tune(inputs, runs, "elsewhere")
    assert other.run_s == RUN_S and "guess" in other.run_basis and other.measure_first


def test_runs_of_another_load_do_not_set_the_estimate():
    lib = load_profiles()
    inputs = tune_inputs(lib, "kimi-eagle3", 8.0)
    longer = inputs.preset.to_dict() | {"output-len": inputs.preset.output_len * 4}
    runs = [dict(r, preset=longer) for r in history(inputs.preset)]
    assert plan_tune(inputs, runs, HOST).run_s == RUN_S


def test_the_budget_buys_settings_in_whole_profiles_and_never_more_than_asked():
    lib = load_profiles()
    small = tune_inputs(lib, "kimi-eagle3", 2.0)
    runs = history(small.preset)
    per = plan_tune(small, runs, HOST).per_profile_s
    for minutes in (2.0, 4.0, 8.0, 15.0, 30.0):
        inputs = tune_inputs(lib, "kimi-eagle3", minutes, max_settings=3)
        plan = plan_tune(inputs, runs, HOST)
        assert plan.settings == min(3, max(0, int((inputs.budget_s - 2 * per) // per)))
        assert plan.total_s <= inputs.budget_s or not plan.settings
    # measured first, then re-planned with the time it took: the baseline again beside the settings only
    first = plan_tune(small, [], HOST)
    assert first.measure_first and [r.profile for r in first.runs[:1]] == ["kimi-baseline"]
    after = plan_tune(tune_inputs(lib, "kimi-eagle3", 8.0), runs, HOST, spent_s=2 * per, first_done=True)
    assert "kimi-eagle3" not in {r.profile for r in after.runs} and after.runs[0].profile == "kimi-baseline"
    assert after.total_s <= 8.0 * 60


def test_the_console_labels_what_it_did_not_measure_in_this_tune():
    lib = load_profiles()
    inputs = tune_inputs(lib, "kimi-eagle3", 2.0)
    plan = plan_tune(inputs, history(inputs.preset), HOST)
    job = TuneJob("kimi-eagle3", "kimi-baseline", Preset(name="tune", concurrency=(1,), repeats=1), HOST, 2.0, EAGLE3)
    job.on_event(TuneEvent("planned", plan_text(plan), plan=plan))
    assert plan_text(plan) in progress_text(job).plain and f"{plan.run_s:.0f} s" in plan_text(plan)
    earlier = story_table([StepPoint(1, spec_step_ms=32.0, base_step_ms=12.2)])
    job.on_event(TuneEvent("predicted", table=earlier))
    assert job.chart(1).baseline_source == "measured earlier"  # the history's baseline run, not this tune's
    job.on_event(TuneEvent("predicted", table=story_table([StepPoint(1, spec_step_ms=32.0)])))
    assert job.chart(1).baseline_source == "predicted"          # the probe's decode step
    rec = recommend([], [1], table=earlier)
    job.finish(TuneOutcome(report={"notes": []}, measured=earlier.measured, table=earlier, predictions=(),
                           comparisons=(), beside=(), recommendation=rec))
    text = results_text(job).plain
    assert "predicted: keep speculation off (nothing measured at concurrency 1)" in text
    assert "Recommendation:" not in text and "keep speculation off here" not in text


def test_the_note_says_what_the_budget_left_out():
    lib = load_profiles()
    inputs = tune_inputs(lib, "kimi-eagle3", 2.0)
    runs = history(inputs.preset)
    per = plan_tune(inputs, runs, HOST).per_profile_s
    after = plan_tune(inputs, runs, HOST, spent_s=inputs.budget_s - per / 2, first_done=True)
    assert not after.runs and "no time to measure other settings" in after.note()  # the profile was measured
    tight = plan_tune(tune_inputs(lib, "kimi-eagle3", per / 60 * 1.5), runs, HOST)
    assert not tight.runs and "no time to measure anything" in tight.note()


def test_the_plan_line_says_what_is_left_after_the_first_measurement():
    lib = load_profiles()
    inputs = tune_inputs(lib, "kimi-eagle3", 2.0)
    runs = history(inputs.preset)
    per = plan_tune(inputs, runs, HOST).per_profile_s
    after = plan_text(plan_tune(inputs, runs, HOST, spent_s=inputs.budget_s - per / 2, first_done=True))
    assert "measure no other setting" in after and "predictions only" not in after
    tight = plan_text(plan_tune(tune_inputs(lib, "kimi-eagle3", per / 60 * 1.5), runs, HOST))
    assert "predictions only" in tight
    both = plan_text(plan_tune(inputs, runs, HOST))
    assert "compare the profile with its baseline" in both and f"{plan_tune(inputs, runs, HOST).run_s:.0f} s" in both
