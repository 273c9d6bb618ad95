"""The alert list (``!``): the alerts firing now on every host, each with the figures of the last evaluation and
since when, then every change newest first: what an alert said when it fired, and when and why it ended, with the
range of its figures (:mod:`spectui.ui.controllers.alerts`)."""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Static

from spectui.core.textsafe import one_line
from spectui.ui import keys
from spectui.ui.draw import duration
from spectui.ui.screens.notifications import WrappedLines

REFRESH_S = 1.0


def clock(t: float | None) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t)) if isinstance(t, (int, float)) else "--:--:--"


def _lasted(alert: dict, until: float | None) -> str:
    since = alert.get("since")
    if not isinstance(since, (int, float)) or not isinstance(until, (int, float)):
        return ""
    return f" (for {duration(max(0.0, until - since))})"


def _range(alert: dict) -> str:
    low, high = alert.get("low"), alert.get("high")
    if not isinstance(low, (int, float)) or not isinstance(high, (int, float)) or low == high:
        return ""
    return f"; from {low:.2f} to {high:.2f} while it fired"


def alert_lines(active: list[dict], history: list[dict], text=lambda a: str(a.get("message", "")),
                now: float | None = None) -> list[str]:
    """What the screen shows, line by line: each alert firing now with the figures of the last evaluation and
    since when; then every change, newest first: what a fired alert said then, and when and why one ended."""
    now = time.time() if now is None else now
    lines = [f"Firing now: {len(active)}" if active else "Firing now: none"]
    for a in active:
        lines.append(f"  since {clock(a.get('since'))}{_lasted(a, now)}  {one_line(str(a.get('rule')))}  {one_line(text(a))}")
    lines += ["", f"Changes: {len(history)}" if history else "Changes: none yet"]
    for c in reversed(history):
        if c.get("kind") == "fired":
            said = c.get("first_message") or c.get("message", "")
            lines.append(f"  {clock(c.get('at'))}  fired    {one_line(str(c.get('rule')))}  {one_line(text({**c, 'message': said}))}")
        else:
            lines.append(f"  {clock(c.get('at'))}  ended    {one_line(str(c.get('rule')))}  {one_line(text(c))}")
            lines.append(f"            {one_line(str(c.get('reason') or 'its condition ended'))}; it fired at "
                         f"{clock(c.get('fired_at'))}{_lasted(c, c.get('ended_at') or c.get('at'))}{_range(c)}")
    return lines


class AlertsScreen(Screen):
    BINDINGS = keys.ALERTS
    DEFAULT_CSS = """
    #alerts-title { height: auto; padding: 0 1; }
    #alerts-lines { height: 1fr; padding: 0 1; }
    """

    def __init__(self) -> None:
        super().__init__(id="alerts")
        self._shown: list[str] | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="alerts-title", classes="dialog-title", markup=False)
        yield WrappedLines(id="alerts-lines")  # a long sentence wraps: never cut at the screen's edge
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(WrappedLines).focus()
        self.sync()
        self.set_interval(REFRESH_S, self.sync)

    def lines(self) -> list[str]:
        alerts = self.app.alerts
        return alert_lines(alerts.active(), alerts.history(), alerts.text)

    def sync(self) -> None:
        if not self.is_mounted:
            return
        config = self.app.alerts.config
        outputs = [name for name, on in (("bell", config.bell), ("desktop", config.desktop),
                                         ("webhook", bool(config.webhook))) if on]
        self.query_one("#alerts-title", Static).update(
            "Alerts: speculation below break-even, acceptance collapsing, servers down, GPU memory full, throughput "
            f"collapsing · also to: {', '.join(outputs) if outputs else 'the console only'} "
            "(the settings file's alerts: section)")
        lines = self.lines()
        if lines != self._shown:
            self._shown = lines
            self.query_one(WrappedLines).set_lines(lines)

    def action_close(self) -> None:
        self.dismiss()
