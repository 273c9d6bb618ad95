"""The debug log screen (D): the console's and the host agent's records, the level filter, the file's path."""

from __future__ import annotations

import logging

import pytest

from spectui.core import logsetup
from spectui.ui import keys
from spectui.ui.screens.debuglog import DebugLogScreen
from tests.ui.support import connected, wait_for
from tests.ui.test_console_pilot import SIZE, make_app


@pytest.fixture
def debug_logging(tmp_path):
    config = logsetup.configure(debug=True, log_file_path=tmp_path / "console.log")
    yield config
    logsetup.reset()


def shown(screen: DebugLogScreen) -> str:
    return "\n".join(str(line) for line in screen.query_one("#debug-log-lines").lines)


async def test_the_debug_log_screen_shows_console_and_agent_records(ui_env, debug_logging):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await pilot.press("D")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, DebugLogScreen) and app.screen, 5,
                                "the debug log screen")
        title = await wait_for(pilot, lambda: (t := str(screen.query_one("#debug-log-title").render())) and t, 5,
                               "the title")
        assert str(debug_logging.path) in title and "attach it to a report" in title
        text = await wait_for(pilot, lambda: "agent started" in shown(screen) and shown(screen), 10, "the agent's record")
        assert "INFO    spectui.host.main: [demo (simulated host)] agent started" in text
        assert "spectui.core.session: connecting to demo" in text  # the console's own
        # a record logged while the screen is open appears on it
        logging.getLogger("spectui.test").warning("a warning \x1b[2J from the test")
        await wait_for(pilot, lambda: "a warning ␛[2J from the test" in shown(screen), 5, "the new record")
        # the level filter: l steps debug -> info -> warning; info records go, warnings stay
        await pilot.press("l", "l")
        await wait_for(pilot, lambda: "agent started" not in shown(screen), 5, "the info records to go")
        assert "a warning ␛[2J from the test" in shown(screen)
        assert "WARNING and above shown" in str(screen.query_one("#debug-log-title").render())
        await pilot.press("q")
        await wait_for(pilot, lambda: app.screen is app.dashboard, 5, "the dashboard")


def test_the_key_is_declared_once_and_offered_in_help_and_palette():
    [binding] = [b for b in keys.DASHBOARD if b.action == "debug_log"]
    assert binding.key == "D" and binding.id == "dashboard.debug_log"
    assert "debug_log" in keys.PALETTE_ACTIONS
    assert ("Debug log screen", keys.DEBUG_LOG) in keys.HELP_GROUPS
