"""Tune from the console on the simulated host, driven by Pilot: ``v`` opens the benchmark screen,
``T`` tunes the profile highlighted on the dashboard within a budget picked from a list; the tune
screen follows it live, its chart shows every measured setting beside the prediction, and the
recommendation is the one the core's tune loop returns (and recomputes from the saved comparisons)."""

import pytest

from spectui.core.history import HistoryStore
from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.core.tune.run import swept_value
from spectui.core.tune.sweep import recommend
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.bench import BenchScreen
from spectui.ui.screens.tune import BudgetPicker, TuneScreen
from spectui.ui.widgets.tune_chart import TuneChart
from tests.ui.support import connected, wait_for, write_kimi_profile, write_preset

SIZE = (140, 50)
pytestmark = pytest.mark.timeout(420)


@pytest.fixture
def tune_env(ui_env):
    """A plain Kimi-K2.5 profile and an EAGLE-3 one extending it; a small ``tune`` preset of the user's."""
    write_kimi_profile(ui_env.profiles, "kbase", load_time=0.3)
    (ui_env.profiles / "keagle.yaml").write_text(
        "name: keagle\nextends: kbase\nargs:\n  speculative-algorithm: EAGLE3\n"
        "  speculative-draft-model-path: lightseekorg/kimi-k2.5-eagle3\n  speculative-num-steps: 3\n"
        "  speculative-eagle-topk: 1\n  speculative-num-draft-tokens: 4\n")
    write_preset(ui_env.tmp / "config" / "presets", "tune", dataset="reasoning", input_len=24, output_len=24,
                 num_prompts=2, concurrency=[1], warmup=0, repeats=1, seed=3)
    return ui_env


async def highlight(pilot, app, name):
    for _ in range(len(app.profiles)):
        if app.highlighted_name() == name:
            return
        await pilot.press("down")
    assert app.highlighted_name() == name


async def test_T_on_the_benchmark_screen_tunes_the_highlighted_profile_live_and_recommends(tune_env):
    app = SpectuiApp(HostTarget.demo(str(tune_env.state)), library=load_profiles(), traffic=False)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await highlight(pilot, app, "alpha")  # no speculation: nothing to tune, said in one sentence
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, BenchScreen), 10, "the benchmark screen")
        assert "T tunes the profile highlighted on the dashboard" in app.screen.progress_plain
        await pilot.press("T")
        await wait_for(pilot, lambda: any("alpha has no speculative algorithm" in n.message
                                          for n in app.notification_log), 5, "the refusal")
        await pilot.press("escape")
        await highlight(pilot, app, "keagle")
        await pilot.press("v", "T")
        await wait_for(pilot, lambda: isinstance(app.screen, BudgetPicker), 10, "the budget picker")
        picker = app.screen
        assert picker.budgets[0] == 8.0 and 2.0 in picker.budgets  # the CLI's default first
        assert picker.choose(2.0)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TuneScreen), 10, "the tune screen")
        screen = app.screen
        tune = screen.tune
        assert (tune.profile, tune.baseline, tune.budget_min) == ("keagle", "kbase", 2.0)
        # live: the stages and the run in flight change while it runs
        seen = set()

        def running_line():
            if tune.active and tune.bench is not None and tune.bench.progress is not None:
                seen.add(screen.progress_plain)
            return (len(seen) >= 2 and any("requests" in s and "run " in s for s in seen)) or not tune.active

        await wait_for(pilot, running_line, 120, "live progress of a run")
        assert any("measuring keagle and kbase first" in s for s in seen)
        assert any("requests" in s and "run " in s for s in seen), seen
        await wait_for(pilot, lambda: not tune.active, 360, "the tune to end")
        assert tune.state == "done", tune.message
        outcome = tune.outcome
        assert outcome is not None and len(outcome.comparisons) >= 1
        await pilot.pause(0.3)
        screen.sync()

        # the chart: every measured setting at its swept value, measured beside predicted
        settings = {vp.server: vp.setting for vp in outcome.predictions if vp.setting is not None}
        views = screen.chart_views()
        assert [v.concurrency for v in views] == [1] and views[0].axis == "num-steps"
        measured = {(r["server"], r["concurrency"]): r for r in outcome.beside if r["measured_tok_s"] is not None}
        assert measured, outcome.beside
        chart_text = screen.query_one(TuneChart).text
        for (server, c), r in measured.items():
            (view,) = [v for v in views if v.concurrency == c]
            (point,) = [p for p in view.points if p.value == swept_value(settings[server])]
            assert point.measured == pytest.approx(r["measured_tok_s"])
            assert point.predicted == pytest.approx(r["predicted_tok_s"])
            assert f"{r['measured_tok_s']:.1f}" in chart_text
        assert views[0].baseline_source == "measured" and "kbase" in chart_text
        # the recommendation: the core's, and the same as recomputed from the saved comparisons
        results = screen.results_plain
        rec = outcome.recommendation
        assert rec.summary in results
        for pick in rec.picks:
            assert pick.sentence() in results
        saved = [HistoryStore().comparison(c["id"]) for c in outcome.comparisons]
        names = {v.server_name: v.display_name for v in outcome.variants}
        assert recommend(saved, [1], names).to_dict() == rec.to_dict()
        # the tune's comparisons were the console's benchmark while they ran; it is over now
        assert app.busy is None and not tune.bench.active
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, TuneScreen), 5, "back")


def test_the_chart_marks_each_measured_setting_beside_its_prediction_and_the_baseline():
    from spectui.core.console.tunejob import ChartPoint, ChartView
    from spectui.ui.draw import DEFAULT_STYLES
    from spectui.ui.widgets.tune_chart import measured_rows, plot_rows

    points = (ChartPoint(1, "steps 1", predicted=70.0), ChartPoint(2, "steps 2", predicted=64.0, measured=61.0,
                                                                   spread=0.04, speedup=0.8),
              ChartPoint(3, "steps 3", predicted=58.0, measured=57.5, spread=0.2, noise=True, speedup=0.95,
                         is_profile=True))
    view = ChartView(8, "num-steps", points, 76.0, "measured", "kbase")
    plot = [r.plain for r in plot_rows(view, 60, DEFAULT_STYLES)]
    grid = plot[1:-3]
    cols = [i for i, ch in enumerate(plot[-2]) if ch.isdigit()]
    assert len(cols) == 3  # one x label per swept value
    marks = {c: "".join(row[c] for row in grid) for c in cols}
    assert "●" not in marks[cols[0]] and "·" in marks[cols[0]]   # predicted only
    assert "●" in marks[cols[1]] and "●" in marks[cols[2]]
    assert marks[cols[2]].count("│") > marks[cols[1]].count("│")  # the wider spread draws longer
    assert any(set(row[8:]) <= {"─", "·", "●", "│"} and "─" in row for row in grid)  # the baseline line
    assert "kbase 76.0 tok/s (measured)" in plot[-1]
    table = "\n".join(r.plain for r in measured_rows(view, DEFAULT_STYLES))
    assert "61.0 ±4%" in table and "57.5 ±20%" in table and "noise" in table and "70.0" not in table
