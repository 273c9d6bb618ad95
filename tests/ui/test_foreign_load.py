"""The throughput panel says when the watched server serves requests spectui did not send: its running
requests beyond what this console's demo traffic and the host's benchmarks have in flight."""

from __future__ import annotations

from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.ui.app import SpectuiApp
from tests.bench.test_foreign_load import Foreign
from tests.ui.support import panel_text, wait_for
from tests.ui.test_traffic_target import serving_with_traffic

NOT_OURS = "not spectui's"


async def test_the_panel_says_which_running_requests_are_not_spectuis(ui_env):
    app = SpectuiApp(HostTarget.demo(str(ui_env.state)), library=load_profiles(), traffic=True)
    async with app.run_test(size=(160, 44)) as pilot:
        await serving_with_traffic(pilot, app, "1", "alpha")
        await wait_for(pilot, lambda: "running 1" in panel_text(app, "throughput"), 20, "its own request running")
        assert NOT_OURS not in panel_text(app, "throughput")
        with Foreign(ui_env.ports["alpha"], streams=2, max_new_tokens=200):
            await wait_for(pilot, lambda: "running 3 (2 not spectui's)" in panel_text(app, "throughput"), 30,
                           "the panel to count another client's requests")
        await wait_for(pilot, lambda: NOT_OURS not in panel_text(app, "throughput"), 30, "the mark to go")


def test_the_bench_view_marks_figures_measured_beside_foreign_load():
    from spectui.core.bench import Preset, build_comparison
    from spectui.core.console.benchjob import BenchJob
    from spectui.ui.screens.bench import plain_text, results_text, speedup_chart
    from tests.bench.test_foreign_load_marks import load
    from tests.bench.test_history import fake_run

    preset = Preset(name="tiny", num_prompts=2, repeats=1)
    base, spec = fake_run("r1", "base", 75.0), fake_run("r2", "spec", 60.0, accept=2.0)
    base.foreign_load = load(0.09)  # another console's demo traffic ran into the baseline
    job = BenchJob.comparing(preset, "demo (simulated host)", ["base", "spec"], "base")
    comp = build_comparison([base, spec], profiles=["base", "spec"], baseline="base", preset=preset, host="h")
    comp["id"] = "c1"
    job.finish_comparison(comp)
    text = plain_text(results_text(job))
    row = next(line for line in text.splitlines() if line.startswith("base"))
    assert "‡" in row, row
    assert "‡ base, run r1: 9.0% of the tokens the server generated while it measured" in text
    chart = speedup_chart(comp).plain
    assert "spec" in chart and "‡" in next(line for line in chart.splitlines() if line.startswith("spec"))

    single = BenchJob.single(preset, "demo (simulated host)", "base")
    single.finish_run(base, "12")
    assert "‡ shared its server: 9.0% of the tokens" in plain_text(results_text(single))
