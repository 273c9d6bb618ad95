"""The benchmark screen shows a speculative run's acceptance per draft position while it measures: P(accept) by
position over the requests finished so far, labelled with that window, whole (it wraps); nothing for a run
without speculation."""

import dataclasses

import pytest

from spectui.core.bench import Preset
from spectui.core.bench.progress import BenchProgress
from spectui.core.bench.positions import acceptance_from_pooled, position_line
from spectui.core.console.benchjob import LIVE_NO_COSTS, BenchJob
from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.bench import BenchScreen, progress_text
from tests.ui.support import connected, wait_for, write_preset
from tests.ui.test_console_bench import pick, switch_to
from tests.ui.test_reflow import norm, screen_lines

pytestmark = pytest.mark.timeout(240)

PRESET = Preset(name="live", dataset="reasoning", input_len=24, output_len=48, num_prompts=4, concurrency=(1,),
                warmup=0, repeats=1, seed=3)
POOLED = {"histogram": [13, 6, 6, 6], "proposed_drafts": 93, "verify_ct": 31, "requests": 4, "widths": [3]}


def progress(positions, **kw):
    return BenchProgress(**dict({"run_id": "r1", "state": "running", "done": 5, "total": 8, "tok_s": 40.0,
                                 "positions": positions}, **kw))


def test_a_run_in_flight_shows_its_positions_so_far_and_a_baseline_none():
    job = BenchJob.single(PRESET, "demo", "beta")
    job.started("r1")
    job.on_progress(progress(POOLED))
    text = progress_text(job).plain
    assert "so far, 4 requests: P(accept) by position 1..3: 0.58 0.39 0.19 \u2192 accept length 2.16" in text, text
    job.on_progress(progress(None, done=6))  # a baseline: no speculation
    assert "P(accept)" not in progress_text(job).plain
    job.on_progress(progress(POOLED, state="done", done=8))
    job.state = "done"
    assert "P(accept)" not in progress_text(job).plain  # the finished run's detail says it from its records


def test_a_comparison_shows_it_under_the_profile_it_measures():
    job = BenchJob.comparing(PRESET, "demo", ["base", "eagle"], "base")
    job.state, job.current, job.run_id = "running", "eagle", "r2"
    job.steps["base"].state, job.steps["eagle"].state = "measured", "measuring"
    job.progress = progress(dict(POOLED, requests=1), run_id="r2")
    lines = progress_text(job).plain.splitlines()
    row = next(i for i, line in enumerate(lines) if "eagle" in line and "measuring" in line)
    assert lines[row + 1].strip().startswith("so far, 1 request: P(accept) by position 1..3:"), lines
    job.current, job.run_id = "base", "r3"
    job.steps["base"].state, job.steps["eagle"].state = "measuring", "measured"
    job.progress = dataclasses.replace(progress(None), run_id="r3")
    assert "P(accept)" not in progress_text(job).plain


async def test_the_benchmark_screen_shows_p_accept_by_position_while_an_eagle_run_measures(ui_env):
    write_preset(ui_env.tmp / "config" / "presets", "live", dataset="reasoning", input_len=24, output_len=96,
                 num_prompts=12, concurrency=1, warmup=0, repeats=1, seed=3)
    app = SpectuiApp(HostTarget.demo(str(ui_env.state)), library=load_profiles(), traffic=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(pilot, app)
        assert [p.name for p in app.profiles][1] == "beta"
        await switch_to(pilot, app, 2, "beta")
        await pilot.press("b")
        await pick(pilot, app, "live")
        await wait_for(pilot, lambda: isinstance(app.screen, BenchScreen), 10, "the benchmark screen")
        job = app.bench.job
        seen = {}

        def shown_while_running():
            p = job.progress
            if not (job.active and p is not None and p.state == "running" and p.done < p.total and p.positions):
                return None
            n = p.positions["requests"]
            line = f"so far, {n} request{'s' if n != 1 else ''}: " + position_line(
                acceptance_from_pooled(p.positions, no_costs=LIVE_NO_COSTS))
            if norm(line) in norm(" ".join(screen_lines(app))):  # whole: wrapped to the screen's width, not cut
                seen.update(line=line, progress=p)
                return True
            return None

        await wait_for(pilot, shown_while_running, 120, "P(accept) by position on the screen while the run measures")
        p = seen["progress"]
        assert 1 <= p.positions["requests"] <= p.done < p.total
        assert "P(accept) by position 1..3: " in seen["line"]  # speculative-num-draft-tokens 4: three positions
        assert len(seen["line"]) > 80  # so it had to wrap on this screen
