"""The log hides spectui's own polls: uvicorn's access lines for the paths the agent polls (``/metrics``,
``/server_info``, the health check's) are left out of the log screen and the dashboard's log tail, counted, and
``p`` on the log screen shows them; a user's own requests always show."""

from __future__ import annotations

from spectui.agent.protocol import POLLED_PATHS
from spectui.agent.servers import watch
from spectui.core.console.logs import LogBuffer, is_poll_line
from spectui.ui.screens.logs import LogScreen
from tests.ui.fixed_host import log_lines
from tests.ui.support import panel_text, wait_for
from tests.ui.test_selection_by_name import console_maker

SIZE = (140, 44)
SERVING = "kimi-eagle3"
USER_LINES = ['[2026-11-30 04:13:20] INFO:     10.1.2.3:40112 - "GET /v1/models HTTP/1.1" 200 OK',
              '[2026-11-30 04:13:21] INFO:     10.1.2.3:40113 - "GET /generate?text=hi HTTP/1.1" 200 OK',
              '[2026-11-30 04:13:22] INFO:     10.1.2.3:40114 - "GET /metrics_of_mine HTTP/1.1" 404 Not Found']


def poll(i: int, path: str, method: str = "GET") -> str:
    """An access line as uvicorn writes it for a request of the agent (uvicorn/config.py's access format)."""
    return f'[2026-11-30 04:12:{i % 60:02d}] INFO:     127.0.0.1:{53000 + i} - "{method} {path} HTTP/1.1" 200 OK'


def log_with_polls(name: str) -> tuple[list[str], int]:
    """SGLang's log of a serving server with the agent's polls between its lines, a user's GETs at the end; and
    how many poll lines it holds."""
    out, polls = [], 0
    for i, line in enumerate(log_lines(name, True)):
        out.append(line)
        out.append(poll(i, "/metrics"))
        polls += 1
        if i % 2:
            out.append(poll(i, "/server_info" if i % 4 == 1 else "/get_server_info"))
            polls += 1
    out += USER_LINES
    return out, polls


def fixed_console_with_polls(tmp_path, monkeypatch):
    """The console of a fixed host serving ``kimi-eagle3``, whose log holds the agent's polls; and the count."""
    lines, polls = log_with_polls(SERVING)
    app, (host,) = console_maker(tmp_path, monkeypatch)(serving=SERVING)

    def logs(client, params):
        if params.get("offset") is not None:
            return {"lines": [], "offset": params["offset"], "reset": False}
        return {"lines": lines, "offset": 8192, "reset": False}

    host.answers["server.logs"] = logs
    return app, lines, polls


async def open_log_screen(pilot, app, n: int) -> LogScreen:
    await wait_for(pilot, lambda: app.link is not None and app.link.connected and app.screen is app.dashboard
                   and app.refreshes and "accept len" in panel_text(app, "logtail"), 30, "the log tail")
    await pilot.press("l")
    await wait_for(pilot, lambda: isinstance(app.screen, LogScreen) and app.screen.buffer.lines
                   and len(app.screen.buffer.lines) == n, 10, "the log screen")
    await pilot.pause(0.1)
    return app.screen


def status(screen) -> str:
    return str(screen.query_one("#logs-status").render())


def test_only_the_agents_polled_paths_are_poll_lines():
    # every path the agent's health check asks is in the one list
    assert set(watch.HEALTH_PATHS) | set(watch.FOLLOWER_HEALTH_PATHS) <= set(POLLED_PATHS)
    for path in POLLED_PATHS:
        assert is_poll_line(poll(1, path)), path
        assert is_poll_line(poll(1, path).split("] ", 1)[1])          # without the timestamp
        assert is_poll_line(poll(1, path + "?name=x"))                  # with a query string
        assert is_poll_line(poll(1, path, "HEAD"))
        assert not is_poll_line(poll(1, path, "POST"))
    for line in USER_LINES + log_lines("x", True, 9):
        assert not is_poll_line(line), line
    assert not is_poll_line("[2026] TP0] a note mentioning GET /metrics in passing")


def test_the_buffer_counts_its_poll_lines_as_lines_leave_it():
    buf = LogBuffer("x", max_lines=4)
    buf.feed({"lines": [poll(1, "/metrics"), "a", poll(2, "/health"), "b"], "offset": 1})
    assert buf.poll_lines == 2 and buf.shown(False) == ["a", "b"] and buf.shown(True) == list(buf.lines)
    buf.feed({"lines": ["c", "d"], "offset": 2})  # the two oldest leave: one poll, one line
    assert buf.poll_lines == 1 and buf.shown(False) == ["b", "c", "d"]
    buf.feed({"lines": ["e"], "offset": 0, "reset": True})
    assert buf.poll_lines == 0 and buf.shown(False) == ["e"]


async def test_the_log_screen_hides_the_polls_counts_them_and_p_shows_them(tmp_path, monkeypatch):
    app, lines, polls = fixed_console_with_polls(tmp_path, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_log_screen(pilot, app, len(lines))
        view = screen.view
        assert not any(is_poll_line(line) for line in view.lines)
        assert len(view.lines) == len(lines) - polls
        for user in USER_LINES:  # a user's own GETs stay
            assert user in view.lines
        assert f"{polls} poll lines hidden (p to show)" in status(screen)
        await pilot.press("p")
        await wait_for(pilot, lambda: len(view.lines) == len(lines), 5, "the polls shown")
        assert view.lines == lines
        assert f"{polls} poll lines shown (p to hide)" in status(screen)
        await pilot.press("p")
        await wait_for(pilot, lambda: len(view.lines) == len(lines) - polls, 5, "the polls hidden again")


async def test_the_dashboards_log_tail_hides_the_polls(tmp_path, monkeypatch):
    app, lines, polls = fixed_console_with_polls(tmp_path, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.link is not None and app.link.connected and app.refreshes
                       and USER_LINES[-1] in panel_text(app, "logtail"), 30, "the log tail")
        tail = app.dashboard.query_one("#logtail")
        await wait_for(pilot, lambda: "poll lines hidden" in str(tail.border_title), 5, "the count in the title")
        text = panel_text(app, "logtail")
        assert "accept len" in text and "GET /metrics HTTP" not in text and "server_info HTTP" not in text, text
        assert f"{polls} poll lines hidden" in str(tail.border_title)
