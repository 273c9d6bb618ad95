"""A recommendation says where it rests on predictions only: at a concurrency where nothing was measured
it is marked ``predicted:`` (and never counted as beating the baseline); with measurements it is as before."""

from __future__ import annotations

from spectui.core.tune.predict import StepPoint
from spectui.core.tune.sweep import recommend
from tests.core.test_tune_predict import story_table
from tests.core.test_tune_sweep import _comp


def test_nothing_measured_the_recommendation_is_a_prediction_and_says_so():
    table = story_table([StepPoint(1, spec_step_ms=32.0, base_step_ms=12.2)])
    rec = recommend([], [1], table=table)
    (pick,) = rec.picks
    assert pick.predicted and not pick.beats_baseline and pick.name is not None
    best = max((r for r in table.at(1) if r.speedup_vs_baseline is not None), key=lambda r: r.speedup_vs_baseline)
    assert best.speedup_vs_baseline < 1  # the story: no setting pays at one stream
    assert rec.summary == "predicted: keep speculation off (nothing measured at concurrency 1)"
    assert pick.sentence().startswith("concurrency 1: nothing was measured; predicted: no setting beats the baseline")
    assert f"{best.speedup_vs_baseline:.2f}x" in pick.sentence()
    assert rec.to_dict()["predicted_only"] is True


def test_without_a_table_nothing_measured_is_withheld_not_a_verdict():
    rec = recommend([], [1, 8])
    assert "keep speculation off here" not in rec.summary
    assert rec.summary == "no recommendation: nothing was measured at concurrency 1 or 8"


def test_a_predicted_winner_is_named_as_predicted_beside_measured_concurrencies():
    table = story_table([StepPoint(1, spec_step_ms=32.0, base_step_ms=12.2), StepPoint(8, spec_step_ms=20.0,
                                                                                      base_step_ms=40.0)])
    measured = _comp({"base": [100, 100], "a": [60, 60]})  # concurrency 1 only
    rec = recommend([measured], [1, 8], table=table)
    one, eight = rec.picks
    assert not one.predicted and eight.predicted and not eight.beats_baseline
    assert "no speculation at concurrency 1" in rec.summary
    assert f"predicted: {eight.name} at concurrency 8" in rec.summary
    assert not rec.to_dict()["predicted_only"]
