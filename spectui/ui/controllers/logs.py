"""Server logs: the dashboard's log tail and the log screen (``l``), read from the host once a second."""

from __future__ import annotations

from textual.app import ScreenStackError
from textual.css.query import NoMatches

from spectui.core.errors import AgentCallError, Disconnected, SpectuiError
from spectui.ui import snapshots
from spectui.ui.controllers.base import Controller, worker
from spectui.ui.logbuffer import LogBuffer
from spectui.ui.screens.logs import LogScreen

LOG_POLL_S = 1.0
FIRST_LINES = 2000  # what the first read of a log takes from its end


class LogsController(Controller):
    def __init__(self, app) -> None:
        super().__init__(app)
        self.buffers: dict[str, LogBuffer] = {}
        self._polling = False
        self._replayed: dict[str, int] = {}   # a replay: how many of each log's recorded reads were fed
        self._generation = None

    def host_changed(self) -> None:
        self.buffers = {}

    def buffer(self, name: str) -> LogBuffer:
        return self.buffers.setdefault(name, LogBuffer(name))

    def tail(self, name: str | None) -> LogBuffer | None:
        return self.buffers.get(name) if name else None

    def open(self) -> None:
        app = self.app
        name = app.focus() if self.link else None
        if name is None or self.link is None or name not in self.link.servers:
            self.notify("No server log to show yet: switch to a profile first.", severity="warning")
            return
        app.push_screen(LogScreen(self.buffer(name)))
        self.poll()

    def _target(self) -> str | None:
        app = self.app
        try:
            screen = app.screen
        except ScreenStackError:  # the app is closing: a timer may still fire
            return None
        if isinstance(screen, LogScreen):
            return screen.buffer.name
        try:
            tail_shown = app.dashboard_visible() and app.dashboard.query_one("#bottom").display \
                and not app.dashboard.has_class("compact")
        except NoMatches:  # the dashboard is being taken down (the console is closing)
            return None
        return app.focus() if tail_shown else None

    def poll(self) -> None:
        """The shown log's new lines (a timer, each LOG_POLL_S): one read at a time."""
        link = self.link
        if link is None or not link.connected or self._polling:
            return
        name = self._target()
        if name is None or name not in link.servers or snapshots.unreadable_log(link.servers[name]):
            return
        if getattr(link, "read_only", False):
            self._from_replay(link)
            return
        self._polling = True
        self._fetch(name)

    def _from_replay(self, link) -> None:
        """A replay: every log's reads recorded up to the play head, fed as they were received."""
        if link.generation != self._generation:   # sought backwards: start the logs again
            self._generation = link.generation
            self._replayed = {}
            for name, buf in self.buffers.items():
                self.buffers[name] = LogBuffer(name)
                for screen in self.app.screen_stack:
                    if isinstance(screen, LogScreen) and screen.buffer is buf:
                        screen.buffer = self.buffers[name]
        for name, replies in link.logs.items():
            done = self._replayed.get(name, 0)
            if done < len(replies):
                buf = self.buffer(name)
                for reply in replies[done:]:
                    buf.feed(reply)
                self._replayed[name] = len(replies)
                self.app.changed()

    @worker(group="logs")
    async def _fetch(self, name: str) -> None:
        buf = self.buffer(name)
        first = buf.offset is None
        try:
            if first:
                reply = await self.link.control().logs(name, lines=FIRST_LINES)
            else:
                reply = await self.link.control().logs(name, offset=buf.offset)
            recorder = getattr(self.link, "recorder", None)
            if recorder is not None:  # a replay shows the log as it was read here
                recorder.write("log", {"name": name, "reply": reply})
            if buf.feed(reply) or first:
                self.app.changed()
        except AgentCallError as exc:
            if buf.error != str(exc):
                buf.error = str(exc) if exc.code != "no_log" else "no log yet"
                self.app.changed()
        except (Disconnected, SpectuiError):
            pass
        finally:
            self._polling = False
