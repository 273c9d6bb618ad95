"""The dashboard: header, profiles, GPUs, server, speculative, throughput and log tail.

Keys come from ``spectui.ui.keys.DASHBOARD``; each action asks the app or the controller of its feature
(``app.servers``, ``app.bench``, ...), which talk to the link.
"""

from __future__ import annotations

import importlib

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Input

from spectui.ui import keys
from spectui.ui.messages import ProfileHighlighted, StopRequested, SwitchRequested
from spectui.ui.widgets.base import LinePanel
from spectui.ui.widgets.footer import KeyFooter
from spectui.ui.widgets.glance import GlanceRow, glance_view
from spectui.ui.widgets.gpu import GpuPanel
from spectui.ui.widgets.header import Banner, HeaderBar
from spectui.ui.widgets.logtail import LogTail
from spectui.ui.widgets.profiles import ProfilesList
from spectui.ui.widgets.server import ServerPanel
from spectui.ui.widgets.speculative import SpecPanel
from spectui.ui.widgets.throughput import ThroughputPanel

# What a replay cannot do: each acts on the host (or on a benchmark run there)
HOST_ACTIONS = frozenset({"switch", "switch_number", "stop", "adopt", "import_profile", "restart", "source", "mark",
                          "bench", "compare", "probe", "traffic", "traffic_concurrency", "retry_now",
                          "telemetry_faster", "telemetry_slower", "record"})


class DashboardScreen(Screen):
    BINDINGS = keys.DASHBOARD
    AUTO_FOCUS = ""  # keys go to the dashboard; the log filter takes focus only when opened with /

    def __init__(self) -> None:
        super().__init__(id="dashboard")

    def compose(self) -> ComposeResult:
        yield Banner(id="banner")
        yield HeaderBar(id="header")
        yield GlanceRow(id="glance")
        yield Input(placeholder="filter the profiles: name, algorithm or model (escape clears)", id="profile-filter")
        with VerticalScroll(id="body", can_focus=False):
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
        yield KeyFooter()

    # The layout follows the terminal's size (app.tcss): below COMPACT_BELOW rows the log tail gives
    # its room to the panels; below NARROW_BELOW columns the server, speculative and throughput panels
    # stack and the dashboard scrolls (page up / page down, the wheel); below SLIM_BELOW columns the
    # profiles and GPUs stack too. Where the panels do not all fit (compact or narrow), the glance row above them
    # keeps the watched server's figures on the first screen.
    COMPACT_BELOW = 34
    NARROW_BELOW = 120
    SLIM_BELOW = 100

    def on_mount(self) -> None:
        self.query_one("#log-filter", Input).display = False
        self.query_one("#profile-filter", Input).display = False

    def on_screen_resume(self) -> None:
        self.app.changed()  # what changed while another screen was shown

    def on_resize(self, event) -> None:
        tail = not self.has_class("compact")
        self.set_class(event.size.height < self.COMPACT_BELOW, "compact")
        self.set_class(event.size.width < self.NARROW_BELOW, "narrow")
        self.set_class(event.size.width < self.SLIM_BELOW, "slim")
        self._fit_top()
        self._glance()
        if tail != (not self.has_class("compact")):
            self.app.changed({"logtail"})  # the log tail comes back (and is read again) or goes

    def _fit_top(self) -> None:
        """The profiles and GPU row as tall as the taller of the two needs (both whole where the
        screen allows; else they scroll), up to 40% of the screen; stacked, each is as tall as it needs."""
        top = self.query_one("#top")
        if self.has_class("slim"):
            if top.styles.inline.height is not None:
                top.styles.height = None
            return
        need = max(max(1, len(p.origins)) for p in self.query("#top > LinePanel")) + 2
        height = max(6, min(need, int(self.size.height * 0.4)))
        if top.styles.inline.height is None or top.styles.height.value != height:
            top.styles.height = height

    def action_page(self, step: int) -> None:
        """Scroll the stacked dashboard by a page (narrow terminals)."""
        body = self.query_one("#body", VerticalScroll)
        if step > 0:
            body.scroll_page_down()
        else:
            body.scroll_page_up()

    # --- what the app calls each refresh ------------------------------------------------------------------
    def panels(self) -> dict[str, LinePanel]:
        return {w.id: w for w in self.query(LinePanel) if w.id and w.id != "glance"}

    def show(self, views: dict[str, object], *, force: bool = False) -> int:
        """Hand each visible panel its snapshot; returns how many redrew."""
        drawn = 0
        compact = self.has_class("compact")
        for wid, panel in self.panels().items():
            if wid not in views or (wid == "logtail" and compact):
                continue  # a hidden panel does no work
            drawn += panel.show(views[wid], force=force)
        if drawn:
            self._fit_top()
            self._glance(force)
        return drawn

    def _glance(self, force: bool = False) -> None:
        """The glance row from what the server, speculative, throughput and GPU panels show, where it is shown."""
        glance = self.query_one("#glance", GlanceRow)
        glance.display = self.has_class("compact") or self.has_class("narrow")
        if glance.display:
            panels = self.panels()
            glance.show(glance_view(*(panels[w].view for w in ("server", "spec", "throughput", "gpus"))), force=force)

    # --- keys -------------------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if keys.typed_into_a_box(self, action):
            return False
        if self.app.replay is not None and action in HOST_ACTIONS:
            return False  # a replay acts on nothing (and space plays or pauses it)
        if action == "traffic":
            return self.app.traffic.available
        if action in ("hosts", "host"):  # several hosts only
            return len(self.app.hosts) > 1
        if action in ("adopt", "import_profile"):  # offered while a server spectui did not start is highlighted
            return self.app.servers.found_action_possible(action)
        return True

    def action_switch(self) -> None:
        name = self.app.highlighted_name()
        if name:
            self.app.servers.request_switch(name)

    def action_switch_number(self, number: int) -> None:
        self.app.switch_number(int(number))

    def action_host(self, step: int) -> None:
        self.app.enter_host((self.app.current_host + step) % len(self.app.hosts))

    def action_filter_profiles(self) -> None:
        box = self.query_one("#profile-filter", Input)
        box.display = True
        keys.focus_now(box)

    def action_filter(self) -> None:
        box = self.query_one("#log-filter", Input)
        box.display = True
        keys.focus_now(box)

    # --- messages from widgets -----------------------------------------------------------------------------
    def on_profile_highlighted(self, message: ProfileHighlighted) -> None:
        self.app.set_highlight(message.index)

    def on_profiles_list_group_toggled(self, message: ProfilesList.GroupToggled) -> None:
        self.app.servers.toggle_found("unfolded")

    def on_switch_requested(self, message: SwitchRequested) -> None:
        self.app.servers.request_switch(message.name)

    def on_stop_requested(self, message: StopRequested) -> None:
        self.app.servers.request_stop(message.name)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "log-filter":
            self.query_one(LogTail).set_filter(event.value)
        elif event.input.id == "profile-filter":
            self.app.set_profile_filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id in ("log-filter", "profile-filter"):
            self.set_focus(None)
            if not event.value:
                event.input.display = False

    def key_escape(self) -> None:
        if self._clear_profile_filter():
            return
        box = self.query_one("#log-filter", Input)
        if box.display:
            box.value = ""
            box.display = False
            self.set_focus(None)
            self.query_one(LogTail).set_filter("")

    def _clear_profile_filter(self) -> bool:
        """Escape ends the profile filter (F) while it is being typed, or while it is the only filter shown."""
        box = self.query_one("#profile-filter", Input)
        if not box.display or not (box.has_focus or not self.query_one("#log-filter", Input).display):
            return False
        self.end_profile_filter()
        self.app.set_profile_filter("")
        return True

    def end_profile_filter(self) -> None:
        """Empty and hide the profile filter's box (the app clears the filter itself)."""
        box = self.query_one("#profile-filter", Input)
        with box.prevent(Input.Changed):
            box.value = ""
        box.display = False
        if box.has_focus:
            self.set_focus(None)


FORWARDS: dict[str, tuple[str, tuple]] = {  # the dashboard's keys that one call of the App answers
    "move": ("move_highlight", ()),
    "stop": ("servers.request_stop", ()),
    "adopt": ("servers.request_adopt", ()),
    "import_profile": ("servers.request_import", ()),
    "restart": ("servers.request_restart", ()),
    "logs": ("logs.open", ()),
    "source": ("source.open", ()),
    "mark": ("bench.toggle_mark", ()),
    "bench": ("bench.request_bench", ()),
    "compare": ("bench.request_compare", ()),
    "results": ("bench.open_screen", ()),
    "probe": ("probe.request_probe", ()),
    "traffic": ("traffic.toggle", ()),
    "traffic_concurrency": ("traffic.cycle_concurrency", ()),
    "rate_formula": ("cycle_rate_formula", ()),
    "retry_now": ("retry_now", ()),
    "quit_console": ("quit_console", ()),
    "record": ("recording.toggle", ()),
    "describe": ("servers.describe", ()),
    "pause": ("toggle_pause", ()),
    "telemetry_faster": ("telemetry.step", (1,)),
    "telemetry_slower": ("telemetry.step", (-1,)),
    "found_group": ("servers.toggle_found", ("unfolded",)),
    "found_stopped": ("servers.toggle_found", ("stopped",)),
    "found_owner": ("servers.toggle_found", ("mine",)),
}


OPENS: dict[str, str] = {  # the dashboard's keys that open a screen of their own, each module loaded when first opened
    "help": "spectui.ui.screens.help:HelpScreen",
    "gpu_processes": "spectui.ui.screens.gpuprocs:GpuProcsScreen",
    "debug_log": "spectui.ui.screens.debuglog:DebugLogScreen",
    "hosts": "spectui.ui.screens.fleet:FleetScreen",
    "alerts": "spectui.ui.screens.alerts:AlertsScreen",
}


def _opener(where: str):
    def action(self) -> None:
        module, name = where.split(":")
        self.app.push_screen(getattr(importlib.import_module(module), name)())
    return action


def _forward(path: str, fixed: tuple):
    def action(self, *args: object) -> None:
        target = self.app
        for part in path.split("."):
            target = getattr(target, part)
        target(*fixed, *args)
    return action


for _name, (_path, _fixed) in FORWARDS.items():
    setattr(DashboardScreen, f"action_{_name}", _forward(_path, _fixed))
for _name, _where in OPENS.items():
    setattr(DashboardScreen, f"action_{_name}", _opener(_where))
