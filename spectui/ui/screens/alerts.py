"""The alert list (``!``): the alerts firing now, then every change (fired, cleared) newest first, with the
time and the sentence each said (:mod:`spectui.ui.controllers.alerts`)."""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Log, Static

from spectui.core.textsafe import one_line
from spectui.ui import keys

REFRESH_S = 1.0


def clock(t: float | None) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t)) if isinstance(t, (int, float)) else "--:--:--"


def alert_lines(active: list[dict], history: list[dict]) -> list[str]:
    """What the screen shows, line by line."""
    lines = [f"Firing now: {len(active)}" if active else "Firing now: none"]
    for a in active:
        lines.append(f"  since {clock(a.get('since'))}  {a.get('rule')}  {one_line(str(a.get('message', '')))}")
    lines += ["", f"Changes: {len(history)}" if history else "Changes: none yet"]
    for c in reversed(history):
        lines.append(f"  {clock(c.get('at'))}  {c.get('kind', '?'):<7}  {c.get('rule')}  "
                     f"{one_line(str(c.get('message', '')))}")
    return lines


class AlertsScreen(Screen):
    BINDINGS = keys.ALERTS
    DEFAULT_CSS = """
    #alerts-title { height: auto; padding: 0 1; }
    #alerts-lines { height: 1fr; }
    """

    def __init__(self) -> None:
        super().__init__(id="alerts")
        self._shown: list[str] | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="alerts-title", classes="dialog-title", markup=False)
        yield Log(id="alerts-lines")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Log).focus()
        self.sync()
        self.set_interval(REFRESH_S, self.sync)

    def lines(self) -> list[str]:
        alerts = self.app.alerts
        return alert_lines(alerts.active(), alerts.history())

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
            log = self.query_one(Log)
            log.clear()
            log.write_lines(lines)

    def action_close(self) -> None:
        self.dismiss()
