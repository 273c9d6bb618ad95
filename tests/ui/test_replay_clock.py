"""A replay runs on the recording's clock: a server's uptime is its uptime at the play head (and holds still while
paused), "stopped at" and "last run at" are the times the recording says, and the end of the recording is one state
on the banner and the header alike. The recording is made here, on a clock far from today's, so any figure taken
from the wall clock shows."""

from __future__ import annotations

import time

from spectui.core.profiles import load_profiles
from spectui.core.recording import RecordingWriter, read_recording
from spectui.core.replay import ReplayLink
from spectui.ui.app import SpectuiApp
from tests.ui.fixed_host import server_frame, server_record
from tests.ui.support import panel_text, wait_for
from tests.ui.test_snapshots import SHIPPED

SIZE = (160, 50)
T0 = 1_700_000_000.0   # the recording began here: November 2023, far from the wall clock
STARTED_S = 0.5        # the server started half a second in
FRAMES = 60            # one frame a second from 2 s to 61 s
STOPPED_S = 63.0


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


def hhmmss(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


def record(path) -> None:
    profile = load_profiles([SHIPPED / "kimi-baseline.yaml"], layers=[]).get("kimi-baseline")
    clock = Clock()
    w = RecordingWriter(path, {"target": "root@gpu-box", "profiles": [profile.redacted()]}, clock=clock)
    clock.t = T0 + 1.0
    ready = server_record(profile, "ready", pid=4000, started_at=T0 + STARTED_S, ready_at=T0 + 0.9)
    w.write("session", {"facts": {"hostname": "gpu-box"}, "servers": [ready]})
    for i in range(FRAMES):
        clock.t = T0 + 2.0 + i
        w.write("server_frame", server_frame(profile.name, i + 1, clock.t, speculative=None, accept=None,
                                             tok_s=80.0))
    clock.t = T0 + STOPPED_S
    w.write("server", server_record(profile, "stopped", pid=4000, started_at=T0 + STARTED_S, ready_at=T0 + 0.9,
                                    ended_at=T0 + STOPPED_S))
    clock.t = T0 + 70.0
    w.write("note", {"text": "the end"})
    w.close()


def uptime_seen(app) -> int | None:
    view = app.dashboard.query_one("#server").view
    return None if view is None else view.uptime_s


async def test_a_paused_replay_holds_the_uptime_at_the_play_head(tmp_path):
    record(tmp_path / "r.gz")
    replay = ReplayLink(read_recording(tmp_path / "r.gz"), speed=1)
    app = SpectuiApp(replay.target, replay=replay)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.screen is app.dashboard and replay.connected, 20, "the replay's dashboard")
        await pilot.press("space")  # pause
        replay.seek(30.0)
        app.changed()
        # the panel shows the uptime at the play head once it redraws after the seek (before it, the one at 1 s)
        try:
            await wait_for(pilot, lambda: uptime_seen(app) == int(30.0 - STARTED_S), 20, "the uptime at the play head")
        except AssertionError:
            raise AssertionError((uptime_seen(app), panel_text(app, "server"))) from None
        first = uptime_seen(app)
        await pilot.pause(2.5)  # the wall clock moves on; the recording's does not
        assert uptime_seen(app) == first, panel_text(app, "server")


async def test_the_end_of_a_replay_says_when_things_happened_then_and_is_one_state(tmp_path):
    record(tmp_path / "r.gz")
    replay = ReplayLink(read_recording(tmp_path / "r.gz"), speed=60)
    app = SpectuiApp(replay.target, replay=replay)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.screen is app.dashboard and replay.phase == "end", 30, "the end of the replay")
        await pilot.pause(0.6)
        throughput = panel_text(app, "throughput")
        assert f"stopped at {hhmmss(T0 + STOPPED_S)}" in throughput, throughput
        assert f"last run at {hhmmss(T0 + 1.0 + FRAMES)}" in throughput, throughput
        await wait_for(pilot, lambda: "■ end" in panel_text(app, "banner"), 5, "the banner's end")  # at its clock
        header = panel_text(app, "header")
        assert "▶" not in header and "■ end" in header, header
        # seek back to the start, paused: the header leaves the end (playing at 60x, the replay would reach the end
        # again in about a second, which a loaded machine's redraw can miss)
        await pilot.press("space", "home")
        assert replay.phase == "paused"
        await wait_for(pilot, lambda: "■ end" not in panel_text(app, "header"), 5, "the header to leave the end")
