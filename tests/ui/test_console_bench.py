"""Benchmarks from the console on the simulated host, driven by Pilot: ``b`` (a preset against the
ready server, live progress, saved to history, demo traffic paused meanwhile), ``space`` + ``B``
(a comparison of the marked profiles), the results screen and ``e`` (export), and the host's refusal of a
server that another console is benchmarking."""

import pytest

from spectui.core.bench import Preset, start_run
from spectui.core.bench.table import parse_markdown_table
from spectui.core.history import HistoryStore
from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget, open_session
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.bench import BenchScreen
from spectui.ui.screens.confirm import ConfirmScreen
from spectui.ui.screens.picker import PresetPicker
from tests.ui.support import connected, notified, panel_text, server_state, wait_for, write_kimi_profile, write_preset

SIZE = (120, 40)
pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def bench_env(ui_env):
    """Two Kimi-K2.5 profiles on the simulated pcie-8gpu host (plain and EAGLE-3), and two small presets."""
    write_kimi_profile(ui_env.profiles, "kbase")
    write_kimi_profile(ui_env.profiles, "keagle", speculative="EAGLE3")
    presets = ui_env.tmp / "config" / "presets"
    write_preset(presets, "tiny", dataset="reasoning", input_len=24, output_len=16, num_prompts=2, concurrency=1,
                 warmup=0, repeats=1, seed=3)
    write_preset(presets, "steady", dataset="reasoning", input_len=24, output_len=48, num_prompts=6, concurrency=1,
                 warmup=1, repeats=1, seed=3)
    return ui_env



async def pick(pilot, app, name):
    await wait_for(pilot, lambda: isinstance(app.screen, PresetPicker), 10, "the preset picker")
    picker = app.screen
    names = [p.name for p in picker.presets]
    for _ in range(names.index(name)):
        await pilot.press("down")
    await pilot.press("enter")
    return names


async def switch_to(pilot, app, number, name):
    await pilot.press(str(number))
    if isinstance(app.screen, ConfirmScreen):
        await pilot.press("y")
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) or
                   (server_state(app, name) == "ready" and app.busy is None), 60, f"{name} ready")
    if isinstance(app.screen, ConfirmScreen):
        await pilot.press("y")
        await wait_for(pilot, lambda: server_state(app, name) == "ready" and app.busy is None, 60, f"{name} ready")


async def test_b_benchmarks_the_ready_server_live_pauses_the_traffic_and_saves_the_run(bench_env):
    app = SpectuiApp(HostTarget.demo(str(bench_env.state)), library=load_profiles(), traffic=True)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        assert [p.name for p in app.profiles] == ["alpha", "beta", "broken", "kbase", "keagle"]
        await wait_for(pilot, lambda: app.traffic.on, 10, "the demo traffic")
        await pilot.press("b")  # nothing is ready yet
        await wait_for(pilot, lambda: notified(app, "No server is ready"), 5, "the refusal")
        assert app.screen is app.dashboard
        await switch_to(pilot, app, 5, "keagle")
        await pilot.press("b")
        names = await pick(pilot, app, "steady")
        assert names[0] == "single-stream"  # the default comes first
        assert {"single-stream", "batch-16", "concurrency-sweep", "tiny", "steady"} <= set(names)
        await wait_for(pilot, lambda: isinstance(app.screen, BenchScreen), 10, "the benchmark screen")
        screen = app.screen
        job = app.bench.job
        assert job.kind == "run" and job.server == "keagle" and job.preset.name == "steady"
        # live progress: requests done, live tok/s and accept length, an ETA
        await wait_for(pilot, lambda: job.progress is not None and job.progress.state == "running"
                       and 1 <= job.progress.done < 6 and job.progress.eta_s is not None, 60, "progress")
        text = screen.query_one("#bench-progress").render().plain
        assert "/6 requests" in text and "tok/s" in text and "accept" in text and "ETA" in text, text
        # the demo traffic is paused on the host while it measures, and the console says so
        status = await app.link.session.client.call("traffic.status")
        assert not status["running"]
        assert "the demo traffic is paused" in text
        assert app.bench.measuring()
        # back on the dashboard it goes on: the header shows it, the traffic key waits for it, v comes back
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.dashboard, 5, "the dashboard")
        banner = app.dashboard.query_one("#banner")
        await wait_for(pilot, lambda: banner.display and "benchmarking keagle with steady" in banner.text
                       and "requests" in banner.text and "traffic paused" in panel_text(app, "header"), 5,
                       "the banner and the header")
        await pilot.press("t")
        await wait_for(pilot, lambda: notified(app, "stays paused while the benchmark measures"), 5, "the refusal")
        await pilot.press("2")  # no switching under a benchmark
        await wait_for(pilot, lambda: notified(app, "Wait: benchmarking keagle"), 5, "the refusal")
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, BenchScreen), 5, "the benchmark screen")
        screen = app.screen
        await wait_for(pilot, lambda: job.state == "done", 90, "the run to end")
        # saved to history with its provenance
        assert job.saved_id is not None
        run = HistoryStore().run(int(job.saved_id))
        assert run["profile"] == "keagle" and run["state"] == "done" and run["preset"]["name"] == "steady"
        assert len(run["records"]) == 6 and run["stats"]["output_tok_s"] > 0
        assert run["stats"]["accept_length"]["per_request"] > 1.0
        await pilot.pause(0.5)
        results = screen.query_one("#bench-results")
        assert f"Saved in the history as run {job.saved_id}" in screen.results_plain
        assert "accept length" in screen.results_plain and results.display
        # the traffic comes back, and the header no longer says paused
        await wait_for(pilot, lambda: app.traffic.on and not app.bench.measuring(), 10, "traffic back")
        for _ in range(50):  # the host's traffic restarts a moment after the console asks for it
            status = await app.link.session.client.call("traffic.status")
            if status["running"]:
                break
            await pilot.pause(0.2)
        assert status["running"]
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.dashboard, 5, "the dashboard")
        await wait_for(pilot, lambda: "traffic on" in panel_text(app, "header"), 5, "the header")
        await pilot.press("v")  # the last results again
        await wait_for(pilot, lambda: isinstance(app.screen, BenchScreen), 5, "the results")
        assert app.screen.job is job


async def test_space_marks_and_B_compares_with_results_chart_and_export(bench_env, monkeypatch):
    exports = bench_env.tmp / "cwd"
    exports.mkdir()
    monkeypatch.chdir(exports)
    app = SpectuiApp(HostTarget.demo(str(bench_env.state)), library=load_profiles(), traffic=False)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await pilot.press("B")  # nothing marked
        await wait_for(pilot, lambda: notified(app, "Mark two or more profiles"), 5, "the hint")
        # mark keagle first, then kbase: kbase has no speculation, so it is the baseline
        for _ in range(4):
            await pilot.press("down")
        await pilot.press("space")
        await pilot.press("up")
        await pilot.press("space")
        assert app.bench.marked == ["keagle", "kbase"] and app.bench.compare_baseline() == "kbase"
        await pilot.pause(0.3)
        profiles = panel_text(app, "profiles")
        marked_rows = [line for line in profiles.splitlines() if "✓" in line]
        assert len(marked_rows) == 2 and any("kbase" in r for r in marked_rows)
        assert "B compares keagle, kbase (baseline)" in profiles
        # unmark and mark again: the order follows
        await pilot.press("space")
        assert app.bench.marked == ["keagle"]
        await pilot.press("space")
        await pilot.press("B")
        await pick(pilot, app, "tiny")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the confirmation")
        assert "baseline is kbase" in " ".join(app.screen.lines)
        await pilot.press("y")
        await wait_for(pilot, lambda: isinstance(app.screen, BenchScreen), 10, "the benchmark screen")
        screen = app.screen
        job = app.bench.job
        assert job.kind == "compare" and job.profiles == ("keagle", "kbase") and job.baseline == "kbase"
        seen = set()

        def stages():
            for name, step in job.steps.items():
                seen.update((name, state) for state in step.states)  # every state it went through
            return job.state in ("done", "failed", "interrupted")

        await wait_for(pilot, stages, 150, "the comparison", step=0.05)
        assert job.state == "done", job.message
        assert ("keagle", "switching") in seen and ("kbase", "measuring") in seen
        assert {s.state for s in job.steps.values()} == {"measured"}
        comp = job.comparison
        assert comp["id"] == job.saved_id and comp["baseline"] == "kbase" and comp["state"] == "complete"
        await pilot.pause(0.3)
        text = screen.results_plain
        assert "SPEEDUP" in text and "baseline" in text and "kbase" in text and "keagle" in text
        assert "Speedup against kbase" in text and "│" in text
        speed = next(r for r in comp["profiles"] if r["name"] == "keagle")["cells"]["1"]["speedup"]
        assert f"{speed:.2f}x" in text
        # e: Markdown in the current directory, and the console says where
        await pilot.press("e")
        target = exports / f"spectui-comparison-{comp['id']}.md"
        await wait_for(pilot, lambda: target.exists() and notified(app, str(target)), 5, "the export")
        md = target.read_text()
        assert md == HistoryStore().export([comp["id"]], "md")
        table = parse_markdown_table(md)
        assert [r[0] for r in table[1:]] == ["keagle", "kbase"] and "speedup" in table[0]
        assert f"exported to {target}" in screen.results_plain
        # both runs are in the history, linked to the comparison
        runs = HistoryStore().runs()
        assert sorted(r["profile"] for r in runs) == ["kbase", "keagle"]


async def test_c_stops_a_run_on_the_host_and_keeps_what_it_measured(bench_env):
    write_preset(bench_env.tmp / "config" / "presets", "long", dataset="reasoning", input_len=24, output_len=120,
                 num_prompts=12, concurrency=1, warmup=0, repeats=1, seed=3)
    app = SpectuiApp(HostTarget.demo(str(bench_env.state)), library=load_profiles(), traffic=False)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await switch_to(pilot, app, 4, "kbase")
        await pilot.press("b")
        await pick(pilot, app, "long")
        await wait_for(pilot, lambda: isinstance(app.screen, BenchScreen), 10, "the benchmark screen")
        job = app.bench.job
        await wait_for(pilot, lambda: job.progress is not None and job.progress.done >= 1, 60, "a request done")
        await pilot.press("e")  # nothing to export while it runs
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5, "the confirmation")
        assert app.screen.title_text == "Stop the benchmark?"
        await pilot.press("y")
        await wait_for(pilot, lambda: job.state == "interrupted", 60, "the run to stop")
        assert app.busy is None and not app.bench.measuring()
        run = HistoryStore().run(int(job.saved_id))
        assert run["state"] == "interrupted" and run["profile"] == "kbase"
        assert 1 <= run["stats"]["completed"] < 12
        status = await app.link.session.client.call("bench.status", {"run_id": job.run_id})
        assert status["state"] == "interrupted"
        assert not list(bench_env.tmp.glob("cwd/*.md"))
        await wait_for(pilot, lambda: "interrupted" in app.screen.progress_plain, 5, "the screen")


async def test_a_run_outlives_a_dropped_connection_and_is_collected_after_the_reconnection(bench_env):
    import os
    import signal

    write_preset(bench_env.tmp / "config" / "presets", "long", dataset="reasoning", input_len=24, output_len=96,
                 num_prompts=8, concurrency=1, warmup=0, repeats=1, seed=3)
    app = SpectuiApp(HostTarget.demo(str(bench_env.state)), library=load_profiles(), traffic=False)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await switch_to(pilot, app, 4, "kbase")
        await pilot.press("b")
        await pick(pilot, app, "long")
        job = await wait_for(pilot, lambda: app.bench.job, 10, "the job")
        await wait_for(pilot, lambda: job.progress is not None and job.progress.done >= 1, 60, "a request done")
        agent = app.link.session.hello["pid"]
        os.kill(agent, signal.SIGKILL)
        await wait_for(pilot, lambda: job.message and "waiting for the reconnection" in job.message, 15, "the wait")
        await wait_for(pilot, lambda: job.state == "done", 90, "the run, collected on the new connection")
        assert app.link.session.hello["pid"] != agent
        run = HistoryStore().run(int(job.saved_id))
        assert run["state"] == "done" and len(run["records"]) == 8
        assert sorted(r["i"] for r in run["records"]) == list(range(8))  # each request once, none lost


async def test_b_on_a_server_another_console_benchmarks_shows_the_hosts_refusal(bench_env):
    app = SpectuiApp(HostTarget.demo(str(bench_env.state)), library=load_profiles(), traffic=False)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await switch_to(pilot, app, 4, "kbase")
        other = await open_session(HostTarget.demo(str(bench_env.state)))  # another console on the host
        try:
            busy = await start_run(other, Preset(name="elsewhere", dataset="random", input_len=8, output_len=1000,
                                                 num_prompts=20, concurrency=(1,), warmup=0), server="kbase")
            await pilot.press("b")
            await pick(pilot, app, "tiny")
            job = await wait_for(pilot, lambda: app.bench.job, 10, "the job")
            await wait_for(pilot, lambda: job.state == "failed", 30, "the refusal")
            assert job.message.startswith(f"Server kbase is already being benchmarked by run {busy.run_id} "
                                          f"(preset elsewhere, started ")
            assert job.message.endswith("or pass --allow-overlap to measure both at once.")
            assert any(n.title == "Benchmark refused" and n.severity == "warning" and n.message == job.message
                       for n in app.notification_log)
            assert isinstance(app.screen, BenchScreen) and job.message in app.screen.progress_plain
            assert app.busy is None and not app.bench.measuring() and HistoryStore().runs() == []
            assert (await busy.cancel()).state == "interrupted"
        finally:
            await other.close()
