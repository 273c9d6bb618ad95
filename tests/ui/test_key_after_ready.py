"""A key pressed the moment a switch's server shows ready: the row says ready before the host's answer to the switch
arrives (its state comes with the link's events, the answer after them), and the action seat is held until the
answer. A digit pressed in that gap waits for the answer and goes on; it is not refused with "Wait: switching to
...", which would contradict the row the operator just read."""

from __future__ import annotations

import asyncio

from spectui.ui.screens.confirm import ConfirmScreen
from tests.ui.support import connected, notified, wait_for
from tests.ui.test_console_pilot import SIZE, make_app, switch_and_wait


async def test_a_digit_pressed_while_the_switch_answer_is_in_flight_goes_on_once_it_arrives(ui_env):
    """However late the answer comes within the wait: a loaded host answers seconds after its server's row reads
    ready (a CI machine took over 5 s). Meanwhile the banner says what the key waits for."""
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await switch_and_wait(pilot, app, "1", "alpha")
        assert app.link.switch.target == "alpha" and app.link.switch.stage == "ready"
        # the gap: alpha's row reads ready, and the switch still holds the seat until the host's answer arrives
        assert app.host.seat.take("switching to alpha", starting="alpha")
        await pilot.press("2")
        await wait_for(pilot, lambda: "beta next" in (app.activity_text() or ""), 5, "the banner's waiting line")
        assert "switch to alpha" in app.activity_text()
        await asyncio.sleep(6.5)  # longer than the 5 s the console once waited
        assert not isinstance(app.screen, ConfirmScreen)  # nothing yet: the seat is still held
        app.host.seat.release()                           # the answer arrives
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the confirmation")
        assert app.screen.title_text == "Switch to beta?"
        assert not notified(app, "Wait: switching to alpha")
        assert "beta next" not in (app.activity_text() or "")
        await pilot.press("n")


async def test_a_digit_pressed_while_a_switch_is_still_loading_is_refused_at_once(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await switch_and_wait(pilot, app, "1", "alpha")
        assert app.host.seat.take("benchmarking alpha")   # not a switch's last moment: refused, as before
        await pilot.press("2")
        await wait_for(pilot, lambda: notified(app, "Wait: benchmarking alpha"), 5, "the refusal")
        app.host.seat.release()
        await pilot.pause(1.0)
        assert not isinstance(app.screen, ConfirmScreen)


async def test_an_answer_that_never_comes_ends_in_the_refusal(ui_env, monkeypatch):
    from spectui.ui.controllers import servers
    monkeypatch.setattr(servers, "ANSWER_WAIT_S", 1.0)
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await switch_and_wait(pilot, app, "1", "alpha")
        assert app.host.seat.take("switching to alpha", starting="alpha")
        await pilot.press("2")
        await wait_for(pilot, lambda: notified(app, "Wait: switching to alpha"), 10, "the refusal after the wait")
        assert not isinstance(app.screen, ConfirmScreen)
        app.host.seat.release()
        await asyncio.sleep(0)
