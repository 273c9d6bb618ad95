"""Server logs: the dashboard's log tail and the log screen (``l``). The shown host's console reads the log shown
(:meth:`~spectui.core.console.HostConsole.follow_log`) and tells each read that changed it (``LogRead``)."""

from __future__ import annotations

from textual.app import ScreenStackError
from textual.css.query import NoMatches

from spectui.core.console.logs import LogBuffer
from spectui.ui.controllers.base import Controller
from spectui.ui.dashboard_views import showing


class LogsController(Controller):
    @property
    def buffers(self) -> dict[str, LogBuffer]:
        """The shown host's server logs, by server."""
        return self.console.logs.buffers

    def buffer(self, name: str) -> LogBuffer:
        return self.console.logs.buffer(name)

    def open(self) -> None:
        app = self.app
        name = app.focus() if self.link else None
        if name is None or self.link is None or name not in self.link.servers:
            self.notify("No server log to show yet: switch to a profile first.", severity="warning")
            return
        from spectui.ui.screens.logs import LogScreen
        app.push_screen(LogScreen(self.buffer(name)))
        self.console.follow_log(name)

    def _target(self) -> str | None:
        app = self.app
        try:
            screen = app.screen
        except ScreenStackError:  # the app is closing: a timer may still fire
            return None
        if showing(screen, "logs", "LogScreen"):
            return screen.buffer.name
        try:
            tail_shown = app.dashboard_visible() and app.dashboard.query_one("#bottom").display \
                and not app.dashboard.has_class("compact")
        except NoMatches:  # the dashboard is being taken down (the console is closing)
            return None
        return app.focus() if tail_shown else None

    def follow(self) -> None:
        """The shown host's console reads the log shown now (the log screen's, or the dashboard's tail), if any."""
        if self.app.is_running:
            self.console.follow_log(self._target())

    def read(self, name: str) -> None:
        """A read changed ``name``'s log: the log screen showing it shows its lines."""
        for screen in self.app.screen_stack:
            if showing(screen, "logs", "LogScreen") and screen.buffer.name == name:
                screen.buffer = self.console.logs.buffers.get(name, screen.buffer)  # a replay sought back: anew
                screen.sync()

    def host_changed(self) -> None:
        for console in self.app.hosts:
            if console is not self.console:
                console.follow_log(None)

    def stop(self) -> None:
        for console in self.app.hosts:
            console.follow_log(None)
