"""The dashboard redraws when the console tells it something changed, coalesced to its refresh rate, and only what
changed; a quiet console builds nothing at all."""
import time

from spectui.core.link_events import FrameReceived
from spectui.ui.app import FRAME_SHOWS
from tests.ui.support import connected, panel_text, wait_for
from tests.ui.test_console_pilot import SIZE, make_app


def count_builds(monkeypatch, app) -> list:
    built = []
    original = app.build_views

    def build(panels=frozenset(app.dashboard.panels())):
        built.append(set(panels))
        return original(panels)
    monkeypatch.setattr(app, "build_views", build)
    return built


async def quiet(pilot, app, monkeypatch) -> None:
    """Connected, no telemetry, nothing on the dashboard that ages, and no redraw pending. A mark may stay: the
    header's round trip moves with every ping and is marked for the next redraw without asking for one
    (``SpectuiApp.mark``), so a quiet console can hold it as long as nothing else is drawn."""
    await connected(pilot, app)
    monkeypatch.setattr(app.link, "reply_age_s", lambda: 0.5)  # the host answers its pings in time
    last = []

    def still() -> bool:
        gpu = app.link.gpu
        last[:] = [sorted(app.ageing()), app._redraw_timer is not None, sorted(app._dirty), app.link.state,
                   app.activity_text(), app.focus(), None if gpu is None else round(time.time() - gpu.received_at, 1)]
        return not last[0] and not last[1]
    try:
        await wait_for(pilot, still, 60, "nothing left that ages")  # a reconnection on a starved machine ages a while
    except AssertionError as e:
        raise AssertionError(f"{e}: still ageing {last}") from None


async def test_a_quiet_console_builds_nothing_and_a_key_still_redraws_at_once(ui_env, monkeypatch):
    app = make_app(ui_env, telemetry_hz=0)  # no telemetry: nothing arrives by itself
    async with app.run_test(size=SIZE) as pilot:
        await quiet(pilot, app, monkeypatch)
        built, refreshes = count_builds(monkeypatch, app), app.refreshes
        await pilot.pause(2.5)  # two clock ticks and ten refresh periods
        assert built == [] and app.refreshes == refreshes
        selected = app.selected
        await pilot.press("j")
        assert app.selected != selected and built and app.refreshes == refreshes + 1
        assert f"test profile {app.selected}" in panel_text(app, "profiles")  # drawn, not waiting for a timer


async def test_a_burst_of_frames_is_drawn_once_per_refresh_and_only_the_panels_they_change(ui_env, monkeypatch):
    app = make_app(ui_env, telemetry_hz=0)
    async with app.run_test(size=SIZE) as pilot:
        await quiet(pilot, app, monkeypatch)
        built = count_builds(monkeypatch, app)
        refreshes, t0 = app.refreshes, time.perf_counter()
        for _ in range(50):
            app.host._hear(FrameReceived("gpu", None, app.link.gpu))
        await wait_for(pilot, lambda: app.refreshes > refreshes, 10, "the redraw")
        elapsed = time.perf_counter() - t0
        assert app.refreshes - refreshes <= elapsed * app.refresh_hz + 2  # not fifty
        assert built == [set(FRAME_SHOWS["gpu"])]  # what a GPU frame changes, once
