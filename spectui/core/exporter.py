"""Live Prometheus metrics of one or several hosts (``spectui exporter``).

Each host has its own :class:`~spectui.core.live.HostLink` (the console's link, without the console): the agent's
server frames and GPU samples arrive as they do in the console, and about once a second each host's break-even L*
is worked out and its alert rules (:mod:`spectui.core.alerts`) judged, as the console judges them. A scrape reads
what the links hold at that moment: nothing is measured on a scrape, so a fast scrape costs the host nothing.

Metric names (every series carries ``host``, the host's label; docs/exporter.md lists them with their labels)
are those ``spectui recording export --format prometheus`` writes (:mod:`spectui.core.recording_export`), so the
shipped Grafana dashboard reads a live exporter and a backfilled recording alike.

The break-even L* is the one the console's speculative panel shows: measured on the host (a plain server and the
speculative one, each at one request: ``L* = speculative step time / plain step time``,
:func:`spectui.core.breakeven.break_even`), else predicted by the host's latest probe of the profile in the
history. The measured one rests on the step times the console keeps (:mod:`spectui.core.console.steptimes`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from spectui.agent.protocol import SERVER_STATES, Method, ServerState
from spectui.core.aio import within
from spectui.core.alerts import FIGURE_RULES, AlertEngine, inputs_from_link
from spectui.core.breakeven import break_even
from spectui.core.console.steptimes import StepTimes
from spectui.core.live import HostLink
from spectui.core.recording_export import HELP, MIB, UNITS, finite_number, latency
from spectui.core.server_frames import Measured, ServerFrame

log = logging.getLogger(__name__)

DEFAULT_PORT = 9464
EVALUATE_EVERY_S = 1.0
FRAME_FRESH_S = 10.0   # a server's latest frame older than this gives no figures (its last values are not live)

# --- the measured L*, from a link's series ----------------------------------------------------------------------
def algorithm(record: dict | None, frame: ServerFrame | None, profile: Any = None) -> str | None:
    """A server's speculative algorithm: its frame's, else its record's (a found server's argv, or the profile it
    was started with), else its profile's."""
    if frame is not None and frame.speculative:
        return frame.speculative.get("algorithm") or None
    record = record or {}
    spec = record.get("speculative")
    if isinstance(spec, dict) and spec:
        return str(spec["algorithm"]) if spec.get("algorithm") else None
    args = (record.get("profile") or {}).get("args") if isinstance(record.get("profile"), dict) else None
    if isinstance(args, dict):
        return str(args["speculative-algorithm"]) if args.get("speculative-algorithm") else None
    return getattr(profile, "algorithm", None)


def measured_l_stars(link: HostLink, algorithms: dict[str, str | None], steps: StepTimes) -> dict[str, float]:
    """The measured L* of each speculative server of ``link``, where a plain server and it were both measured at
    one request (the plain server with the most such frames), as the console's speculative panel gives it."""
    times = steps.steps(link, algorithms)
    bases = sorted((st for algo, st in times.values() if not algo and st is not None), key=lambda b: -b[1])
    if not bases:
        return {}
    out = {}
    for name, (algo, st) in times.items():
        value = break_even(st[0], bases[0][0]) if algo and st is not None else None
        if value is not None:
            out[name] = round(value, 2)
    return out


def predicted_l_star(record: dict | None) -> float | None:
    """The predicted L* of a probe history record (``spectui.core.probe.history_record``)."""
    row = (record or {}).get("profile_l_star") or {}
    value = row.get("predicted")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# --- one host ------------------------------------------------------------------------------------------------------
@dataclass
class WatchedHost:
    """A host the exporter watches: its link, its alert engine, its L* per server (with where it came from) and
    the state of each alert it judges (1 firing, else 0; one that ended stays, at 0, as in a recording's export)."""

    link: HostLink
    library: Any = None
    alerts: AlertEngine = field(default_factory=AlertEngine)
    probes: dict[str, dict] = field(default_factory=dict)
    l_stars: dict[str, tuple[float, str]] = field(default_factory=dict)
    alert_seen: dict[tuple[str, str], float] = field(default_factory=dict)
    steps: StepTimes = field(default_factory=StepTimes)   # the servers' step times at one request
    traffic: bool = False                  # the demo: send its background load to the newest ready server
    _traffic_session: object = None

    @property
    def label(self) -> str:
        """The host's ``host`` label: its target's label, as a recording's header names it."""
        return self.link.target.label

    def _profile(self, name: str):
        return self.library.profiles.get(name) if self.library is not None else None

    def algorithms(self) -> dict[str, str | None]:
        link = self.link
        return {n: algorithm(link.servers.get(n), s.latest, self._profile(n)) for n, s in list(link.series.items())}

    def evaluate(self, now: float) -> None:
        """Work out each server's L* (measured, else predicted) and judge the alert rules once."""
        algorithms = self.algorithms()
        measured = measured_l_stars(self.link, algorithms, self.steps)
        l_stars: dict[str, tuple[float, str]] = {}
        for name, algo in algorithms.items():
            if not algo:
                continue
            if name in measured:
                l_stars[name] = (measured[name], "measured")
            elif (value := predicted_l_star(self.probes.get(name))) is not None:
                l_stars[name] = (value, "predicted")
        self.l_stars = l_stars
        if not self.link.connected:
            return   # a link that is not connected holds its alerts as they were (as the console)
        self.alerts.evaluate(now, inputs_from_link(self.link, l_stars, now=now))
        self.alert_seen = {key: 0.0 for key in (*self.alert_seen, *self.watched_alerts())}
        for key in self.alerts.active:
            self.alert_seen[key] = 1.0

    def watched_alerts(self) -> list[tuple[str, str]]:
        """Every (rule, subject) the enabled rules judge now: each server's rules (servers spectui only found are
        not judged) and each GPU's memory; one that has not fired reads 0."""
        rules = {r for r, c in self.alerts.config.rules.items() if c.enabled}
        link = self.link
        out = [(rule, name) for name in sorted(set(link.servers) | set(link.series))
               if (link.servers.get(name) or {}).get("origin") != "external"
               for rule in (*FIGURE_RULES, "server_down") if rule in rules]
        if "gpu_memory" in rules and link.gpu is not None:
            out += [("gpu_memory", f"GPU {g.index}") for g in link.gpu.gpus]
        return out

    def load_probes(self, host: str) -> None:
        """The latest probe of each profile on this host in the history (the predicted L*); none when the history
        cannot be read."""
        import sqlite3

        from spectui.core.errors import SpectuiError
        from spectui.core.history import HistoryStore

        if self.library is None:
            return
        try:
            store = HistoryStore()
            for p in self.library:
                rec = store.latest_probe(host, p.name, p.content_hash)
                if rec is not None:
                    self.probes[p.name] = rec
        except (OSError, sqlite3.Error, SpectuiError):
            pass

    async def keep_traffic(self) -> None:
        """On the demo, start the background load on each new session (a new agent sends nothing until asked)."""
        session = self.link.session
        if not self.traffic or session is None or not self.link.connected or session is self._traffic_session:
            return
        self._traffic_session = session
        try:
            await session.client.call(Method.TRAFFIC_START, {"concurrency": 1}, timeout=10)
        except Exception as exc:   # a host that will not send: the metrics go on without its load
            log.info("demo traffic on %s: %s", self.label, exc)


# --- what a scrape reads -----------------------------------------------------------------------------------------
@dataclass
class Family:
    """One metric family as plain values: name, type, help, unit, and its samples ``(labels, value)``."""

    name: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    @property
    def help(self) -> str:
        return HELP[self.name]

    @property
    def unit(self) -> str:
        return UNITS.get(self.name, "")


def _fresh(m: Measured | None) -> float | None:
    """A frame's figure when it is a measurement: not stale, not held, a finite number."""
    if m is None or m.stale or m.held or not isinstance(m.value, (int, float)) or isinstance(m.value, bool):
        return None
    return float(m.value) if math.isfinite(m.value) else None


Add = Callable[[str, dict, "float | None"], None]


def families(hosts: Iterable[WatchedHost], now: float | None = None) -> list[Family]:
    """Every family of every host, as a scrape shows them now."""
    now = time.time() if now is None else now
    out = {name: Family(name) for name in HELP}

    def add(name: str, labels: dict, value: float | None) -> None:
        if value is not None:
            out[name].samples.append(({k: "" if v is None else str(v) for k, v in labels.items()}, value))

    for h in hosts:
        link, host = h.link, h.label
        add("spectui_host_connected", {"host": host}, 1.0 if link.connected else 0.0)
        for name in sorted(set(link.servers) | set(link.series)):
            _server(add, h, name, now)
        for g in (link.gpu.gpus if link.gpu is not None and link.connected else ()):
            gl = {"host": host, "gpu": g.index}
            add("spectui_gpu_utilization_percent", gl, finite_number(g.util_pct))
            add("spectui_gpu_memory_used_bytes", gl, finite_number(g.mem_used_mib, MIB))
            add("spectui_gpu_memory_total_bytes", gl, finite_number(g.mem_total_mib, MIB))
            add("spectui_gpu_power_watts", gl, finite_number(g.power_w))
        for (rule, subject), value in sorted(h.alert_seen.items()):
            add("spectui_alert", {"host": host, "rule": rule, "subject": subject}, value)
    return list(out.values())


def _server(add: Add, h: WatchedHost, name: str, now: float) -> None:
    """One server's series: its state and L* always, its figures while it serves with a fresh frame."""
    link, sv = h.link, {"host": h.label, "server": name}
    rec = link.servers.get(name) or {}
    series = link.series.get(name)
    frame = series.latest if series is not None else None
    state = rec.get("state") or (frame.state if frame is not None else None)
    for s in SERVER_STATES:
        add("spectui_server_state", {**sv, "state": s}, 1.0 if s == state else 0.0)
    algo = algorithm(rec, frame, h._profile(name))
    add("spectui_server_info", {**sv, "algorithm": algo or "none", "origin": rec.get("origin") or "",
                                "version": frame.version if frame else ""}, 1.0)
    if name in h.l_stars:
        value, source = h.l_stars[name]
        add("spectui_break_even_accept_length", {**sv, "source": source}, value)
    if (frame is None or not link.connected or state != ServerState.READY
            or now - frame.received_at > FRAME_FRESH_S):
        return   # the last frame of a stopped server, or of a lost link, is no live figure
    if algo:
        add("spectui_accept_length", {**sv, "source": frame.accept_length.source or "unknown"},
            _fresh(frame.accept_length))
        for r in frame.accept_rates:
            add("spectui_accept_rate", {**sv, "formula": r.formula or "unknown", "source": r.source or "unknown"},
                _fresh(r))
    for metric, m in (("spectui_gen_throughput_tok_s", frame.gen_throughput),
                      ("spectui_per_stream_tok_s", frame.per_stream)):
        add(metric, {**sv, "source": m.source or "unknown"}, _fresh(m))
    add("spectui_running_requests", sv, finite_number(frame.running_req))
    add("spectui_queued_requests", sv, finite_number(frame.queue_req))
    for metric, d in (("spectui_ttft_seconds", frame.ttft_ms), ("spectui_itl_seconds", frame.itl_ms)):
        for stat, value in latency(d):
            add(metric, {**sv, "stat": stat}, value)


# --- running --------------------------------------------------------------------------------------------------------
class Exporter:
    """Keeps every host's link running and evaluated, in one asyncio loop; :meth:`snapshot` is what a scrape reads,
    taken in that loop (thread-safe through :meth:`families_threadsafe`)."""

    def __init__(self, hosts: list[WatchedHost]) -> None:
        self.hosts = hosts
        self.loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task] = []

    async def start(self, first_connection_s: float) -> None:
        """Start every link and wait for each first connection; a host that cannot be reached raises its error
        (the first of them), and the others are closed."""
        self.loop = asyncio.get_running_loop()
        self._tasks = [asyncio.create_task(h.link.run()) for h in self.hosts]
        deadline = time.monotonic() + first_connection_s
        while not all(h.link.connected for h in self.hosts):
            for task in self._tasks:
                if task.done() and task.exception() is not None:
                    await self.close()
                    raise task.exception()
            if time.monotonic() > deadline:
                late = [h.label for h in self.hosts if not h.link.connected]
                await self.close()
                raise TimeoutError(f"{', '.join(late)} did not answer within {first_connection_s:g} s")
            await asyncio.sleep(0.05)
        from spectui.core.bench.runs import host_label

        for h in self.hosts:
            h.load_probes(host_label(h.link.session))

    async def run(self, stop: asyncio.Event) -> None:
        """Evaluate every host about once a second until ``stop`` is set; a link that ends with an error (one that
        needs the user) raises it."""
        while not stop.is_set():
            now = time.time()
            for h, task in zip(self.hosts, self._tasks):
                if task.done() and task.exception() is not None:
                    raise task.exception()
                await h.keep_traffic()
                h.evaluate(now)
            try:
                await within(stop.wait(), EVALUATE_EVERY_S)
            except asyncio.TimeoutError:
                pass

    async def close(self) -> None:
        for h in self.hosts:
            await h.link.close()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _snapshot(self) -> list[Family]:
        return families(self.hosts)

    def families_threadsafe(self, timeout_s: float = 5.0) -> list[Family]:
        """The families as the loop's thread sees them now (a scrape's thread calls this)."""
        if self.loop is None or self.loop.is_closed():
            return []
        return asyncio.run_coroutine_threadsafe(self._snapshot(), self.loop).result(timeout_s)


def collector(exporter: Exporter):
    """A ``prometheus_client`` collector over ``exporter`` (prometheus_client is imported here, when asked)."""
    from prometheus_client.core import GaugeMetricFamily

    class SpectuiCollector:
        def describe(self):
            return []   # the families depend on the hosts: collected on each scrape only

        def collect(self):
            for f in exporter.families_threadsafe():
                labels = sorted({k for lab, _ in f.samples for k in lab})
                g = GaugeMetricFamily(f.name, f.help, labels=labels, unit=f.unit)
                for lab, value in f.samples:
                    g.add_metric([lab.get(k, "") for k in labels], value)
                yield g

    return SpectuiCollector()
