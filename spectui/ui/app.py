"""The spectui console: a Textual app over one :class:`~spectui.core.live.HostLink`.

One long-lived connection worker owns the link (connect, dialogs on errors that need the user,
then the link reconnects on its own). A refresh timer (about 4 Hz, independent of the telemetry
rate) builds one snapshot per panel when the link changed and hands it to the panels that are
visible; panels redraw only when their snapshot differs. Actions (switch, stop, restart, demo
traffic, quit) run as workers and report through notifications and the panels. Benchmarks,
the probe and the source browser are in ``spectui/ui/actions/`` (mixins of the App: their
workers live here too).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from rich.markup import escape
from textual import work
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
from spectui.core.flagcheck import check_on_host
from spectui.core.live import HostLink, LinkState
from spectui.core.profiles import Profile, ProfileLibrary, load_profiles
from spectui.core.servers import is_external, launch_command
from spectui.core.session import HostTarget
from spectui.core.settings import Settings
from spectui.core.textsafe import visible_text
from spectui.ui import derive, keys, snapshots
from spectui.ui.actions.bench import BenchActions
from spectui.ui.actions.found import FoundServerActions
from spectui.ui.actions.probe import ProbeActions
from spectui.ui.actions.source import SourceActions
from spectui.ui.again import AgainCommands
from spectui.ui.draw import Styles
from spectui.ui.gpu_processes import gpu_processes_view
from spectui.ui.logbuffer import LogBuffer
from spectui.ui.palette import ProfileCommands
from spectui.ui.screens.confirm import ConfirmScreen
from spectui.ui.screens.connecting import ConnectingScreen
from spectui.ui.screens.dashboard import DashboardScreen
from spectui.ui.screens.describe import DescribeScreen
from spectui.ui.screens.dialogs import FailureScreen, HostKeyChangedScreen, HostKeyScreen, PassphraseScreen
from spectui.ui.screens.gpuprocs import GpuProcsScreen
from spectui.ui.screens.help import HelpScreen
from spectui.ui.screens.logs import LogScreen
from spectui.ui.usersettings import SettingsInConsole

REFRESH_HZ = 4.0
LOG_POLL_S = 1.0
SERVER_INTERVAL_S = 1.0  # server frames; --telemetry-hz sets the GPU rate only
TELEMETRY_RATES_HZ = (1.0, 2.0, 5.0, 10.0)  # + and - step through these
TRAFFIC_CONCURRENCY = (1, 4, 16)  # c cycles; the first is the default (the story's figures are at 1)
LIVE = snapshots.LIVE


class SpectuiApp(BenchActions, ProbeActions, SourceActions, FoundServerActions, App):
    CSS_PATH = "app.tcss"
    TITLE = "spectui"
    COMMANDS = App.COMMANDS | {ProfileCommands}

    def __init__(self, target: HostTarget, *, library: ProfileLibrary | None = None, keep: bool = False,
                 telemetry_hz: float = 1.0, traffic: bool = True, refresh_hz: float = REFRESH_HZ,
                 history: int = 3600, settings: Settings | None = None, again: AgainCommands | None = None) -> None:
        super().__init__()
        self.target = target
        self.again = again or AgainCommands.of_target(target)  # the commands the quit note suggests
        self.demo = target.kind == "demo"
        self.keep = keep
        self.library = library if library is not None else load_profiles()
        self.profiles: list[Profile] = list(self.library)
        self.profile_errors = [str(e) for e in self.library.errors]
        self.telemetry = telemetry_hz > 0  # 0: no telemetry at all (a CPU baseline, or a slow link)
        self.telemetry_hz = telemetry_hz    # + and - change it on the live link
        self.paused = False                 # z: the panels hold still while telemetry keeps arriving
        self.profile_filter = ""            # F: the profile list shows only the rows this matches
        self.gpu_interval_s = max(0.1, 1.0 / telemetry_hz) if self.telemetry else 1.0
        self._telemetry_session = None
        self.refresh_hz = refresh_hz
        self.history = history
        self.link: HostLink | None = None
        self.highlight = 0
        self.logs: dict[str, LogBuffer] = {}
        self.traffic_available = self.demo
        self.traffic_wanted = self.demo and traffic
        self.traffic_on = False
        self.traffic_concurrency = TRAFFIC_CONCURRENCY[0]
        self.rate_choice = 0  # which accept-rate formula the speculative panel shows first (a cycles)
        self._traffic_session = None
        self.switch_results: dict[str, dict] = {}
        self.switch_errors: dict[str, str] = {}  # a switch the agent refused (port in use, GPUs busy, ...)
        self.switch_started: float | None = None
        self.switch_stopped: str | None = None
        self.busy: str | None = None
        self.exit_note: str | None = None
        self.dashboard: DashboardScreen | None = None
        self.draw_styles = Styles.from_variables({})
        self.refreshes = 0          # snapshots handed to the dashboard (tests and the bench read these)
        self._ui_version = 0
        self._seen: tuple | None = None
        self._connected_seen = False
        self._quitting = False
        self._breakeven = snapshots.BreakEvenCache()
        self._log_poll_running = False
        self.activities: dict[str, tuple[str, float]] = {}  # work the banner shows: a probe, a source fetch
        self._found_highlighted = False  # the footer offers adopt / import while a found server is highlighted
        self.init_bench()
        self.init_probe()
        self.user_settings = SettingsInConsole(self, settings)  # theme and keymap; None: none

    # --- setup ----------------------------------------------------------------------------------------------
    def get_default_screen(self) -> Screen:
        self.dashboard = DashboardScreen()
        return self.dashboard

    def on_mount(self) -> None:
        self.user_settings.apply()
        self._update_styles()
        self.theme_changed_signal.subscribe(self, lambda _theme: self._theme_changed())
        self.push_screen(ConnectingScreen(self.target.label))
        self.set_interval(1.0 / self.refresh_hz, self.tick)
        self.set_interval(LOG_POLL_S, self.poll_logs)
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
        while True:
            link = HostLink(self.target, gpu_interval_s=self.gpu_interval_s,
                            server_interval_s=SERVER_INTERVAL_S, history=self.history)
            self.link = link
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
                choice = await self.push_screen_wait(HostKeyScreen(exc))
                if choice == "once":
                    self.target.ssh.trusted_fingerprints = frozenset(self.target.ssh.trusted_fingerprints) | {exc.fingerprint}
                elif choice == "save":
                    self.target.ssh.accept_new_host_key = True
                else:
                    self.exit_note = f"spectui: {exc}"
                    self.exit(return_code=1)
                    return
            except KeyPassphraseNeeded as exc:
                secret = await self.push_screen_wait(PassphraseScreen(str(exc)))
                if secret is None:
                    self.exit(return_code=1)
                    return
                self.target.ssh.passphrase = secret
            except (SpectuiError, OSError) as exc:
                if self.target.ssh.passphrase is not None and "encrypted" in str(exc):
                    self.target.ssh.passphrase = None  # a wrong passphrase: ask again on retry
                choice = await self.push_screen_wait(FailureScreen(exc, self.target.label))
                if choice != "retry":
                    self.exit_note = f"spectui: {exc}"
                    self.exit(return_code=1)
                    return
            self._connecting_status(f"connecting to {self.target.label}")

    def _connecting_status(self, text: str | None = None) -> None:
        for s in self.screen_stack:
            if isinstance(s, ConnectingScreen):
                s.set_status(text)

    def _on_connected(self) -> None:
        """The first time the link is up: leave the connecting screen, point at the running server."""
        for s in list(self.screen_stack):
            if isinstance(s, ConnectingScreen) and s is self.screen:
                self.pop_screen()
        link = self.link
        ready = [n for n, s in link.servers.items() if s.get("state") in LIVE]
        for i, n in enumerate(self.row_names()):
            if n in ready:
                self.highlight = i
                break
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
        link = self.link
        if link is None:
            return
        if link.connected and not self._connected_seen:
            self._connected_seen = True
            self._on_connected()
        if not self._connected_seen:
            self._connecting_status(link.message if link.state is not LinkState.CLOSED else None)
            return
        if link.connected:
            self.watch_bench_events(link.session)
            self.on_new_session(link.session)
        if link.connected and self.traffic_wanted and link.session is not self._traffic_session \
                and not self.bench_measuring():  # a benchmark gives the traffic back when it ends
            self._traffic_session = link.session
            self.set_traffic(True)
        if link.connected and not self.telemetry and link.session is not self._telemetry_session:
            self._telemetry_session = link.session
            self._telemetry_off()
        screen = self.screen
        if isinstance(screen, (LogScreen, DescribeScreen)):
            screen.sync()
        elif isinstance(screen, GpuProcsScreen):
            screen.show(self.header_view(), None if self.paused else gpu_processes_view(link))
        self.sync_bench()
        if not self.dashboard_visible():
            return
        key = (link.version, self._ui_version, int(time.monotonic()))
        if key == self._seen:
            return
        self._seen = key
        self.refreshes += 1
        if self.paused:  # the header says so and the banner keeps the connection's news; the rest holds still
            self.dashboard.show({"banner": snapshots.banner_view(link, self.activity_text()),
                                 "header": self.header_view()})
            return
        self.dashboard.show(self.build_views())

    def refresh_now(self) -> None:
        """Redraw at once after a key (the timer would take up to a quarter second)."""
        self._ui_version += 1
        self.tick()

    def build_views(self) -> dict[str, object]:
        link = self.link
        rows = len(self.row_names())
        if rows and self.highlight >= rows:  # a found server's row went away under the highlight
            self.highlight = rows - 1
        name = self.focus()
        profile = self.library.profiles.get(name) if name else None
        switching = (link.switch.target if link.switch and link.switch.stage not in derive.FINAL
                     and link.switch.target not in self.switch_errors else None)
        views: dict[str, object] = {
            "banner": snapshots.banner_view(link, self.activity_text()),
            "header": self.header_view(),
            "profiles": snapshots.profiles_view(link, self.profiles, self.highlight, self.profile_errors, switching,
                                                self.marked, self.compare_baseline(), self.found_servers(),
                                                self.profile_filter),
            "gpus": snapshots.gpu_view(link),
            "server": snapshots.server_view(link, name, profile, switch_result=self.switch_results.get(name or ""),
                                            switch_started=self.switch_started, stopped_name=self.switch_stopped,
                                            switch_error=self.switch_errors.get(name or "")),
        }
        algorithms = {n: snapshots.profile_algorithm(link.servers.get(n), self.library.profiles.get(n), s.latest)
                      for n, s in link.series.items()}
        be, why = self._breakeven.explain(link, name, algorithms) if name else (None, "")
        predicted = snapshots.predicted_view(self.probes.get(name)) if name else None
        views["spec"] = snapshots.spec_view(link, name, profile, be, why, predicted, rate_choice=self.rate_choice)
        views["throughput"] = snapshots.throughput_view(link, name)
        buf = self.logs.get(name) if name else None
        views["logtail"] = snapshots.log_tail_view(name, buf.tail(snapshots.LOG_TAIL) if buf and buf.offset is not None
                                                   else None, buf.error if buf else None, not link.connected)
        unread = snapshots.unreadable_log(link.servers.get(name)) if name else None
        if unread:
            views["logtail"] = snapshots.log_tail_view(name, (), unread, not link.connected)
        found = self.found_record(self.highlighted_name()) is not None
        if found != self._found_highlighted and self.dashboard is not None:
            self._found_highlighted = found
            self.dashboard.refresh_bindings()
        return views

    def header_view(self):
        link = self.link
        return snapshots.header_view(link, traffic=self.traffic_on if self.traffic_available else None,
                                     busy=None if self.bench_measuring() else self.busy,  # the banner says
                                     interconnect=self.interconnect,
                                     traffic_paused=self.bench_measuring() and self.traffic_wanted,
                                     traffic_streams=self.traffic_concurrency,
                                     telemetry_hz=self.telemetry_hz if self.telemetry else None, paused=self.paused)

    # --- pause, telemetry rate, profile filter ------------------------------------------------------------------------
    def toggle_pause(self) -> None:
        """z: hold the panels still (telemetry keeps arriving), or let them catch up."""
        self.paused = not self.paused
        self.notify("Display paused: telemetry keeps arriving; press z again to catch up." if self.paused
                    else "Display resumed.")
        self.refresh_now()

    def step_telemetry_rate(self, step: int) -> None:
        """+ and -: the next GPU telemetry rate of TELEMETRY_RATES_HZ, applied to the live link."""
        if not self.telemetry:
            self.notify("GPU telemetry is off (--telemetry-hz 0); start spectui with a rate to change it.",
                        severity="warning")
            return
        hz = self.telemetry_hz
        choices = [r for r in TELEMETRY_RATES_HZ if (r > hz if step > 0 else r < hz)]
        if not choices:
            end = "fastest" if step > 0 else "slowest"
            self.notify(f"GPU telemetry is at {hz:g} Hz, the {end} offered here.", severity="warning")
            return
        self.telemetry_hz = choices[0] if step > 0 else choices[-1]
        self.gpu_interval_s = 1.0 / self.telemetry_hz
        self._apply_telemetry_rate(self.gpu_interval_s)
        self.refresh_now()

    @work(group="telemetry-rate", exclusive=True, exit_on_error=False)
    async def _apply_telemetry_rate(self, interval_s: float) -> None:
        link = self.link
        if link is None:
            return
        try:
            got = await link.set_gpu_interval(interval_s)
            self.notify(f"GPU telemetry: {1.0 / got:g} Hz.")
        except (SpectuiError, OSError) as exc:
            self.notify(f"GPU telemetry stays at the old rate until the connection is back ({exc}); "
                        f"it then runs at {1.0 / interval_s:g} Hz.", severity="warning")
        self.refresh_now()

    def set_profile_filter(self, text: str) -> None:
        """F: show only the profile rows ``text`` matches, keeping the highlighted row where it is still shown."""
        name = self.highlighted_name()
        self.profile_filter = text
        names = self.row_names()
        self.highlight = names.index(name) if name in names else 0
        self.refresh_now()

    def highlight_row(self, name: str) -> None:
        """Highlight ``name``'s row; a profile filter that hides it ends."""
        if name not in self.row_names() and self.profile_filter:
            if self.dashboard is not None:
                self.dashboard.end_profile_filter()
            self.profile_filter = ""
        names = self.row_names()
        if name in names:
            self.highlight = names.index(name)
            self.refresh_now()

    # --- logs -----------------------------------------------------------------------------------------------------------
    def _log_target(self) -> str | None:
        try:
            screen = self.screen
        except ScreenStackError:  # the app is closing: a timer may still fire
            return None
        if isinstance(screen, LogScreen):
            return screen.buffer.name
        if self.dashboard_visible() and self.dashboard.query_one("#bottom").display \
                and not self.dashboard.has_class("compact"):
            return self.focus()
        return None

    def poll_logs(self) -> None:
        link = self.link
        if link is None or not link.connected or self._log_poll_running:
            return
        name = self._log_target()
        if name is None or name not in link.servers or snapshots.unreadable_log(link.servers[name]):
            return
        self._log_poll_running = True
        self._fetch_log(name)

    @work(group="logs", exit_on_error=False)
    async def _fetch_log(self, name: str) -> None:
        buf = self.logs.setdefault(name, LogBuffer(name))
        first = buf.offset is None
        try:
            if first:
                reply = await self.link.control().logs(name, lines=2000)
            else:
                reply = await self.link.control().logs(name, offset=buf.offset)
            if buf.feed(reply) or first:
                self._ui_version += 1
        except AgentCallError as exc:
            if buf.error != str(exc):
                buf.error = str(exc) if exc.code != "no_log" else "no log yet"
                self._ui_version += 1
        except (Disconnected, SpectuiError):
            pass
        finally:
            self._log_poll_running = False

    # --- profiles and highlight ---------------------------------------------------------------------------------------------
    def highlighted_name(self) -> str | None:
        """The highlighted row: a profile, or a server spectui found running (the rows after the profiles)."""
        names = self.row_names()
        if 0 <= self.highlight < len(names):
            return names[self.highlight]
        return None

    def focus(self) -> str | None:
        """The server the server, speculative, throughput and log panels follow."""
        return snapshots.focus_name(self.link, self.highlighted_name(), self.switch_errors)

    def profile_algorithm_of(self, name: str) -> str | None:
        link = self.link
        series = link.series.get(name) if link else None
        return snapshots.profile_algorithm(link.servers.get(name) if link else None, self.library.profiles.get(name),
                                           series.latest if series else None)

    def profile_states(self) -> list[tuple[str, str]]:
        servers = self.link.servers if self.link is not None else {}
        return [(p.name, (servers.get(p.name) or {}).get("state", "stopped")) for p in self.profiles]

    def move_highlight(self, step: int) -> None:
        rows = len(self.row_names())
        if rows:
            self.highlight = max(0, min(rows - 1, self.highlight + step))  # stops at the ends, as htop and k9s do
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
        self.request_switch(self.profiles[number - 1].name)

    def _ready_link(self) -> HostLink | None:
        link = self.link
        if link is None or not link.connected:
            self.notify("Not connected: wait for the connection to come back.", severity="warning")
            return None
        if self.busy:
            self.notify(f"Wait: {self.busy}.", severity="warning")
            return None
        return link

    # --- switch ------------------------------------------------------------------------------------------------------------------
    def request_switch(self, name: str) -> None:
        link = self._ready_link()
        if link is None:
            return
        profile = self.library.profiles.get(name)
        if profile is None and self.found_record(name) is not None:
            self.notify(f"{name} is a server spectui did not start, not a profile: x stops it, A adopts it, "
                        f"I imports a profile from it.", severity="warning")
            return
        if profile is None:
            self.notify(f"There is no profile named {name}.", severity="error")
            return
        current = link.servers.get(name)
        if current and current.get("state") == "ready" and current.get("profile_hash") == profile.content_hash:
            self.notify(f"{name} is already running and ready.")
            return
        try:
            command = launch_command(profile, link.session)
        except SpectuiError as exc:
            self.notify(str(exc), severity="error")
            return
        self._plan_switch_then_confirm(profile, command)

    @work(group="action", exit_on_error=False)
    async def _switch(self, profile: Profile, stopping: list[str], stop_external: list[list[int]] | None = None) -> None:
        link = self.link
        if link is None or self.busy:
            return
        self.busy = f"switching to {profile.name}"
        self.switch_started = time.monotonic()
        self.switch_stopped = ", ".join(n for n in stopping if n != profile.name) or None
        self.switch_results.pop(profile.name, None)
        self.switch_errors.pop(profile.name, None)
        self.highlight_row(profile.name)
        self.refresh_now()
        try:
            problems = await check_on_host(link.session, profile)
            if problems:
                self.notify(f"{profile.name} was not launched: {problems[0]}", severity="error", timeout=15)
                return
            result = await link.switch_to(profile, stop_external=stop_external)
            self.switch_results[profile.name] = result
            server = result.get("server") or {}
            if server.get("state") in ("failed", "crashed", "unresponsive"):
                self.notify(f"{profile.name} {server['state']}: {server.get('reason') or 'see its log (l)'}",
                            severity="error", timeout=15)
            elif server.get("state") == "ready":
                self.notify(f"{profile.name} is ready ({result.get('total_s', 0):.1f} s).")
            else:
                self.notify(f"{profile.name}: {server.get('state')}", severity="warning")
        except (SpectuiError, OSError) as exc:
            self.switch_errors[profile.name] = str(exc)
            if not self.notify_benchmarked(exc, "Switch refused"):
                self.notify(str(exc), severity="error", timeout=15)
        finally:
            self.busy = None
            self.refresh_now()

    # --- stop and restart -------------------------------------------------------------------------------------------------------
    def _shown_server(self, name: str | None) -> dict | None:
        name = name or self.focus()
        return self.link.servers.get(name) if name else None

    def request_stop(self, name: str | None = None) -> None:
        link = self._ready_link()
        if link is None:
            return
        rec = self._shown_server(name)
        if rec is None or rec.get("state") not in LIVE:
            self.notify(f"{name or (rec or {}).get('name') or 'No server'} is not running.", severity="warning")
            return
        if self.found_record(rec["name"]) is not None:
            self.request_stop_found(rec)
            return
        grace = 20
        lines = [f"{rec['name']} is {rec['state']} (pid {rec.get('pid')}, port {rec.get('port')}).",
                 f"It gets SIGTERM, then SIGKILL after {grace} s if it is still there; spectui waits until its GPU "
                 f"memory is free."]
        command = f"kill -TERM -- -{rec.get('pgid') or rec.get('pid')}"

        def answered(yes: bool | None) -> None:
            if yes:
                self._stop(rec["name"])

        self.push_screen(ConfirmScreen(f"Stop {rec['name']}?", lines, command, yes="Stop"), answered)

    @work(group="action", exit_on_error=False)
    async def _stop(self, name: str, confirmed: list[list[int]] | None = None) -> None:
        """Stop server ``name``; ``confirmed``: the processes of a found server's plan the operator saw."""
        if self.busy:
            return
        self.busy = f"stopping {name}"
        self.refresh_now()
        try:
            r = await self.link.stop(name, confirmed=confirmed)
            st = r.get("stop") or {}
            self.notify(f"{name} stopped ({st.get('exit_s', 0):.1f} s, GPU memory free after "
                        f"{st.get('release_s', 0):.1f} s).")
        except (SpectuiError, OSError) as exc:
            if not self.notify_benchmarked(exc, "Stop refused"):
                self.notify(str(exc), severity="error", timeout=15)
        finally:
            self.busy = None
            self.refresh_now()

    def request_restart(self) -> None:
        link = self._ready_link()
        if link is None:
            return
        rec = self._shown_server(None)
        if rec is None:
            self.notify("No server to restart: switch to a profile first.", severity="warning")
            return
        profile = self.library.profiles.get(rec["name"])
        if profile is None:
            self.notify(f"{rec['name']} has no profile here, so it cannot be restarted from spectui.", severity="error")
            return
        command = launch_command(profile, link.session)
        lines = [f"{rec['name']} is {rec['state']}" + (f" (pid {rec.get('pid')})." if rec.get("pid") else ".")]
        if rec.get("state") in LIVE:
            lines.append("It is stopped first (SIGTERM, then SIGKILL after 20 s), then started again.")

        def answered(yes: bool | None) -> None:
            if yes:
                self._restart(profile)

        self.push_screen(ConfirmScreen(f"Restart {rec['name']}?", lines, command, yes="Restart"), answered)

    @work(group="action", exit_on_error=False)
    async def _restart(self, profile: Profile) -> None:
        if self.busy:
            return
        self.busy = f"restarting {profile.name}"
        self.switch_started = time.monotonic()
        self.switch_stopped = None
        self.switch_results.pop(profile.name, None)
        self.switch_errors.pop(profile.name, None)
        self.refresh_now()
        try:
            result = await self.link.restart(profile)
            self.switch_results[profile.name] = result
            server = result.get("server") or {}
            self.notify(f"{profile.name}: {server.get('state')}",
                        severity="information" if server.get("state") == "ready" else "error")
        except (SpectuiError, OSError) as exc:
            self.switch_errors[profile.name] = str(exc)
            if not self.notify_benchmarked(exc, "Restart refused"):
                self.notify(str(exc), severity="error", timeout=15)
        finally:
            self.busy = None
            self.refresh_now()

    @work(group="telemetry", exit_on_error=False)
    async def _telemetry_off(self) -> None:
        for method in ("gpu.unsubscribe", "server.telemetry.unsubscribe"):
            try:
                await self.link.session.client.call(method)
            except (AgentCallError, Disconnected):
                pass

    # --- demo traffic ------------------------------------------------------------------------------------------------------------------
    def toggle_traffic(self) -> None:
        if not self.traffic_available:
            self.notify("spectui sends no requests to a real host's servers unless asked (benchmarks).",
                        severity="warning")
            return
        if self.bench_measuring():
            self.notify("The demo traffic stays paused while the benchmark measures; it comes back when it ends.",
                        severity="warning")
            return
        self.traffic_wanted = not self.traffic_wanted
        self.set_traffic(self.traffic_wanted)

    def cycle_traffic_concurrency(self) -> None:
        if not self.traffic_available:
            self.notify("spectui sends no requests to a real host's servers unless asked (benchmarks).",
                        severity="warning")
            return
        i = TRAFFIC_CONCURRENCY.index(self.traffic_concurrency) if self.traffic_concurrency in TRAFFIC_CONCURRENCY else -1
        self.traffic_concurrency = TRAFFIC_CONCURRENCY[(i + 1) % len(TRAFFIC_CONCURRENCY)]
        n = self.traffic_concurrency
        self.notify(f"Demo traffic: {n} concurrent request{'s' if n > 1 else ''}"
                    + ("" if self.traffic_wanted else " (press t to turn it on)"))
        if self.traffic_wanted and not self.bench_measuring():
            self.set_traffic(True)

    def cycle_rate_formula(self) -> None:
        self.rate_choice += 1
        self.refresh_now()

    @work(group="traffic", exclusive=True, exit_on_error=False)
    async def set_traffic(self, on: bool) -> None:
        link = self.link
        if link is None or not link.connected:
            return
        try:
            if on:
                await link.session.client.call("traffic.start", {"concurrency": self.traffic_concurrency})
            else:
                await link.session.client.call("traffic.stop")
            self.traffic_on = on
        except AgentCallError as exc:
            self.traffic_on = False
            self.notify(f"Demo traffic: {exc}", severity="warning")
        except (Disconnected, SpectuiError):
            self.traffic_on = False
        self.refresh_now()

    # --- other screens ---------------------------------------------------------------------------------------------------------------------
    def open_help(self) -> None:
        self.push_screen(HelpScreen())

    def open_gpu_processes(self) -> None:
        self.push_screen(GpuProcsScreen())

    def open_describe(self) -> None:
        """d: the highlighted row's server in full (``spectui servers describe``)."""
        name = self.highlighted_name()
        if name is None or self.link is None or name not in self.link.servers:
            self.notify(f"{name or 'This profile'} has not run on this host: nothing to describe yet (switch to it "
                        "first).", severity="warning")
            return
        self.push_screen(DescribeScreen(name))

    def open_logs(self) -> None:
        name = self.focus() if self.link else None
        if name is None or self.link is None or name not in self.link.servers:
            self.notify("No server log to show yet: switch to a profile first.", severity="warning")
            return
        self.push_screen(LogScreen(self.logs.setdefault(name, LogBuffer(name))))
        self.poll_logs()

    # --- palette --------------------------------------------------------------------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        ours = {keys.palette_title(b).lower() for b in keys.DASHBOARD} if self.dashboard is not None else set()
        # Textual's own (theme, screenshot, ...), less those the console's keys already offer (Quit)
        yield from (c for c in super().get_system_commands(screen) if c.title.lower() not in ours)
        if self.dashboard is None:
            return
        for b in keys.DASHBOARD:
            name = b.action.split("(")[0]
            if name not in keys.PALETTE_ACTIONS:
                continue
            if name == "traffic" and not self.traffic_available:
                continue
            key = keys.key_display(self, b)
            # adopt and import are offered by the footer only on a found server's row; the palette always
            # offers them, and says what to highlight when the row is not one
            run = {"adopt": self.request_adopt, "import_profile": self.request_import}.get(name)
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
            if link is not None and link.connected:
                if self.demo and not self.keep:
                    await self.stop_bench_for_quit()  # what it measured is saved before the servers go
                    self.busy = "stopping the demo servers"
                    self.refresh_now()
                    self.notify("Stopping the simulated servers…", timeout=30)
                    try:
                        await link.session.client.call("traffic.stop")
                    except (AgentCallError, Disconnected):
                        pass
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
                    job = self.bench_job
                    if job is not None and job.active and job.run_id:
                        note += (f" The benchmark run {job.run_id} goes on there; `{self.again.collect}` saves it "
                                 f"when it ends.")
            elif self.demo and not self.keep and link is not None and link.servers:
                note = ("spectui demo: not connected, so the simulated servers could not be stopped; "
                        f"`{self.again.stop}` stops them.")
        except (SpectuiError, OSError) as exc:
            note = f"spectui: while quitting: {exc}"
        finally:
            self.exit_note = note or self.exit_note
            if link is not None:
                try:
                    await link.close()
                except Exception:
                    pass
            self.exit()
