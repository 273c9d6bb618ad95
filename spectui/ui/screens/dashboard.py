"""The dashboard: header, profiles, GPUs, server, speculative, throughput and log tail.

Keys come from ``spectui.ui.keys.DASHBOARD``; each action asks the app, which owns the link.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Input

from spectui.ui import keys
from spectui.ui.messages import ProfileHighlighted, StopRequested, SwitchRequested
from spectui.ui.widgets.base import LinePanel
from spectui.ui.widgets.gpu import GpuPanel
from spectui.ui.widgets.header import Banner, HeaderBar
from spectui.ui.widgets.logtail import LogTail
from spectui.ui.widgets.profiles import ProfilesList
from spectui.ui.widgets.server import ServerPanel
from spectui.ui.widgets.speculative import SpecPanel
from spectui.ui.widgets.throughput import ThroughputPanel


class DashboardScreen(Screen):
    BINDINGS = keys.DASHBOARD
    AUTO_FOCUS = ""  # keys go to the dashboard; the log filter takes focus only when opened with /

    def __init__(self) -> None:
        super().__init__(id="dashboard")

    def compose(self) -> ComposeResult:
        yield Banner(id="banner")
        yield HeaderBar(id="header")
        with Horizontal(id="top"):
            yield ProfilesList(id="profiles", classes="panel")
            yield GpuPanel(id="gpus", classes="panel")
        with Horizontal(id="middle"):
            yield ServerPanel(id="server", classes="panel")
            yield SpecPanel(id="spec", classes="panel")
            yield ThroughputPanel(id="throughput", classes="panel")
        with Vertical(id="bottom"):
            yield LogTail(id="logtail", classes="panel")
            yield Input(placeholder="filter the log tail (escape clears)", id="log-filter")
        yield Footer()

    COMPACT_BELOW = 34  # rows: below this the log tail gives its room to the panels

    def on_mount(self) -> None:
        self.query_one("#log-filter", Input).display = False

    def on_resize(self, event) -> None:
        self.set_class(event.size.height < self.COMPACT_BELOW, "compact")

    # --- what the app calls each refresh ------------------------------------------------------------------
    def panels(self) -> dict[str, LinePanel]:
        return {w.id: w for w in self.query(LinePanel) if w.id}

    def show(self, views: dict[str, object], *, force: bool = False) -> int:
        """Hand each visible panel its snapshot; returns how many redrew."""
        drawn = 0
        compact = self.has_class("compact")
        for wid, panel in self.panels().items():
            if wid not in views or (wid == "logtail" and compact):
                continue  # a hidden panel does no work
            drawn += panel.show(views[wid], force=force)
        return drawn

    # --- keys -------------------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "traffic":
            return bool(getattr(self.app, "traffic_available", False))
        if action in ("adopt", "import_profile"):  # offered while a server spectui did not start is highlighted
            return self.app.found_action_possible(action)
        return True

    def action_move(self, step: int) -> None:
        self.app.move_highlight(step)

    def action_switch(self) -> None:
        name = self.app.highlighted_name()
        if name:
            self.app.request_switch(name)

    def action_switch_number(self, number: int) -> None:
        self.app.switch_number(int(number))

    def action_stop(self) -> None:
        self.app.request_stop()

    def action_adopt(self) -> None:
        self.app.request_adopt()

    def action_import_profile(self) -> None:
        self.app.request_import()

    def action_restart(self) -> None:
        self.app.request_restart()

    def action_logs(self) -> None:
        self.app.open_logs()

    def action_source(self) -> None:
        self.app.open_source()

    def action_mark(self) -> None:
        self.app.toggle_mark()

    def action_bench(self) -> None:
        self.app.request_bench()

    def action_compare(self) -> None:
        self.app.request_compare()

    def action_results(self) -> None:
        self.app.open_bench_screen()

    def action_probe(self) -> None:
        self.app.request_probe()

    def action_traffic(self) -> None:
        self.app.toggle_traffic()

    def action_traffic_concurrency(self) -> None:
        self.app.cycle_traffic_concurrency()

    def action_rate_formula(self) -> None:
        self.app.cycle_rate_formula()

    def action_help(self) -> None:
        self.app.open_help()

    def action_quit_console(self) -> None:
        self.app.quit_console()

    def action_filter(self) -> None:
        box = self.query_one("#log-filter", Input)
        box.display = True
        box.focus()

    # --- messages from widgets -----------------------------------------------------------------------------
    def on_profile_highlighted(self, message: ProfileHighlighted) -> None:
        self.app.set_highlight(message.index)

    def on_switch_requested(self, message: SwitchRequested) -> None:
        self.app.request_switch(message.name)

    def on_stop_requested(self, message: StopRequested) -> None:
        self.app.request_stop(message.name)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "log-filter":
            self.query_one(LogTail).set_filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "log-filter":
            self.set_focus(None)
            if not event.value:
                event.input.display = False

    def key_escape(self) -> None:
        box = self.query_one("#log-filter", Input)
        if box.display:
            box.value = ""
            box.display = False
            self.set_focus(None)
            self.query_one(LogTail).set_filter("")
