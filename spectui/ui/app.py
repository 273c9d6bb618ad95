"""The spectui console: a Textual app over one :class:`~spectui.core.live.HostLink`.

One long-lived connection worker owns the link (connect, dialogs on errors that need the user,
then the link reconnects on its own). The link publishes what changes (a session opened, a
server's record, a switch's stage, a frame: :mod:`spectui.core.link_events`); each event reaches
the App as a Textual message (:mod:`spectui.ui.messages`), and the App hands the news to the
controllers it composes (``spectui/ui/controllers/``: servers, bench, tune, probe, source,
traffic, telemetry, logs), each owning its feature's state and workers. A refresh timer (about 4 Hz,
independent of the telemetry rate) builds one snapshot per panel when news arrived and hands it
to the panels that are visible; panels redraw only when their snapshot differs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Iterable

from rich.markup import escape
from textual import on, work
from textual.app import App, ScreenStackError, SystemCommand
from textual.screen import ModalScreen, Screen

from spectui.core.errors import (
    AgentCallError,
    Disconnected,
    HostKeyChanged,
    HostKeyUnknown,
    KeyPassphraseNeeded,
    SpectuiError,
)
from spectui.core.link_events import LinkEvent
from spectui.core.link_events import SessionOpened as SessionOpenedEvent
from spectui.core.live import HostLink, LinkState
from spectui.core.profiles import Profile, ProfileLibrary, load_profiles
from spectui.core.replay import ReplayLink
from spectui.core.servers import is_external
from spectui.core.session import HostTarget
from spectui.core.settings import Settings
from spectui.core.textsafe import visible_text
from spectui.agent.protocol import ServerState
from spectui.ui import derive, keys, messages, snapshots
from spectui.ui.again import AgainCommands
from spectui.ui.controllers.alerts import AlertsController
from spectui.ui.controllers.bench import BenchController
from spectui.ui.controllers.logs import LOG_POLL_S, LogsController
from spectui.ui.controllers.probe import ProbeController
from spectui.ui.controllers.recording import RecordingController
from spectui.ui.controllers.servers import ServersController
from spectui.ui.controllers.source import SourceController
from spectui.ui.controllers.telemetry import TelemetryController
from spectui.ui.controllers.traffic import TrafficController
from spectui.ui.controllers.tune import TuneController
from spectui.ui.draw import Styles
from spectui.ui.fleet import RETRY_MAX_S, RETRY_START_S, FleetHost, fleet_row, fleet_view, node_hosts
from spectui.ui.gpu_processes import gpu_processes_view
from spectui.ui.palette import ProfileCommands
from spectui.ui.screens.connecting import ConnectingScreen
from spectui.ui.screens.dashboard import HOST_ACTIONS, DashboardScreen
from spectui.ui.screens.alerts import AlertsScreen
from spectui.ui.screens.debuglog import DebugLogScreen
from spectui.ui.screens.describe import DescribeScreen
from spectui.ui.screens.fleet import FleetScreen
from spectui.ui.screens.dialogs import FailureScreen, HostKeyChangedScreen, HostKeyScreen, PassphraseScreen
from spectui.ui.screens.gpuprocs import GpuProcsScreen
from spectui.ui.screens.help import HelpScreen
from spectui.ui.screens.logs import LogScreen
from spectui.ui.usersettings import SettingsInConsole

REFRESH_HZ = 4.0
READ_ONLY = "This is a replay: nothing on the host can be started, stopped, benchmarked or probed from it."
SERVER_INTERVAL_S = 1.0  # server frames; --telemetry-hz sets the GPU rate only
LIVE = snapshots.LIVE


class SpectuiApp(App):
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
        self.target = target
        self.again = again or AgainCommands.of_target(target)  # the commands the quit note suggests
        self.demo = target.kind == "demo"
        self.keep = keep
        self.library = library if library is not None else load_profiles()
        self.hosts = [FleetHost(t, lib) for t, lib in hosts] if hosts else [FleetHost(target, self.library)]
        self.current_host = 0               # the host the dashboard shows (H, < and > change it)
        self.profiles: list[Profile] = list(self.library)
        self.profile_errors = [str(e) for e in self.library.errors]
        self.paused = False                 # z: the panels hold still while telemetry keeps arriving
        self.profile_filter = ""            # F: the profile list shows only the rows this matches
        self.refresh_hz = refresh_hz
        self.history = history
        self.link: HostLink | None = None
        # the selected row, by name (a profile, or a server found on the host): the list may change around it,
        # it never moves by itself; _selected_at is its last row, where j and k go on from once it has left
        self.selected: str | None = self.profiles[0].name if self.profiles else None
        self._selected_at = 0
        self.rate_choice = 0  # which accept-rate formula the speculative panel shows first (a cycles)
        self.busy: str | None = None  # the one action under way (switch, stop, benchmark, ...): others wait
        self.exit_note: str | None = None
        self.dashboard: DashboardScreen | None = None
        self.draw_styles = Styles.from_variables({})
        self.refreshes = 0          # snapshots handed to the dashboard (tests and the bench read these)
        self.breakeven = snapshots.BreakEvenCache()
        self.activities: dict[str, tuple[str, float]] = {}  # work the banner shows: a probe, a source fetch
        self._ui_version = 0        # bumped by keys and results
        self._news = 0              # bumped by each message from the link
        self._seen: tuple | None = None
        self._connected_seen = False
        self._quitting = False
        self._found_highlighted = False  # the footer offers adopt / import while a found server is highlighted
        # the features, each owning its state and workers (spectui/ui/controllers/)
        self.servers = ServersController(self)
        self.bench = BenchController(self)
        self.probe = ProbeController(self, settings)
        self.source = SourceController(self)
        self.traffic = TrafficController(self, available=self.demo, wanted=traffic, scenario=traffic_scenario)
        self.telemetry = TelemetryController(self, telemetry_hz)
        self.logs = LogsController(self)
        self.alerts = AlertsController(self, settings.alerts if settings is not None else None)
        self.tune = TuneController(self)  # T on the benchmark screen: a tune takes the benchmark's place
        self.recording = RecordingController(self, record)  # --record FILE, ctrl+r
        self.controllers = (self.servers, self.bench, self.tune, self.probe, self.source, self.traffic,
                            self.telemetry, self.logs, self.alerts, self.recording)
        self.user_settings = SettingsInConsole(self, settings)  # theme and keymap; None: none

    # --- setup ----------------------------------------------------------------------------------------------
    def get_default_screen(self) -> Screen:
        self.dashboard = DashboardScreen()
        return self.dashboard

    def on_mount(self) -> None:
        self.user_settings.apply()
        self._update_styles()
        self.theme_changed_signal.subscribe(self, lambda _theme: self._theme_changed())
        if len(self.hosts) > 1:
            self.push_screen(FleetScreen())   # every host at a glance; enter opens one
        else:
            self.push_screen(ConnectingScreen(self.target.label))
        self.set_interval(1.0 / self.refresh_hz, self.tick)
        self.set_interval(LOG_POLL_S, self.logs.poll)
        self.recording.start_wanted()
        self.connection()

    def _update_styles(self) -> None:
        self.draw_styles = Styles.from_variables(self.get_css_variables())

    def _theme_changed(self) -> None:
        self.user_settings.theme_changed(self.theme)
        self._update_styles()
        if self.dashboard is not None and self.link is not None:
            self.dashboard.show(self.build_views(), force=True)

    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = False) -> None:
        # Messages quote hosts ("[host]:port"), paths, commands and what a server said: never read them
        # as markup, and show their control characters rather than pass them to the terminal.
        super().notify(visible_text(message), title=visible_text(title), severity=severity, timeout=timeout,
                       markup=markup)

    # --- the connection worker ---------------------------------------------------------------------------------
    @work(exclusive=True, group="connection", exit_on_error=False)
    async def connection(self) -> None:
        if self.replay is not None:
            self.link = self.replay
            self.replay.events.subscribe(self._hear)
            await self.replay.run(self.replay_from_s)
            return
        if len(self.hosts) > 1:
            for host in self.hosts:  # each its own: a host that is down holds up no other
                self.run_worker(self._host_connection(host), group="fleet", exit_on_error=False)
            return
        while True:
            link = self._new_link(self.target, self._hear)
            self.link = self.hosts[0].link = link
            self.recording.attach(link)
            self._connected_seen = False
            try:
                await link.run()
                return
            except HostKeyChanged as exc:
                self.exit_note = f"spectui: {exc}"
                await self.push_screen_wait(HostKeyChangedScreen(exc))
                self.exit(return_code=1)
                return
            except HostKeyUnknown as exc:
                if not await self._trust(self.target, exc):
                    self.exit_note = f"spectui: {exc}"
                    self.exit(return_code=1)
                    return
            except KeyPassphraseNeeded as exc:
                if not await self._passphrase(self.target, str(exc)):
                    self.exit(return_code=1)
                    return
            except (SpectuiError, OSError) as exc:
                if self.target.ssh.passphrase is not None and "encrypted" in str(exc):
                    self.target.ssh.passphrase = None  # a wrong passphrase: ask again on retry
                choice = await self.push_screen_wait(FailureScreen(exc, self.target.label))
                if choice != "retry":
                    self.exit_note = f"spectui: {exc}"
                    self.exit(return_code=1)
                    return
            self._connecting_status(f"connecting to {self.target.label}")

    async def _host_connection(self, host: FleetHost) -> None:
        """One host of several: its link, kept up; a failed first connection is that host's row (retried on its
        own), and a host key or passphrase it needs asks the operator, naming the host."""
        wait = RETRY_START_S
        while not self._quitting:
            link = self._new_link(host.target, lambda event, h=host: self._hear_host(h, event))
            host.link = link
            if host is self.hosts[self.current_host]:
                self.link = link
                self.recording.attach(link)
            try:
                await link.run()
                return
            except HostKeyChanged as exc:
                host.error, host.refused = str(exc), True
                self.notify(f"{host.label}: {exc}", severity="error", timeout=30)
                return
            except HostKeyUnknown as exc:
                if not await self._trust(host.target, exc):
                    host.error, host.refused = "its host key was not trusted", True
                    return
            except KeyPassphraseNeeded as exc:
                if not await self._passphrase(host.target, f"{host.label}: {exc}"):
                    host.error, host.refused = "no passphrase for its key", True
                    return
            except (SpectuiError, OSError) as exc:
                host.error = str(exc) or type(exc).__name__
                host.retry_at = time.monotonic() + wait
                self.changed()
                await asyncio.sleep(wait)
                wait = min(RETRY_MAX_S, wait * 2)
                continue
            host.error = None

    def _new_link(self, target: HostTarget, subscriber) -> HostLink:
        link = HostLink(target, gpu_interval_s=self.telemetry.gpu_interval_s, server_interval_s=SERVER_INTERVAL_S,
                        history=self.history)
        link.events.subscribe(subscriber)
        return link

    async def _trust(self, target: HostTarget, exc: HostKeyUnknown) -> bool:
        """Ask about a host key not in known_hosts: trust it once, or save it (True), or not (False)."""
        choice = await self.push_screen_wait(HostKeyScreen(exc))
        if choice == "once":
            target.ssh.trusted_fingerprints = frozenset(target.ssh.trusted_fingerprints) | {exc.fingerprint}
        elif choice == "save":
            target.ssh.accept_new_host_key = True
        return choice in ("once", "save")

    async def _passphrase(self, target: HostTarget, text: str) -> bool:
        """Ask for the passphrase of an encrypted key; False when the operator gives none."""
        secret = await self.push_screen_wait(PassphraseScreen(text))
        if secret is not None:
            target.ssh.passphrase = secret
        return secret is not None

    def _hear_host(self, host: FleetHost, event: LinkEvent) -> None:
        """Several hosts: the shown host's events drive the console; the others' only redraw the overview."""
        if isinstance(event, SessionOpenedEvent):
            host.error, host.retry_at = None, None
        if host is self.hosts[self.current_host]:
            self._hear(event)
        else:
            self._news += 1

    def _hear(self, event: LinkEvent) -> None:
        """The link's subscriber (it runs in the App's loop): each event becomes a message to the App."""
        self.post_message(messages.link_message(event))

    def _connecting_status(self, text: str | None = None) -> None:
        for s in self.screen_stack:
            if isinstance(s, ConnectingScreen):
                s.set_status(text)

    # --- what the link tells ---------------------------------------------------------------------------------
    @on(messages.LinkMessage)
    def _news_arrived(self, message: messages.LinkMessage) -> None:
        self._news += 1  # the next refresh builds the panels again

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
        if self.profile_errors:
            self.notify(f"{len(self.profile_errors)} profile(s) could not be loaded: {self.profile_errors[0]}",
                        severity="warning", timeout=10)

    # --- refresh -------------------------------------------------------------------------------------------------
    def dashboard_visible(self) -> bool:
        for s in reversed(self.screen_stack):
            if s is self.dashboard:
                return True
            if not isinstance(s, ModalScreen):
                return False
        return False

    def tick(self) -> None:
        try:
            screen = self.screen
        except ScreenStackError:  # the console is closing: Textual stops its timers after the screens
            return
        if isinstance(screen, FleetScreen):
            screen.sync()
        link = self.link
        if link is None:
            return
        if not self._connected_seen and len(self.hosts) == 1:
            self._connecting_status()  # its clock
            return
        if isinstance(screen, (LogScreen, DescribeScreen)):
            screen.sync()
        elif isinstance(screen, GpuProcsScreen):
            screen.show(self.header_view(), None if self.paused else gpu_processes_view(link))
        self.bench.sync()
        self.alerts.evaluate()
        self.recording.sync()
        self._forget_gone(link)
        if not self.dashboard_visible():
            return
        key = (self._news, self._ui_version, int(time.monotonic()))
        if key == self._seen:
            return
        self._seen = key
        self.refreshes += 1
        if self.paused:  # the header says so and the banner keeps the connection's news; the rest holds still
            self.dashboard.show({"banner": self.banner_view(), "header": self.header_view()})
            return
        self.dashboard.show(self.build_views())

    def changed(self) -> None:
        """Something the panels show changed (a key, a result): the next refresh draws it."""
        self._ui_version += 1

    def refresh_now(self) -> None:
        """Redraw at once after a key (the timer would take up to a quarter second)."""
        self.changed()
        self.tick()

    def build_views(self) -> dict[str, object]:
        link = self.link
        name = self.focus()
        profile = self.library.profiles.get(name) if name else None
        servers = self.servers
        server = snapshots.server_view(link, name, profile, switch_result=servers.switch_results.get(name or ""),
                                       switch_started=servers.switch_started, stopped_name=servers.switch_stopped,
                                       switch_error=servers.switch_errors.get(name or ""))
        gone = self.gone_name()
        if gone is not None and name == gone:
            server = dataclasses.replace(server, hint=f"{gone} is no longer on the host: it stopped and was forgotten "
                                                      "(j and k select another row)")
        views: dict[str, object] = {
            "banner": self.banner_view(),
            "header": self.header_view(),
            "profiles": self.profiles_view(),
            "gpus": self.gpu_view(profile),
            "server": server,
        }
        algorithms = {n: snapshots.profile_algorithm(link.servers.get(n), self.library.profiles.get(n), s.latest)
                      for n, s in link.series.items()}
        be, why = self.breakeven.explain(link, name, algorithms) if name else (None, "")
        predicted = snapshots.predicted_view(self.probe.probes.get(name)) if name else None
        views["spec"] = snapshots.spec_view(link, name, profile, be, why, predicted, rate_choice=self.rate_choice)
        views["throughput"] = snapshots.throughput_view(link, name)
        buf = self.logs.tail(name)
        views["logtail"] = snapshots.log_tail_view(name, buf.tail(snapshots.LOG_TAIL) if buf and buf.offset is not None
                                                   else None, buf.error if buf else None, not link.connected)
        unread = snapshots.unreadable_log(link.servers.get(name)) if name else None
        if unread:
            views["logtail"] = snapshots.log_tail_view(name, (), unread, not link.connected)
        found = servers.found_record(self.highlighted_name()) is not None
        if found != self._found_highlighted and self.dashboard is not None:
            self._found_highlighted = found
            self.dashboard.refresh_bindings()
        return views

    def profiles_view(self):
        """The profile rows, then the group of found servers under its heading."""
        servers, bench = self.servers, self.bench
        group = servers.group()
        view = snapshots.profiles_view(self.link, self.profiles, self.highlight, self.profile_errors,
                                       servers.switching_to(), bench.marked, bench.compare_baseline(),
                                       group.listed, self.profile_filter)
        heading = group.view and dataclasses.replace(group.view, at=sum(1 for r in view.rows if r.origin is None))
        return dataclasses.replace(view, group=heading, gone=self.gone_name())

    def _forget_gone(self, link) -> None:
        """What the console keeps per server (its log, its last switch's answer), for servers the link forgot."""
        known = set(link.servers) | set(link.series) | set(self.library.profiles)
        shown = {s.buffer.name for s in self.screen_stack if isinstance(s, LogScreen)}
        for name in [n for n in self.logs.buffers if n not in known and n not in shown]:
            del self.logs.buffers[name]
        self.servers.forget(known)

    def gpu_view(self, profile: Profile | None):
        """The GPU panel: this host's GPUs; a multi-node profile's nodes' GPUs, by node, when the console has its
        nodes' hosts."""
        if profile is not None and profile.nodes and len(self.hosts) > 1:
            hosts, why = node_hosts(profile, self.hosts)
            if hosts:
                return snapshots.gpu_view_nodes([(f"node {rank} · {h.label}", h.link) for rank, h in enumerate(hosts)])
        return snapshots.gpu_view(self.link)

    def header_view(self):
        traffic, telemetry, measuring = self.traffic, self.telemetry, self.bench.measuring()
        return snapshots.header_view(self.link, traffic=traffic.on if traffic.available else None,
                                     busy=None if measuring else self.busy,  # the banner says
                                     interconnect=self.probe.interconnect,
                                     traffic_paused=traffic.paused_by_bench(),
                                     traffic_streams=traffic.concurrency, traffic_note=traffic.line(),
                                     telemetry_hz=telemetry.hz if telemetry.on and self.replay is None else None,
                                     paused=self.paused, recording=self.recording.header_text())

    def banner_view(self):
        """The connection's trouble, a firing alert, or work going on; in a replay, its time line first."""
        if self.replay is not None:
            return snapshots.replay_banner(self.replay, self.alerts.banner(), self.activity_text())
        return snapshots.banner_view(self.link, self.activity_text(), self.alerts.banner())

    # --- a replay's keys ----------------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action.startswith("replay_"):
            return self.replay is not None
        return True

    def action_replay_pause(self) -> None:
        self.replay.toggle_pause()
        self.refresh_now()

    def action_replay_seek(self, seconds: float) -> None:
        self.replay.seek(self.replay.position_s + seconds)
        self.refresh_now()

    def action_replay_to(self, where: str) -> None:
        self.replay.seek(0.0 if where == "start" else self.replay.duration_s)
        self.refresh_now()

    def action_replay_speed(self, step: int) -> None:
        speed = self.replay.faster() if step > 0 else self.replay.slower()
        self.notify(f"Replaying at {speed:g}x.")
        self.refresh_now()

    # --- what the banner shows while work goes on ---------------------------------------------------------
    def set_activity(self, key: str, text: str | None) -> None:
        if text is None:
            self.activities.pop(key, None)
        else:
            started = self.activities.get(key, (None, time.monotonic()))[1]
            self.activities[key] = (text, started)
        self.refresh_now()

    def activity_text(self) -> str | None:
        """The banner's line while work goes on: a benchmark's progress, a probe, a source fetch."""
        now = time.monotonic()
        parts = [p for p in (self.bench.banner_text(),) if p]
        parts += [f"{text} ({int(now - t0)} s)" for text, t0 in self.activities.values()]
        return " · ".join(parts) or None

    # --- pause, accept-rate formula, profile filter ------------------------------------------------------------
    def toggle_pause(self) -> None:
        """z: hold the panels still (telemetry keeps arriving), or let them catch up."""
        self.paused = not self.paused
        self.notify("Display paused: telemetry keeps arriving; press z again to catch up." if self.paused
                    else "Display resumed.")
        self.refresh_now()

    def cycle_rate_formula(self) -> None:
        self.rate_choice += 1
        self.refresh_now()

    def set_profile_filter(self, text: str) -> None:
        """F: show only the profile rows ``text`` matches, keeping the highlighted row where it is still shown."""
        self.profile_filter = text
        names = self.row_names()
        if self.selected not in names and names:
            self.selected = names[0]
        self.refresh_now()

    def highlight_row(self, name: str) -> None:
        """Highlight ``name``'s row; a profile filter that hides it ends."""
        if name not in self.row_names() and self.profile_filter:
            if self.dashboard is not None:
                self.dashboard.end_profile_filter()
            self.profile_filter = ""
        if name in self.row_names():
            self.selected = name
            self.refresh_now()

    # --- profiles and highlight ---------------------------------------------------------------------------------------------
    def row_names(self) -> list[str]:
        """The rows of the profile list (profiles, then the servers spectui found running), as the profile
        filter (F) leaves them."""
        rows = [(p.name, p.algorithm, p.model) for p in self.profiles]
        rows += [(s["name"], r.algorithm, r.model) for s in self.servers.found_servers()
                 for r in [snapshots.found_row(s)]]
        return [r[0] for r in rows if snapshots.row_shown(self.profile_filter, *r)]

    def highlighted_name(self) -> str | None:
        """The selected row: a profile, or a server found on the host (the group under the profiles); kept by
        name, so a row that appears or goes elsewhere in the list never changes it (see :meth:`gone_name`)."""
        return self.selected

    @property
    def highlight(self) -> int:
        """The selected row's index in :meth:`row_names` (-1 while it is not listed)."""
        names = self.row_names()
        if self.selected in names:
            self._selected_at = names.index(self.selected)
            return self._selected_at
        return -1

    @highlight.setter
    def highlight(self, index: int) -> None:
        names = self.row_names()
        if 0 <= index < len(names):
            self.selected, self._selected_at = names[index], index

    def gone_name(self) -> str | None:
        """The selected server, once it is no longer on the host (its row went with it); else None."""
        name = self.selected
        if name is None or name in self.library.profiles or name in self.row_names():
            return None
        link = self.link
        return name if link is None or name not in link.servers else None

    def reselect_near(self, index: int) -> None:
        """After the list changed at the operator's word (o, u): a selection no longer listed moves to the row at
        ``index``, else the last one."""
        names = self.row_names()
        if names and self.selected not in names:
            self.highlight = max(0, min(index if index >= 0 else self._selected_at, len(names) - 1))

    def focus(self) -> str | None:
        """The server the server, speculative, throughput and log panels follow: the one a switch under way starts;
        else the selected row's (a found server's, or a profile's that runs); for a profile that does not run, the
        operator's own server that runs (a profile's or an adopted one), never one only found on the host."""
        link, name = self.link, self.selected
        if link is None:
            return name
        sw = link.switch
        if sw is not None and sw.stage not in derive.FINAL and sw.target not in self.servers.switch_errors:
            return sw.target
        if name is None or name not in self.library.profiles:
            return name
        rec = link.servers.get(name)
        if rec is not None and rec.get("state") != ServerState.STOPPED:
            return name
        own = [s for s in link.servers.values() if s.get("state") in LIVE and not is_external(s)]
        if own:
            own.sort(key=lambda s: (s.get("state") == ServerState.READY, s.get("started_at") or 0), reverse=True)
            return own[0]["name"]
        if sw is not None and (sw.target == name or sw.target in link.servers):
            return sw.target
        return name if rec is not None else None

    def profile_algorithm_of(self, name: str) -> str | None:
        link = self.link
        series = link.series.get(name) if link else None
        return snapshots.profile_algorithm(link.servers.get(name) if link else None, self.library.profiles.get(name),
                                           series.latest if series else None)

    def move_highlight(self, step: int) -> None:
        rows = len(self.row_names())
        if rows:
            at = self.highlight
            if at < 0:  # the selected row went: j takes the row now in its place, k the one above
                at = self._selected_at - (1 if step < 0 else 0)
                step = 0
            self.highlight = max(0, min(rows - 1, at + step))  # stops at the ends, as htop and k9s do
            self.refresh_now()

    def set_highlight(self, index: int) -> None:
        if 0 <= index < len(self.row_names()):
            self.highlight = index
            self.refresh_now()

    def reload_profiles(self) -> None:
        """Read the profile folders again (after an import), keeping the highlighted row's name."""
        self.library = load_profiles()
        if self.target.ports is not None:  # the demo's ports stay where they moved when it started
            self.library = self.target.ports.apply(self.library)
        self.profiles = list(self.library)
        self.profile_errors = [str(e) for e in self.library.errors]

    def switch_number(self, number: int) -> None:
        if not 1 <= number <= len(self.profiles):
            self.notify(f"There is no profile {number} (there are {len(self.profiles)}).", severity="warning")
            return
        self.highlight_row(self.profiles[number - 1].name)
        self.servers.request_switch(self.profiles[number - 1].name)

    def ready_link(self) -> HostLink | None:
        """The link, when an action may start now; else None, and a notification says why."""
        link = self.link
        if self.replay is not None:
            self.notify(READ_ONLY, severity="warning")
            return None
        if link is None or not link.connected:
            self.notify("Not connected: wait for the connection to come back.", severity="warning")
            return None
        if self.busy:
            self.notify(f"Wait: {self.busy}.", severity="warning")
            return None
        return link

    # --- several hosts --------------------------------------------------------------------------------------------
    def fleet_view(self, highlight: int):
        return fleet_view(self.hosts, self.current_host, highlight)

    def open_fleet(self) -> None:
        self.push_screen(FleetScreen())

    def enter_host(self, index: int) -> None:
        """Show host ``index`` on the dashboard: its link, profiles and state; what the console held of the
        previous host (switch results, probes, logs) is dropped, and its session's work (topology, probes, demo
        traffic) starts as for a new session. Every host's alerts stay with their host, judged all the time."""
        if index == self.current_host or not 0 <= index < len(self.hosts):
            return
        if self.busy:
            self.notify(f"Wait: {self.busy} on {self.target.label}.", severity="warning")
            return
        host = self.hosts[index]
        old = self.link
        writer = self.recording.writer
        if writer is not None and old is not None and old.recorder is writer:
            old.recorder = None
        self.current_host = index
        self.link, self.target, self.library = host.link, host.target, host.library
        self.profiles = list(self.library)
        self.profile_errors = [str(e) for e in self.library.errors]
        self.selected, self._selected_at = (self.profiles[0].name if self.profiles else None), 0
        if self.profile_filter and self.dashboard is not None:
            self.dashboard.end_profile_filter()
        self.profile_filter = ""
        self.breakeven = snapshots.BreakEvenCache()
        for controller in self.controllers:
            controller.host_changed()
        link = host.link
        if link is not None:
            self.recording.attach(link)
            if writer is not None and link.connected:
                writer.write("session", {"facts": link.facts, "servers": list(link.servers.values())})
            if link.connected:
                for controller in self.controllers:
                    controller.session_opened(link.session, link.reconnects)
        self.notify(f"Host {index + 1} of {len(self.hosts)}: {host.label}"
                    + ("" if link is not None and link.connected else f" ({fleet_row(index + 1, host, current=True).health})"))
        self.refresh_now()

    # --- other screens ---------------------------------------------------------------------------------------------------------------------
    def open_help(self) -> None:
        self.push_screen(HelpScreen())

    def open_gpu_processes(self) -> None:
        self.push_screen(GpuProcsScreen())

    def open_debug_log(self) -> None:
        self.push_screen(DebugLogScreen())

    def open_alerts(self) -> None:
        self.push_screen(AlertsScreen())

    def open_describe(self) -> None:
        """d: the highlighted row's server in full (``spectui servers describe``)."""
        name = self.highlighted_name()
        if name is None or self.link is None or name not in self.link.servers:
            self.notify(f"{name or 'This profile'} has not run on this host: nothing to describe yet (switch to it "
                        "first).", severity="warning")
            return
        self.push_screen(DescribeScreen(name))

    # --- palette --------------------------------------------------------------------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        ours = {keys.palette_title(b).lower() for b in keys.DASHBOARD} if self.dashboard is not None else set()
        # Textual's own (theme, screenshot, ...), less those the console's keys already offer: its Quit runs
        # action_quit, as the console's q does (told by what it runs: Textual 4 titles it "Quit the application")
        yield from (c for c in super().get_system_commands(screen)
                    if c.title.lower() not in ours and c.callback != self.action_quit)
        if self.dashboard is None:
            return
        if len(self.hosts) > 1:  # several hosts: each is a command, as k9s offers its contexts
            for i, host in enumerate(self.hosts):
                yield SystemCommand(f"Host: {host.label}", f"Show {host.label}'s dashboard (host {i + 1} of "
                                    f"{len(self.hosts)}; H lists them all)", lambda i=i: self.enter_host(i))
        for b in keys.DASHBOARD:
            name = b.action.split("(")[0]
            if name not in keys.PALETTE_ACTIONS or (self.replay is not None and name in HOST_ACTIONS):
                continue
            if name == "traffic" and not self.traffic.available:
                continue
            key = keys.key_display(self, b)
            # adopt and import are offered by the footer only on a found server's row; the palette always
            # offers them, and says what to highlight when the row is not one
            run = {"adopt": self.servers.request_adopt, "import_profile": self.servers.request_import}.get(name)
            yield SystemCommand(keys.palette_title(b), escape(f"{b.tooltip} (key: {key})"),
                                run or self._palette_action(b.action))

    def action_command_palette(self) -> None:
        # Not while connecting or refusing a changed host key: nothing there to command.
        if isinstance(self.screen, (ConnectingScreen, HostKeyChangedScreen)):
            return
        super().action_command_palette()

    def _palette_action(self, action: str):
        async def run() -> None:
            await self.run_action(action, self.dashboard)
        return run

    def retry_now(self) -> None:
        """Cut short the wait before the next reconnection attempt (R)."""
        link = self.link
        if link is not None and link.retry_now():
            self.notify("Reconnecting now.")
        elif link is not None and link.connected:
            self.notify("Connected: there is nothing to retry.")
        else:
            self.notify("Not waiting to reconnect: an attempt is under way.")

    def on_unmount(self) -> None:
        self.recording.stop(redraw=False)  # however the console ends, what was recorded is closed and readable

    # --- quitting ---------------------------------------------------------------------------------------------------------------------------
    async def action_quit(self) -> None:
        self.quit_console()

    def quit_console(self) -> None:
        if self._quitting:
            return
        self._quitting = True
        self._quit()

    @work(group="quit", exit_on_error=False)
    async def _quit(self) -> None:
        link = self.link
        note = None
        try:
            if self.replay is not None:
                pass  # nothing ran: nothing to stop or to tell
            elif len(self.hosts) > 1:
                note = await self._quit_hosts()
            elif link is not None and link.connected:
                if self.demo and not self.keep:
                    await self.bench.stop_for_quit()  # what it measured is saved before the servers go
                    self.busy = "stopping the demo servers"
                    self.refresh_now()
                    self.notify("Stopping the simulated servers…", timeout=30)
                    await self.traffic.stop_for_quit()
                    stopped = await link.stop_all()
                    names = [s["name"] for s in stopped]
                    note = ("spectui demo: stopped the simulated servers (" + ", ".join(names) + ")." if names
                            else "spectui demo: no simulated server was running.")
                    others = [s["name"] for s in link.servers.values() if is_external(s) and s.get("state") in LIVE]
                    if others:
                        note += f" Left running (spectui did not start them): {', '.join(others)}."
                else:
                    live = [s for s in link.servers.values() if s.get("state") in LIVE]
                    where = "the simulated host" if self.demo else link.target.label
                    if live:
                        desc = ", ".join(f"{s['name']} ({s['state']}, port {s.get('port')})" for s in live)
                        note = (f"spectui: the servers keep running on {where}: {desc}. "
                                + f"`{self.again.reopen}` re-adopts them; `{self.again.stop}` stops them.")
                    else:
                        note = f"spectui: no server is running on {where}."
                    job = self.bench.job
                    if job is not None and job.active and job.run_id:
                        note += (f" The benchmark run {job.run_id} goes on there; `{self.again.collect}` saves it "
                                 f"when it ends.")
            elif self.demo and not self.keep and link is not None and link.servers:
                note = ("spectui demo: not connected, so the simulated servers could not be stopped; "
                        f"`{self.again.stop}` stops them.")
        except (SpectuiError, OSError) as exc:
            note = f"spectui: while quitting: {exc}"
        finally:
            recorded = self.recording.quit_note()
            self.exit_note = " ".join(n for n in (note or self.exit_note, recorded) if n) or None
            links = [h.link for h in self.hosts if h.link is not None and h.link is not link] + ([link] if link else [])
            for each in links:
                try:
                    await each.close()
                except Exception:  # quitting goes on; the note above already says what is left running
                    logging.getLogger(__name__).warning("closing the connection while quitting failed", exc_info=True)
            self.exit()

    async def _quit_hosts(self) -> str:
        """Quitting with several hosts: the demo stops its simulated servers on each host; on real hosts the servers
        keep running, and the note says what runs where."""
        stopping = self.demo and not self.keep
        if stopping:
            await self.bench.stop_for_quit()
            self.busy = "stopping the demo servers"
            self.refresh_now()
            self.notify("Stopping the simulated servers on every host…", timeout=30)
        async def one(host: FleetHost) -> str | None:
            link = host.link
            if link is None or not link.connected:
                if stopping and link is not None and any(s.get("state") in LIVE for s in link.servers.values()):
                    return f"{host.label}: not connected, so its servers could not be stopped"
                return f"{host.label}: not connected ({host.error})" if host.error else None
            if stopping:
                try:
                    await link.session.client.call("traffic.stop")
                except (AgentCallError, Disconnected):
                    pass  # an agent without traffic: nothing to stop
                names = [s["name"] for s in await link.stop_all()]
                return f"{host.label}: stopped {', '.join(names)}" if names else f"{host.label}: nothing ran"
            live = [s for s in link.servers.values() if s.get("state") in LIVE]
            return f"{host.label}: " + (", ".join(f"{s['name']} ({s['state']}, port {s.get('port')})" for s in live)
                                        + " keep running" if live else "no server running")

        # every host at once: a multi-node server's nodes stop together, as its ranks expect
        notes = [n for n in await asyncio.gather(*(one(h) for h in self.hosts)) if n]
        head = "spectui demo: " if self.demo else "spectui: "
        tail = "" if stopping else f" `{self.again.reopen}` opens them again."
        return head + "; ".join(notes) + "." + tail
