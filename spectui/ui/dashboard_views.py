"""What the dashboard shows: one snapshot per panel, built from the shown host's console and the screen's
state, handed to the panels that are visible. Part of :class:`spectui.ui.app.SpectuiApp`."""

from __future__ import annotations

import dataclasses
import sys
import time

from textual.app import ScreenStackError
from textual.screen import ModalScreen

from spectui.core.live import LinkState
from spectui.core.profiles import Profile
from spectui.ui import snapshots
from spectui.ui.fleet import node_hosts


PANELS = frozenset({"banner", "header", "profiles", "gpus", "server", "spec", "throughput", "logtail"})
SCREENS = frozenset({"fleet", "log", "bench"})  # what other screens show: every host's row, a log, a benchmark
EVERYTHING = PANELS | SCREENS
CLOCK_S = 1.0   # what shows an age, an uptime or a clock moves this often; nothing else redraws by itself


def showing(screen, module: str, name: str) -> bool:
    """Whether ``screen`` is the screen ``name`` of ``spectui.ui.screens.MODULE``. A screen that only a key opens
    is loaded when first opened: while its module is not loaded, no screen is one of it (asking loads nothing)."""
    loaded = sys.modules.get(f"spectui.ui.screens.{module}")
    return loaded is not None and isinstance(screen, getattr(loaded, name))


class DashboardViews:
    """Each change marks what it changes (panels by name, :data:`SCREENS`); one redraw, no sooner than the
    refresh rate allows after the last, draws what was marked. Nothing happening draws nothing."""

    _dirty: set[str]
    _redraw_timer = None
    _drawn_at = float("-inf")

    # --- refresh -------------------------------------------------------------------------------------------------
    def dashboard_visible(self) -> bool:
        for s in reversed(self.screen_stack):
            if s is self.dashboard:
                return True
            if not isinstance(s, ModalScreen):
                return False
        return False

    def changed(self, what: frozenset[str] | set[str] = EVERYTHING) -> None:
        """``what`` changed (panel names, :data:`SCREENS`; default: everything): one redraw draws all that
        changed, no sooner than the refresh rate after the last one."""
        self._dirty.update(what)
        if self._redraw_timer is not None or not self.is_running:
            return
        wait = self._drawn_at + 1.0 / self.refresh_hz - time.perf_counter()
        if wait > 0:
            self._redraw_timer = self.set_timer(wait, self.redraw, name="redraw")
        else:
            self._redraw_timer = True
            self.call_after_refresh(self.redraw)

    def mark(self, what: frozenset[str] | set[str]) -> None:
        """``what`` changed but asks for no redraw of its own: the next redraw draws it."""
        self._dirty.update(what)

    def refresh_now(self) -> None:
        """Redraw everything at once (after a key; the coalesced redraw would take up to a refresh period)."""
        self._dirty.update(EVERYTHING)
        self.redraw()

    def redraw(self) -> None:
        """Draw what was marked changed."""
        if self._redraw_timer not in (None, True):
            self._redraw_timer.stop()
        self._redraw_timer = None
        try:
            screen = self.screen
        except ScreenStackError:  # the console is closing: Textual stops its timers after the screens
            return
        dirty = self._dirty
        if showing(screen, "fleet", "FleetScreen") and "fleet" in dirty:
            screen.sync()
        dirty.discard("fleet")
        link = self.link
        if link is None or (not self._connected_seen and len(self.hosts) == 1):
            return  # drew nothing: the first draw once connected waits on no refresh period
        self._drawn_at = time.perf_counter()
        if showing(screen, "logs", "LogScreen") and "log" in dirty:
            screen.sync()
        elif showing(screen, "describe", "DescribeScreen"):
            screen.sync()
        elif showing(screen, "gpuprocs", "GpuProcsScreen"):
            from spectui.ui.gpu_processes import gpu_processes_view  # loaded with its screen
            screen.show(self.header_view(), None if self.paused else gpu_processes_view(link))
        dirty.discard("log")
        if dirty & {"bench", "banner"}:
            self.bench.sync(draw="bench" in dirty)
        dirty.discard("bench")
        if not self.dashboard_visible() or not dirty & PANELS:
            return  # what the dashboard did not show stays marked: it is drawn when it shows again
        self.logs.follow()
        self.refreshes += 1
        if self.paused:  # the header says so and the banner keeps the connection's news; the rest holds still
            self.dashboard.show(self.build_views(dirty & {"banner", "header"}))
        else:
            self.dashboard.show(self.build_views(dirty))
        dirty.clear()

    def clock(self) -> None:
        """Once a second: judge every host's alerts, keep a recording flushed, follow the log shown, and redraw
        only what shows an age, an uptime or a clock now."""
        try:
            screen = self.screen
        except ScreenStackError:  # the console is closing
            return
        for console in self.hosts:
            console.judge_alerts()
        self.recording.sync()
        if showing(screen, "fleet", "FleetScreen"):
            screen.sync()  # each host's retry and age
        link = self.link
        if link is None:
            return
        if not self._connected_seen and len(self.hosts) == 1:
            self._connecting_status()  # its clock
            return
        self.logs.follow()
        ageing = self.ageing()
        if ageing:
            self.changed(ageing)

    def ageing(self) -> set[str]:
        """What shows a time that moves now: a running server's uptime or a switch's clock, a frame that turns
        stale, the host's silence, the recording's clock, work going on, a benchmark's clock, a firing alert."""
        link, what = self.link, set()
        if self.recording.writer is not None:
            what.add("header")
        age = link.reply_age_s() if link.connected else None
        if age is not None and age >= snapshots.REPLY_LATE_S - CLOCK_S:
            what.add("header")
        if link.state is LinkState.RECONNECTING or self.replay is not None or self.activity_text() or \
                self.host.alerts.active:  # a firing alert's value, judged once a second
            what.add("banner")
        if self.replay is not None:
            what.add("header")  # where the replay is (playing, paused, at its end), as the banner says
        if self.bench.measuring() or self.tune.active:
            what.add("bench")
        name = self.focus()
        if (name and (link.servers.get(name) or {}).get("state") in snapshots.LIVE) or \
                self.host.switches.switching_to(link):
            what.update(("server", "profiles"))
        if link.connected and self._frames_ageing(link, name):
            what.update(("gpus", "spec", "throughput"))
        return what

    @staticmethod
    def _frames_ageing(link, name: str | None) -> bool:
        """A frame shown will turn stale soon (an older one already is: it shows so until the next arrives)."""
        now = link.now()
        frames = [link.gpu] + ([link.series[name].latest] if name in link.series else [])
        window = max(5.0, 4 * link.server_interval_s, 3 * link.gpu_interval_s) + 2 * CLOCK_S
        return any(f is not None and now - f.received_at <= window for f in frames)

    def build_views(self, panels: frozenset[str] | set[str] = PANELS) -> dict[str, object]:
        """The snapshots of ``panels`` (default: all) of the shown host."""
        link = self.link
        name = self.focus()
        profile = self.library.profiles.get(name) if name else None
        views: dict[str, object] = {}
        if "banner" in panels:
            views["banner"] = self.banner_view()
        if "header" in panels:
            views["header"] = self.header_view()
        if "profiles" in panels:
            views["profiles"] = self.profiles_view()
        if "gpus" in panels:
            views["gpus"] = self.gpu_view(profile)
        if "server" in panels:
            views["server"] = self.server_view(name, profile)
        if "spec" in panels:
            algorithms = {n: snapshots.profile_algorithm(link.servers.get(n), self.library.profiles.get(n),
                                                         s.latest) for n, s in link.series.items()}
            be, why = snapshots.l_star_of(self.host.step_times.steps(link, algorithms), name) if name else (None, "")
            predicted = snapshots.predicted_view(self.host.probes.get(name)) if name else None
            views["spec"] = snapshots.spec_view(link, name, profile, be, why, predicted, rate_choice=self.rate_choice)
        if "throughput" in panels:
            views["throughput"] = snapshots.throughput_view(link, name)
        if "logtail" in panels:
            views["logtail"] = self.log_tail_view(name)
        found = self.servers.found_record(self.highlighted_name()) is not None
        if found != self._found_highlighted and self.dashboard is not None:
            self._found_highlighted = found
            self.dashboard.refresh_bindings()
        return views

    def server_view(self, name: str | None, profile: Profile | None):
        switches = self.host.switches
        server = snapshots.server_view(self.link, name, profile, switch_result=switches.results.get(name or ""),
                                       switch_started=switches.started, stopped_name=switches.stopping,
                                       switch_error=switches.errors.get(name or ""))
        gone = self.gone_name()
        if gone is not None and name == gone:
            server = dataclasses.replace(server, hint=f"{gone} is no longer on the host: it stopped and was forgotten "
                                                      "(j and k select another row)")
        return server

    def log_tail_view(self, name: str | None):
        link = self.link
        unread = snapshots.unreadable_log(link.servers.get(name)) if name else None
        if unread:
            return snapshots.log_tail_view(name, (), unread, not link.connected)
        buf = self.host.logs.tail(name)
        return snapshots.log_tail_view(name, buf.tail(snapshots.LOG_TAIL) if buf and buf.offset is not None
                                       else None, buf.error if buf else None, not link.connected)

    def profiles_view(self):
        """The profile rows, then the group of found servers under its heading."""
        servers, bench = self.servers, self.bench
        group = servers.group()
        view = snapshots.profiles_view(self.link, self.profiles, self.highlight, self.host.profile_errors,
                                       servers.switching_to(), bench.marked, bench.compare_baseline(),
                                       group.listed, self.profile_filter)
        heading = group.view and dataclasses.replace(group.view, at=sum(1 for r in view.rows if r.origin is None))
        return dataclasses.replace(view, group=heading, gone=self.gone_name())

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
                                     interconnect=self.host.interconnect,
                                     traffic_paused=traffic.paused_by_bench(),
                                     traffic_streams=traffic.concurrency, traffic_note=traffic.line(),
                                     telemetry_hz=telemetry.hz if telemetry.on and self.replay is None else None,
                                     paused=self.paused, recording=self.recording.header_text())

    def banner_view(self):
        """The connection's trouble, a firing alert, or work going on; in a replay, its time line first."""
        if self.replay is not None:
            return snapshots.replay_banner(self.replay, self.alerts.banner(), self.activity_text())
        return snapshots.banner_view(self.link, self.activity_text(), self.alerts.banner())

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
