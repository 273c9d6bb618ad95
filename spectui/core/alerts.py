"""Alerts: when speculation stops paying, or a server or GPU needs the operator.

Rules (ids as in the settings file's ``alerts:`` section; every threshold can be changed there)::

    below_break_even     accept length below the break-even L* (measured, else predicted) for for_s (30 s)
    accept_collapse      accept length (mean of the last 10 fresh frames) under ratio (0.6) of its own
                         median over the frames before (needs 30 of them) for for_s (20 s)
    server_down          a server unresponsive, crashed or failed (for_s 0: at once)
    gpu_memory           a GPU's memory at or above fraction (0.98) of its total for for_s (60 s); SGLang
                         reserves most memory at start (--mem-fraction-static), so the default is high
    throughput_collapse  generation tok/s under ratio (0.3) of its own median before while requests queue,
                         for for_s (15 s)

An alert fires once its condition has held for ``for_s`` and clears once it has been false for
``clear_s`` (5 s), so a value hovering at a threshold does not flap. A condition that cannot be
judged (no fresh frame: nothing decoded, no L* yet) is false: no data is never an alarm.

An alert never outlives what it is about: a server's figures are judged only while it serves (ready,
its latest frame at most :data:`FRESH_S` old), so the last frame a stopped server left behind is never
read as a live value. An alert on a server ends at once, without waiting ``clear_s``, when the server
stops or leaves the host's table, or when the host serves another server of the operator's and not this
one; it does not fire again until its condition has ended. While it fires, its sentence and ``value``
are those of the last evaluation (``first_message`` and ``first_value`` keep what it said when it fired,
``low`` and ``high`` the range since); once it ends, ``ended_at`` and ``reason`` say when and why.
Servers spectui only found on the host (origin ``external``: another user's, or started by hand) are
not judged: adopting one makes it the operator's.

The engine is pure: :meth:`AlertEngine.evaluate` takes the time and an :class:`AlertInputs` and
returns what fired and what cleared. Where alerts go (banner, list, bell, desktop, webhook) is the
caller's; :func:`notify_webhook` and :func:`notify_desktop` are the two that leave the machine or
the terminal.
"""

from __future__ import annotations

import json
import logging
import math
import shutil
import statistics
import subprocess
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from spectui.agent.protocol import DOWN_STATES, ServerState

log = logging.getLogger(__name__)

RECENT_FRAMES = 10
REFERENCE_MIN = 30
REFERENCE_MAX = 300
WEBHOOK_TIMEOUT_S = 5.0
FRESH_S = 10.0       # a server's latest frame older than this is no live figure: its figures are not judged
HISTORY_MAX = 500    # the changes an engine keeps (a long session's alerts do not grow without end)
FIGURE_RULES = ("below_break_even", "accept_collapse", "throughput_collapse")   # judge a serving server's figures


@dataclass(frozen=True)
class RuleConfig:
    """One rule's settings; fields a rule does not use are ignored."""

    enabled: bool = True
    for_s: float = 30.0
    clear_s: float = 5.0
    ratio: float | None = None
    fraction: float | None = None


DEFAULT_RULES: dict[str, RuleConfig] = {
    "below_break_even": RuleConfig(for_s=30.0),
    "accept_collapse": RuleConfig(for_s=20.0, ratio=0.6),
    "server_down": RuleConfig(for_s=0.0),
    "gpu_memory": RuleConfig(for_s=60.0, fraction=0.98),
    "throughput_collapse": RuleConfig(for_s=15.0, ratio=0.3),
}
RULE_FIELDS = ("enabled", "for_s", "clear_s", "ratio", "fraction")
OUTPUT_KEYS = ("bell", "desktop", "webhook")


@dataclass(frozen=True)
class AlertConfig:
    rules: Mapping[str, RuleConfig] = field(default_factory=lambda: dict(DEFAULT_RULES))
    bell: bool = False
    desktop: bool = False
    webhook: str | None = None


def alert_config(data: Any) -> tuple[AlertConfig, list[tuple[tuple, str]]]:
    """The ``alerts:`` section of the settings file read over the defaults, and its problems as
    (field path, one sentence); a bad value keeps its default and the rest applies."""
    from spectui.core.settings_schema import read_alerts

    config, problems = read_alerts(data)
    return config, [(p.fpath, p.message) for p in problems]


@dataclass(frozen=True)
class ServerInput:
    """What the rules read of one server: its state, its recent frames (oldest first, None where a
    frame was stale or held) and the latest queue; ``l_star`` with where it came from."""

    name: str
    state: str | None = None
    accept_lengths: tuple[float | None, ...] = ()
    throughputs: tuple[float | None, ...] = ()
    queue_req: int | None = None
    speculative: bool = False
    l_star: float | None = None
    l_star_source: str | None = None   # "measured" or "predicted"
    accept_source: str | None = None   # the frame's source of the accept length, e.g. "metrics-counters"
    age_s: float | None = None         # seconds since its latest frame arrived (None: not known, taken as fresh)
    origin: str | None = None          # spectui | adopted | external (a server spectui only found)
    started_at: float | None = None    # when it started (the clock evaluate is given)

    @property
    def serving(self) -> bool:
        """Whether it serves now: ready, with a fresh frame (its figures are live)."""
        return self.state == ServerState.READY and (self.age_s is None or self.age_s <= FRESH_S)


@dataclass(frozen=True)
class GpuInput:
    index: int
    mem_used_mib: float | None
    mem_total_mib: float | None


@dataclass(frozen=True)
class AlertInputs:
    servers: tuple[ServerInput, ...] = ()
    gpus: tuple[GpuInput, ...] = ()


def _nan_none(values: Iterable[float]) -> tuple[float | None, ...]:
    return tuple(None if math.isnan(v) else v for v in values)


def inputs_from_link(link: Any, l_stars: Mapping[str, tuple[float, str]] | None = None,
                     now: float | None = None) -> AlertInputs:
    """The rules' view of a :class:`~spectui.core.live.HostLink` (or a replay): each server's record and
    series (the last :data:`REFERENCE_MAX` + :data:`RECENT_FRAMES` frames), the latest GPU sample, and
    the break-even L* per server with where it came from (``measured`` or ``predicted``). ``now`` (the
    clock frames are received by, ``time.time()``) gives each server's latest frame its age. Servers
    spectui only found (origin ``external``) are left out."""
    l_stars = l_stars or {}
    keep = REFERENCE_MAX + RECENT_FRAMES
    servers = []
    for name in sorted(set(link.servers) | set(link.series)):
        record = link.servers.get(name) or {}
        if record.get("origin") == "external":
            continue
        series = link.series.get(name)
        latest = series.latest if series is not None else None
        l_star = l_stars.get(name)
        servers.append(ServerInput(
            name=name, state=record.get("state") or (latest.state if latest else None),
            accept_lengths=_nan_none(series.accept_length.values(keep)) if series else (),
            throughputs=_nan_none(series.gen_throughput.values(keep)) if series else (),
            queue_req=latest.queue_req if latest else None,
            speculative=bool(latest.speculating) if latest else False,
            l_star=l_star[0] if l_star else None, l_star_source=l_star[1] if l_star else None,
            accept_source=latest.accept_length.source if latest else None,
            age_s=max(0.0, now - latest.received_at) if latest is not None and now is not None else None,
            origin=record.get("origin"), started_at=record.get("started_at")))
    gpus = tuple(GpuInput(g.index, g.mem_used_mib, g.mem_total_mib) for g in (link.gpu.gpus if link.gpu else ()))
    return AlertInputs(servers=tuple(servers), gpus=gpus)


@dataclass(frozen=True)
class Alert:
    rule: str
    subject: str          # a server's name or "GPU 3"
    message: str          # one sentence with the figures of the last evaluation and where they came from
    since: float          # when the condition began (the clock given to evaluate)
    fired_at: float
    value: float | None = None          # the figure of the last evaluation (None: the rule has none)
    host: str | None = None             # the host it is about (the engine's)
    first_message: str | None = None    # what it said when it fired
    first_value: float | None = None
    low: float | None = None            # the lowest and highest figure while it fired
    high: float | None = None
    updated_at: float | None = None     # the last evaluation that found it holding
    ended_at: float | None = None
    reason: str | None = None           # why it ended: "kimi-eagle3 is stopped", "its condition ended", ...

    @property
    def key(self) -> tuple[str, str]:
        return (self.rule, self.subject)

    def held(self, condition: Condition, now: float) -> "Alert":
        """The alert with the figures of this evaluation."""
        values = [v for v in (self.low, self.high, condition.value) if v is not None]
        return replace(self, message=condition.message, value=condition.value, updated_at=now,
                       low=min(values) if values else None, high=max(values) if values else None)

    def to_dict(self) -> dict:
        return {"rule": self.rule, "subject": self.subject, "message": self.message, "since": self.since,
                "fired_at": self.fired_at, "value": self.value, "host": self.host,
                "first_message": self.first_message, "first_value": self.first_value, "low": self.low,
                "high": self.high, "updated_at": self.updated_at, "ended_at": self.ended_at, "reason": self.reason}


@dataclass(frozen=True)
class AlertChange:
    kind: str   # "fired" or "cleared"
    alert: Alert
    at: float

    def to_dict(self) -> dict:
        return {"kind": self.kind, "at": self.at, **self.alert.to_dict()}


@dataclass(frozen=True)
class Condition:
    """A rule's condition holding now: its sentence and its figure (None where the rule has no figure)."""

    message: str
    value: float | None = None


def _fresh(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def _collapse(values: tuple[float | None, ...], ratio: float) -> tuple[float, float] | None:
    """(recent mean, reference median) when the recent level is under ``ratio`` of the reference."""
    fresh = _fresh(values)
    if len(fresh) < REFERENCE_MIN + RECENT_FRAMES:
        return None
    recent = statistics.fmean(fresh[-RECENT_FRAMES:])
    reference = statistics.median(fresh[-(REFERENCE_MAX + RECENT_FRAMES):-RECENT_FRAMES])
    if reference > 0 and recent < ratio * reference:
        return recent, reference
    return None


def judge(config: AlertConfig, inputs: AlertInputs) -> dict[tuple[str, str], Condition]:
    """Every (rule, subject) whose condition holds now, with its sentence and figure. A server's figures are
    judged only while it serves (:attr:`ServerInput.serving`)."""
    rules = config.rules
    out: dict[tuple[str, str], Condition] = {}
    for s in inputs.servers:
        if s.origin == "external":
            continue
        latest = s.accept_lengths[-1] if s.accept_lengths else None
        source = f" ({s.accept_source})" if s.accept_source else ""
        r = rules.get("below_break_even")
        if (r and r.enabled and s.serving and s.speculative and s.l_star is not None and latest is not None
                and latest < s.l_star):
            out[("below_break_even", s.name)] = Condition(
                f"{s.name}: accept length {latest:.2f}{source} is below the break-even L* {s.l_star:.2f} "
                f"({s.l_star_source or 'measured'}): speculation now costs throughput.", latest)
        r = rules.get("accept_collapse")
        if r and r.enabled and s.serving and s.speculative:
            hit = _collapse(s.accept_lengths, r.ratio or 0.0)
            if hit:
                out[("accept_collapse", s.name)] = Condition(
                    f"{s.name}: accept length fell to {hit[0]:.2f} (mean of the last {RECENT_FRAMES} frames) "
                    f"from {hit[1]:.2f} (median before){source}.", hit[0])
        r = rules.get("server_down")
        if r and r.enabled and s.state in DOWN_STATES:
            out[("server_down", s.name)] = Condition(f"{s.name} is {s.state}.")
        r = rules.get("throughput_collapse")
        if r and r.enabled and s.serving and (s.queue_req or 0) > 0:
            hit = _collapse(s.throughputs, r.ratio or 0.0)
            if hit:
                out[("throughput_collapse", s.name)] = Condition(
                    f"{s.name}: generation fell to {hit[0]:.1f} tok/s from {hit[1]:.1f} (median before) "
                    f"with {s.queue_req} requests queued.", hit[0])
    r = rules.get("gpu_memory")
    if r and r.enabled:
        for g in inputs.gpus:
            if g.mem_used_mib is None or not g.mem_total_mib:
                continue
            frac = g.mem_used_mib / g.mem_total_mib
            if frac >= (r.fraction or 1.0):
                out[("gpu_memory", f"GPU {g.index}")] = Condition(
                    f"GPU {g.index}: memory {g.mem_used_mib / 1024:.1f} of {g.mem_total_mib / 1024:.1f} GiB "
                    f"({100 * frac:.0f}%) in use.", round(100 * frac, 1))
    return out


def conditions(config: AlertConfig, inputs: AlertInputs) -> dict[tuple[str, str], str]:
    """Every (rule, subject) whose condition holds now, with its sentence."""
    return {key: c.message for key, c in judge(config, inputs).items()}


def moved_on(key: tuple[str, str], inputs: AlertInputs, since: float) -> str | None:
    """Why an alert on a server ends at once, in a few words: its server stopped or left the host's table, or
    the host serves another server of the operator's, started after the condition began (``since``), and not
    this one. None when none of these holds."""
    rule, subject = key
    if rule == "gpu_memory":
        return None
    servers = {s.name: s for s in inputs.servers}
    s = servers.get(subject)
    if s is None:
        return f"{subject} is no longer on the host"
    if rule in FIGURE_RULES and s.state != ServerState.READY:
        return f"{subject} is {s.state or 'gone'}"
    serving = [n for n, o in servers.items() if o.serving and o.origin != "external"
               and (o.started_at is None or o.started_at >= since)]
    if serving and not s.serving:
        return f"the host serves {', '.join(serving)} now"
    return None


class AlertEngine:
    """One host's alerts: fires an alert once its condition held ``for_s``, keeps its figures current while it
    holds, and ends it once false for ``clear_s``, or at once when its server has gone (:func:`moved_on`)."""

    def __init__(self, config: AlertConfig | None = None, *, host: str | None = None) -> None:
        self.config = config or AlertConfig()
        self.host = host
        self.active: dict[tuple[str, str], Alert] = {}
        self.history: list[AlertChange] = []   # newest last, at most HISTORY_MAX
        self._since: dict[tuple[str, str], float] = {}    # condition true since
        self._false_since: dict[tuple[str, str], float] = {}
        self._settled: set[tuple[str, str]] = set()       # ended at once while the condition held: not again

    def evaluate(self, now: float, inputs: AlertInputs) -> list[AlertChange]:
        held = judge(self.config, inputs)
        changes: list[AlertChange] = []
        for key in [k for k in self._since if k not in held]:
            del self._since[key]
        self._settled &= set(held)
        for key, alert in list(self.active.items()):
            why = moved_on(key, inputs, alert.since)
            if why is None and key in held:
                self._false_since.pop(key, None)
                self.active[key] = alert.held(held[key], now)
                continue
            if why is None:
                first = self._false_since.setdefault(key, now)
                if now - first < self.config.rules[key[0]].clear_s:
                    continue
                s = next((x for x in inputs.servers if x.name == key[1]), None)
                why = (f"no live figures from {key[1]}" if key[0] in FIGURE_RULES and s is not None and not s.serving
                       else "its condition ended")
            elif key in held:
                self._settled.add(key)
            del self.active[key]
            self._false_since.pop(key, None)
            changes.append(AlertChange("cleared", replace(alert, ended_at=now, reason=why), now))
        for key, condition in held.items():
            since = self._since.setdefault(key, now)
            if key in self.active or key in self._settled or now - since < self.config.rules[key[0]].for_s:
                continue
            if moved_on(key, inputs, since) is not None:
                continue
            alert = Alert(key[0], key[1], condition.message, since, now, condition.value, self.host,
                          condition.message, condition.value, condition.value, condition.value, now)
            self.active[key] = alert
            changes.append(AlertChange("fired", alert, now))
        self.history.extend(changes)
        del self.history[:-HISTORY_MAX]
        return changes


def notify_desktop(alert: Alert) -> bool:
    """A desktop notification through ``notify-send`` where it exists; False where it does not."""
    exe = shutil.which("notify-send")
    if exe is None:
        return False
    try:
        subprocess.Popen([exe, "--app-name=spectui", f"spectui: {alert.rule}", alert.message],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError as exc:
        log.warning("desktop notification failed: %s", exc)
        return False
    return True


def notify_webhook(url: str, change: AlertChange, *, timeout_s: float = WEBHOOK_TIMEOUT_S) -> threading.Thread:
    """POST the change as JSON to ``url`` on a thread (the console never waits on the network); a failure
    is logged, not raised."""
    import urllib.request  # loaded by the first webhook, not by every start (it brings http and ssl)

    body = json.dumps({"source": "spectui", **change.to_dict()}).encode()

    def post() -> None:
        req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # noqa: S310 (the operator's URL)
                resp.read(1024)
        except Exception as exc:  # any network or HTTP failure: the alert is still shown in the console
            log.warning("alert webhook %s failed: %s", url, exc)

    t = threading.Thread(target=post, name="spectui-alert-webhook", daemon=True)
    t.start()
    return t
