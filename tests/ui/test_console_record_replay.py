"""Record a demo session in the console (--record, ctrl+r) and replay it (spectui replay): the replay shows
what the console received, frame for frame, in the same panels and screens, with play, pause, seek and speed,
and acts on nothing."""

from __future__ import annotations

import asyncio
import dataclasses
import time

from spectui.core.recording import read_recording
from spectui.core.replay import ReplayLink
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.logs import LogScreen
from tests.ui.support import connected, panel_text, server_state, wait_for
from tests.ui.test_console_pilot import SIZE, make_app, names


def bare(frame):
    return dataclasses.replace(frame, received_at=0.0)


async def test_a_recorded_session_replays_in_the_console_read_only(ui_env):
    path = ui_env.tmp / "session.spectui.gz"
    app = make_app(ui_env, record=str(path))
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await wait_for(pilot, lambda: "● REC" in panel_text(app, "header"), 5, "the REC mark")
        await pilot.press(str(names(app).index("beta") + 1))
        await wait_for(pilot, lambda: server_state(app, "beta") == "ready" and app.busy is None, 60, "beta ready")
        await app.link.session.client.call("traffic.start", {"concurrency": 2, "seed": 4})
        await wait_for(pilot, lambda: (s := app.link.series.get("beta")) is not None and s.latest is not None
                       and s.latest.accept_length.value is not None, 60, "an accept length")
        await wait_for(pilot, lambda: "fired up" in "\n".join(app.host.logs.tail("beta").tail(40)), 20, "the log tail")
        await pilot.pause(1.5)
        await app.link.session.client.call("traffic.stop")
        link = app.link
        close = link.close
        late = []

        async def close_after_a_frame():  # a frame that arrives while the console quits is recorded as well
            before = link.gpu
            deadline = time.monotonic() + 10
            while link.gpu is before and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            late.append(link.gpu is not before)
            await close()

        link.close = close_after_a_frame
        app.quit_console()
        await wait_for(pilot, lambda: late and app.exit_note is not None and "recorded to" in app.exit_note, 60,
                       "quitting")
    assert late == [True]  # a GPU frame came in after the servers were stopped, before the link closed
    live_last = bare(app.link.series["beta"].latest)
    live_gpu = bare(app.link.gpu)
    assert f"`spectui replay {path}` plays it" in app.exit_note

    rec = read_recording(path)
    assert not rec.truncated
    assert {p["name"] for p in rec.header["profiles"]} == {"alpha", "beta", "broken"}
    replay = ReplayLink(rec, speed=60)
    app2 = SpectuiApp(replay.target, replay=replay)
    async with app2.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app2.screen is app2.dashboard, 20, "the replay's dashboard")
        assert names(app2) == ["alpha", "beta", "broken"]  # the recorded console's profiles
        # the header is drawn at the dashboard's first redraw, a moment after it is shown
        await wait_for(pilot, lambda: "replay of demo" in panel_text(app2, "header"), 10, "the replay's header")
        await wait_for(pilot, lambda: replay.at_end, 60, "the end of the recording")
        await pilot.pause(0.5)
        assert bare(app2.link.series["beta"].latest) == live_last  # the last frame, as it was received live
        assert bare(app2.link.gpu) == live_gpu  # the last GPU frame too, received while the console quit
        banner = panel_text(app2, "banner")
        assert "■ end 60x" in banner and "━" * 20 in banner
        # the panels follow the recorded server, as live
        await pilot.press(*["down"] * (names(app2).index("beta")))
        spec = panel_text(app2, "spec")
        assert f"{live_last.accept_length.value:.2f}" in spec, spec
        # pause, seek back, speed: the play head moves only while playing
        await pilot.press("space")
        await pilot.press("home")
        assert replay.paused and replay.position_s == 0.0 and "Ⅱ paused" in panel_text(app2, "banner")
        await pilot.press("right", "right")
        assert replay.position_s == 20.0 or replay.at_end
        await pilot.pause(0.6)
        assert replay.position_s == 20.0 or replay.at_end  # paused: it stays
        await pilot.press("left_square_bracket")
        assert replay.speed == 30
        await pilot.press("space")
        await wait_for(pilot, lambda: replay.at_end, 30, "the end again")
        # read-only: the switch key is not offered and starts nothing; the log screen shows the recorded log
        before = dict(replay.servers)
        await pilot.press("s", "x", "b")
        await pilot.pause(0.5)
        assert replay.servers == before and app2.busy is None
        offered = {b.binding.action for b in app2.screen.active_bindings.values() if b.enabled and b.binding.show}
        assert "replay_pause" in offered and "switch" not in offered and "bench" not in offered
        await pilot.press("l")
        screen = await wait_for(pilot, lambda: isinstance(app2.screen, LogScreen) and app2.screen, 10, "the log")
        await wait_for(pilot, lambda: any("fired up" in ln for ln in screen.view.lines), 10, "the recorded log")
        await pilot.press("escape")
        app2.quit_console()
    assert app2.exit_note is None  # a replay stops nothing and records nothing


async def test_ctrl_r_starts_and_stops_a_recording_in_the_recordings_folder(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        assert "REC" not in panel_text(app, "header")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: "● REC 0:0" in panel_text(app, "header"), 5, "the REC mark")
        path = app.recording.writer.path
        assert path.parent == ui_env.tmp / "data" / "recordings" and path.name.startswith("demo")
        await pilot.pause(1.5)
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: "REC" not in panel_text(app, "header"), 5, "the REC mark to go")
    rec = read_recording(path)
    kinds = {ev for _, ev, _ in rec.events}
    assert rec.events[0][1] == "session" and "gpu" in kinds   # starts with the session as it was
    assert not rec.truncated


async def test_the_demo_scenario_reaches_the_host_traffic(ui_env):
    app = make_app(ui_env, traffic=True, traffic_scenario={"scenario": "shift", "shift_after_s": 30.0})
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await wait_for(pilot, lambda: app.traffic.on, 10, "the demo traffic")
        status = await app.link.session.client.call("traffic.status")
        assert status["scenario"] == "shift" and status["phase"] == "recurring"
        await pilot.press("c")  # more streams: the same scenario
        await wait_for(pilot, lambda: app.traffic.concurrency == 4 and app.traffic.on, 10, "4 streams")
        await pilot.pause(0.5)
        status = await app.link.session.client.call("traffic.status")
        assert status["scenario"] == "shift" and status["concurrency"] == 4


async def test_a_recorded_benchmark_shows_in_the_replay_as_it_ran_and_ended(ui_env):
    from spectui.ui.screens.bench import BenchScreen
    from tests.ui.test_console_bench import pick, switch_to
    from tests.ui.support import write_kimi_profile, write_preset

    write_kimi_profile(ui_env.profiles, "keagle", speculative="EAGLE3")
    write_preset(ui_env.tmp / "config" / "presets", "tiny", dataset="reasoning", input_len=24, output_len=16,
                 num_prompts=3, concurrency=1, warmup=0, repeats=1, seed=3)
    path = ui_env.tmp / "bench.spectui.gz"
    app = make_app(ui_env, record=str(path))
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await switch_to(pilot, app, names(app).index("keagle") + 1, "keagle")
        await pilot.press("b")
        await pick(pilot, app, "tiny")
        await wait_for(pilot, lambda: app.bench.job is not None and app.bench.job.state == "done", 90, "the run")
        await pilot.pause(0.5)
        live_results = app.screen.results_plain
        live_id = app.bench.job.saved_id
        app.quit_console()
        await wait_for(pilot, lambda: app.exit_note is not None and "recorded to" in app.exit_note, 60, "quitting")
    assert f"Saved in the history as run {live_id}" in live_results

    replay = ReplayLink(read_recording(path))   # at 1x: the run is on screen as long as it was live
    app2 = SpectuiApp(replay.target, replay=replay)
    async with app2.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app2.screen is app2.dashboard, 20, "the replay's dashboard")
        # while it ran: the banner says so, as it did live
        await wait_for(pilot, lambda: "benchmarking keagle with tiny" in panel_text(app2, "banner"), 60,
                       "the benchmark in the banner")
        await pilot.press("space")  # pause there: the results screen shows the run in flight
        await pilot.press("v")
        screen = await wait_for(pilot, lambda: isinstance(app2.screen, BenchScreen) and app2.screen, 10, "results")
        assert screen.job.active and " on keagle: " in screen.progress_plain
        offered = {b.binding.action for b in screen.active_bindings.values() if b.enabled}
        assert "cancel_bench" not in offered and "tune" not in offered   # a replay stops and starts nothing
        await pilot.press("end")
        await wait_for(pilot, lambda: screen.job is not None and screen.job.state == "done", 10, "the end")
        await pilot.pause(0.5)
        assert screen.results_plain == live_results   # the results as they were shown live
        await pilot.press("escape")
        app2.quit_console()
