"""Every notification of the session in full (``n``), newest first, and the settings file's problems, each whole:
a toast that covers part of a screen, or goes before it is read, or says "(and N more)", is never the only place
its words are. Long sentences wrap to the screen's width; the page scrolls.

:class:`NotificationLog` is the App's part: it keeps each notification as Textual raises it (its ``Notify``
message), so nothing that notifies needs to know of the log."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.notifications import Notify
from textual.screen import Screen
from textual.widgets import Footer, Static

from spectui.ui import keys

KEPT = 500  # the newest notifications kept; the count of older ones is said


@dataclass(frozen=True)
class Kept:
    at: float
    severity: str
    title: str
    message: str


class NotificationLog:
    """The App's notifications, newest last (at most :data:`KEPT`), and ``n``'s screen."""

    notifications_dropped = 0

    @property
    def notification_log(self) -> list[Kept]:
        try:
            return self._notification_log
        except AttributeError:
            self._notification_log: list[Kept] = []
            return self._notification_log

    def on_notify(self, event: Notify) -> None:
        n = event.notification
        log = self.notification_log
        log.append(Kept(n.raised_at, str(n.severity), n.title or "", n.message))
        if len(log) > KEPT:
            del log[0]
            self.notifications_dropped += 1
        if isinstance(self.screen_stack[-1] if self.screen_stack else None, NotificationsScreen):
            self.screen_stack[-1].sync()  # a notification raised while the screen is open joins it

    def action_notifications(self) -> None:
        if isinstance(self.screen, NotificationsScreen):
            self.screen.dismiss()
            return
        self.push_screen(NotificationsScreen())


def notification_lines(log: list[Kept], problems: list[str], dropped: int = 0) -> list[str]:
    """What the screen says, one paragraph a line: the settings problems in full, then every notification."""
    out = []
    if problems:
        out += [f"Settings problems: {len(problems)} (the other settings apply)"]
        out += [f"  {i}. {p}" for i, p in enumerate(problems, 1)]
        out.append("")
    out.append(f"Notifications: {len(log)}, newest first" if log else "Notifications: none yet")
    for k in reversed(log):
        head = f"{time.strftime('%H:%M:%S', time.localtime(k.at))}  {k.severity:<11}"
        out.append(f"  {head} {k.title + ': ' if k.title else ''}{k.message}")
    if dropped:
        out.append(f"  ({dropped} older ones are no longer kept)")
    return out


class WrappedLines(VerticalScroll):
    """Lines of plain text that wrap to the width (a continuation keeps its line's indent) and scroll."""

    DEFAULT_CSS = "WrappedLines { height: 1fr; } WrappedLines > Static { width: 1fr; }"

    def compose(self) -> ComposeResult:
        yield Static("", markup=False)

    def set_lines(self, lines: list[str]) -> None:
        text = Text()
        for i, line in enumerate(lines):
            if i:
                text.append("\n")
            text.append(line)
        self.query_one(Static).update(text)

    @property
    def text(self) -> str:
        return str(self.query_one(Static).content)


class NotificationsScreen(Screen):
    BINDINGS = keys.NOTIFICATIONS
    DEFAULT_CSS = "#notifications-title { height: auto; padding: 0 1; } WrappedLines { padding: 0 1; }"

    def __init__(self) -> None:
        super().__init__(id="notifications")

    def compose(self) -> ComposeResult:
        yield Static("Notifications of this session, in full (the settings file's problems first)",
                     id="notifications-title", classes="dialog-title", markup=False)
        yield WrappedLines(id="notifications-lines")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(WrappedLines).focus()
        self.sync()

    def lines(self) -> list[str]:
        app = self.app
        settings = getattr(app, "user_settings", None)
        return notification_lines(list(getattr(app, "notification_log", [])),
                                  list(getattr(settings, "problems", []) or []),
                                  getattr(app, "notifications_dropped", 0))

    def sync(self) -> None:
        self.query_one(WrappedLines).set_lines(self.lines())

    def action_close(self) -> None:
        self.dismiss()
