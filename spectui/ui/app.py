"""The spectui console: a Textual app that shows one :class:`~spectui.core.console.HostConsole` per host.

Each host's console (core, no Textual) owns that host's link, profiles and state: its one action seat,
switch results, logs, probes and alerts. The App holds the consoles, which one is shown, and the screen's
state (the selected row, the filter, the pause, the accept-rate formula); changing host changes which
console is shown. What a console publishes (:mod:`spectui.core.console.events`) reaches the App as a message
(:mod:`spectui.ui.messages`). The controllers (``spectui/ui/controllers/``) turn a key into a confirmation, a
call on the shown host's console and a notification. The App's parts live beside it: the connection workers
(:mod:`~spectui.ui.connection`), the panels' snapshots (:mod:`~spectui.ui.dashboard_views`), the rows
(:mod:`~spectui.ui.rows`), a replay's keys and the palette's commands.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

from textual import on
from textual.app import App
from textual.screen import Screen

from spectui.core.console import (AlertChanged, ConsoleEvent, HostConsole, JobNews, LinkNews, LogRead, Notice,
                                  SeatChanged, SwitchOutcome)
from spectui.core.link_events import FrameReceived as FrameEvent
from spectui.core.link_events import RttChanged as RttEvent
from spectui.core.link_events import SessionOpened as SessionOpenedEvent
from spectui.core.live import HostLink, LinkState
from spectui.core.profiles import Profile, ProfileLibrary, load_profiles
from spectui.core.session import HostTarget
from spectui.core.settings import Settings
from spectui.core.textsafe import visible_text
from spectui.ui import keys, messages, snapshots
from spectui.ui.again import AgainCommands
from spectui.ui.controllers.alerts import AlertsController
from spectui.ui.controllers.bench import BENCH_SHOWS, BenchController
from spectui.ui.controllers.logs import LogsController
from spectui.ui.controllers.probe import ProbeController
from spectui.ui.controllers.quit import QuitController
from spectui.ui.controllers.recording import RecordingController
from spectui.ui.controllers.servers import ServersController
from spectui.ui.controllers.source import SourceController
from spectui.ui.controllers.telemetry import TelemetryController
from spectui.ui.controllers.traffic import TrafficController
from spectui.ui.controllers.tune import TuneController
from spectui.ui.draw import Styles
from spectui.ui.fleet import fleet_row, fleet_view
from spectui.ui.palette import ProfileCommands
from spectui.ui.screens.connecting import ConnectingScreen
from spectui.ui.screens.dashboard import DashboardScreen
from spectui.ui.usersettings import SettingsInConsole
from spectui.ui.connection import ConnectionWorker
from spectui.ui.dashboard_views import CLOCK_S, DashboardViews
from spectui.ui.rows import RowSelection
from spectui.ui.replay_keys import ReplayKeys
from spectui.ui.app_palette import PaletteCommands

if TYPE_CHECKING:
    from spectui.core.replay import ReplayLink

REFRESH_HZ = 4.0  # the most redraws a second, however fast the news comes
# what a telemetry frame changes on the dashboard, by its kind
FRAME_SHOWS = {"gpu": frozenset({"header", "gpus", "profiles", "server"}),
               "server": frozenset({"header", "profiles", "server", "spec", "throughput"})}
LIVE = snapshots.LIVE


class SpectuiApp(ConnectionWorker, DashboardViews, RowSelection, ReplayKeys, PaletteCommands, App):
    CSS_PATH = "app.tcss"
    TITLE = "spectui"
    COMMANDS = App.COMMANDS | {ProfileCommands}
    BINDINGS = keys.REPLAY  # a replay's play, pause, seek and speed (offered only in a replay)

    def __init__(self, target: HostTarget, *, library: ProfileLibrary | None = None, keep: bool = False,
                 telemetry_hz: float = 1.0, traffic: bool = True, refresh_hz: float = REFRESH_HZ,
                 history: int = 3600, settings: Settings | None = None, again: AgainCommands | None = None,
                 record: str | None = None, replay: ReplayLink | None = None, replay_from_s: float | None = None,
                 traffic_scenario: dict | None = None,
                 hosts: list[tuple[HostTarget, ProfileLibrary]] | None = None) -> None:
        super().__init__()
        self.replay = replay            # spectui replay FILE: the link plays a recording, read-only
        self.replay_from_s = replay_from_s
        if replay is not None:
            target = replay.target
            library = library if library is not None else replay.profiles()
        if hosts:                       # several hosts: the dashboard starts on the first
            target, library = hosts[0]
        self.again = again or AgainCommands.of_target(target)  # the commands the quit note suggests
        self.demo = target.kind == "demo"
        self.keep = keep
        alerts = settings.alerts if settings is not None else None
        self.hosts = [HostConsole(t, lib, alerts=alerts) for t, lib in hosts] if hosts else \
            [HostConsole(target, library if library is not None else load_profiles(), alerts=alerts)]
        self.current_host = 0               # the host the dashboard shows (H, < and > change it)
        self.paused = False                 # z: the panels hold still while telemetry keeps arriving
        self.profile_filter = ""            # F: the profile list shows only the rows this matches
        self.refresh_hz = refresh_hz
        self.history = history
        # the selected row, by name (a profile, or a server found on the host): the list may change around it,
        # it never moves by itself; _selected_at is its last row, where j and k go on from once it has left
        self.selected: str | None = self.profiles[0].name if self.profiles else None
        self._selected_at = 0
        self.rate_choice = 0  # which accept-rate formula the speculative panel shows first (a cycles)
        self.exit_note: str | None = None
        self.dashboard: DashboardScreen | None = None
        self.draw_styles = Styles.from_variables({})
        self.refreshes = 0          # snapshots handed to the dashboard (tests and the bench read these)
        self.activities: dict[str, tuple[str, float]] = {}  # work the banner shows: a probe, a source fetch
        self._dirty: set[str] = set()  # what changed since the last redraw (panel names, other screens)
        self._connected_seen = False
        self._found_highlighted = False  # the footer offers adopt / import while a found server is highlighted
        # the features, each owning its state and workers (spectui/ui/controllers/)
        self.servers = ServersController(self)
        self.bench = BenchController(self)
        self.probe = ProbeController(self, settings)
        self.source = SourceController(self)
        self.traffic = TrafficController(self, available=self.demo, wanted=traffic, scenario=traffic_scenario)
        self.telemetry = TelemetryController(self, telemetry_hz)
        self.logs = LogsController(self)
        self.alerts = AlertsController(self, alerts)
        self.tune = TuneController(self)  # T on the benchmark screen: a tune takes the benchmark's place
        self.recording = RecordingController(self, record)  # --record FILE, ctrl+r
        self.quitter = QuitController(self)  # q: what the demo started stops, every link closes, the note is left
        self.controllers = (self.servers, self.bench, self.tune, self.probe, self.source, self.traffic,
                            self.telemetry, self.logs, self.alerts, self.recording)
        self.user_settings = SettingsInConsole(self, settings)  # theme and keymap; None: none
        for console in self.hosts:
            console.alerts.l_stars = lambda c=console: self.alerts.l_stars(c)
            console.events.subscribe(lambda event, c=console: self._heard(c, event))

    # --- the hosts: one console each, one shown ---------------------------------------------------------------------
    @property
    def host(self) -> HostConsole:
        """The shown host's console."""
        return self.hosts[self.current_host]

    @property
    def link(self) -> HostLink | None:
        return self.host.link

    @property
    def target(self) -> HostTarget:
        return self.host.target

    @property
    def library(self) -> ProfileLibrary:
        return self.host.library

    @property
    def profiles(self) -> list[Profile]:
        return self.host.profiles

    @property
    def busy(self) -> str | None:
        """What holds the shown host's action seat (a switch, a benchmark, ...); None: free."""
        return self.host.seat.holder

    # --- setup ----------------------------------------------------------------------------------------------
    def get_default_screen(self) -> Screen:
        self.dashboard = DashboardScreen()
        return self.dashboard

    def on_ready(self) -> None:
        """The first frame is on the terminal: the collector that ``spectui demo`` and ``connect`` held off while
        the console started runs again, without walking what the start made (it lives as long as the console)."""
        if not gc.isenabled():
            gc.freeze()
            gc.enable()

    def on_mount(self) -> None:
        self.user_settings.apply()  # and the panels' colours follow the theme from now on
        if len(self.hosts) > 1:
            from spectui.ui.screens.fleet import FleetScreen
            self.push_screen(FleetScreen())   # every host at a glance; enter opens one
        else:
            self.push_screen(ConnectingScreen(self.target.label))
        self.set_interval(CLOCK_S, self.clock)
        self.recording.start_wanted()
        self.connection()

    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = False) -> None:
        # Messages quote hosts ("[host]:port"), paths, commands and what a server said: never read them
        # as markup, and show their control characters rather than pass them to the terminal.
        super().notify(visible_text(message), title=visible_text(title), severity=severity, timeout=timeout,
                       markup=markup)

    def _heard(self, console: HostConsole, event: ConsoleEvent) -> None:
        """A host's console told something (it runs in the App's loop): the shown host's link events become the
        link's messages; everything else a message that says whose news it is."""
        if isinstance(event, LinkNews):
            if isinstance(event.event, SessionOpenedEvent):
                console.error, console.retry_at = None, None
            if console is self.host:
                self.post_message(messages.link_message(event.event))
                return
        self.post_message(messages.ConsoleNews(console, event))

    # --- what the link tells ---------------------------------------------------------------------------------
    @on(messages.LinkMessage)
    def _news_arrived(self, message: messages.LinkMessage) -> None:
        event = message.event
        if isinstance(event, RttEvent):
            self.mark({"header"})  # it moves with every ping: shown with the next redraw, none of its own
        elif not isinstance(event, FrameEvent):
            self.changed()
        elif self.host.alerts.active:  # a firing alert's value follows the frames' in the banner
            self.changed(FRAME_SHOWS[event.kind] | {"banner"})
        else:
            self.changed(FRAME_SHOWS[event.kind])

    def on_console_news(self, message: messages.ConsoleNews) -> None:
        event, console = message.event, message.console
        if isinstance(event, AlertChanged):
            self.alerts.tell(console, event.change)
        elif isinstance(event, Notice):  # whichever host's (named when another is shown): a result, a refusal
            shown = console is self.host
            self.notify(event.text if shown else f"{console.label}: {event.text}", title=event.title,
                        severity=event.severity, timeout=event.timeout)
            return
        elif isinstance(event, JobNews):
            if event.ended:
                self.bench.ended(event.job, console)
            elif console is self.host and event.progress:
                self.changed(BENCH_SHOWS)
            elif console is self.host:
                self.refresh_now()
            return
        if console is not self.host:  # another host's row; its GPUs where a multi-node profile shows them
            self.changed({"fleet", "gpus", "banner"} if isinstance(event, AlertChanged) else {"fleet", "gpus"})
        elif isinstance(event, (SeatChanged, SwitchOutcome)):
            self.refresh_now()
        elif isinstance(event, LogRead):
            self.logs.read(event.name)
            self.changed({"logtail"})
        else:
            self.changed({"banner", "fleet"})

    def on_link_state_changed(self, message: messages.LinkStateChanged) -> None:
        if not self._connected_seen:
            ev = message.event
            self._connecting_status(ev.message if ev.state != LinkState.CLOSED.value else None)

    def on_session_opened(self, message: messages.SessionOpened) -> None:
        """A session is up: the first leaves the connecting screen; each one goes to every controller (the
        progress board listens to it, the topology is read, the demo traffic and the telemetry choice apply)."""
        if not self._connected_seen:
            self._connected_seen = True
            self._on_connected()
        ev = message.event
        if self.replay is not None:
            return  # a replay's sessions have nothing to call
        for controller in self.controllers:
            controller.session_opened(ev.session, ev.reconnects)

    def on_switch_stage(self, message: messages.SwitchStage) -> None:
        self.refresh_now()  # a stage shows at once, not at the next refresh

    def _on_connected(self) -> None:
        """The first time the link is up: leave the connecting screen, point at the running server."""
        for s in list(self.screen_stack):
            if isinstance(s, ConnectingScreen) and s is self.screen:
                self.pop_screen()
        link = self.link
        ready = [n for n, s in link.servers.items() if s.get("state") in LIVE]
        running = [p.name for p in self.profiles if p.name in ready]  # a profile's server, never a found one
        if running:
            self.selected = running[0]
        if self.host.profile_errors:
            errors = self.host.profile_errors
            self.notify(f"{len(errors)} profile(s) could not be loaded: {errors[0]}",
                        severity="warning", timeout=10)
        self.call_after_refresh(self.refresh_now)  # the first frame with the host's figures once the dashboard shows,
        # not at the next refresh period

    # --- several hosts --------------------------------------------------------------------------------------------
    def fleet_view(self, highlight: int):
        return fleet_view(self.hosts, self.current_host, highlight)

    def enter_host(self, index: int) -> None:
        """Show host ``index`` on the dashboard: its console, as it was left (switch results, probes, logs, alerts
        stay with each host, and so does any action under way: a switch, a stop, a benchmark, a tune); its session's
        work (topology, probes, demo traffic) starts as for a new session."""
        if index == self.current_host or not 0 <= index < len(self.hosts):
            return
        self.recording.move_to(self.hosts[index])
        self.current_host = index
        self.selected, self._selected_at = (self.profiles[0].name if self.profiles else None), 0
        if self.profile_filter and self.dashboard is not None:
            self.dashboard.end_profile_filter()
        self.profile_filter = ""
        for controller in self.controllers:
            controller.host_changed()
        console, link = self.host, self.link
        if link is not None and link.connected:
            for controller in self.controllers:
                controller.session_opened(link.session, link.reconnects)
        self.notify(f"Host {index + 1} of {len(self.hosts)}: {console.label}" + ("" if console.connected else
                    f" ({fleet_row(index + 1, console, current=True).health})"))
        self.refresh_now()

    async def action_quit(self) -> None:
        self.quitter.request()

    def quit_console(self) -> None:
        self.quitter.request()

    def on_unmount(self) -> None:
        for console in self.hosts:  # a run goes on on its host; the job says the console stopped following it
            console.leave_job()
        self.logs.stop()
        self.recording.stop(redraw=False)  # however the console ends, what was recorded is closed and readable
