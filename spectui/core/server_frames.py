"""Server telemetry frames as the console holds them (the agent's ``server_frame`` events).

Every number carries where it came from (``source``), the span it was measured over
(``window_s``) and the age of the newest data behind it (``age_s``); a value kept from an
earlier measurement because nothing newer exists is ``held``; one with nothing decoded
since is ``stale``; ``measuring`` means requests run but no source can tell the figure yet;
the server's own cumulative figures are marked ``cumulative``. A figure combined over
several data-parallel ranks says over how many (``ranks``: summed for throughput, averaged
for the accept length); ``window`` names a span that is not a number of seconds (the
``spec_accept_length`` gauge holds the last decode-log interval).

Event data (``server_frame``), as the agent sends it::

    {"name": "kimi-eagle3", "seq": 12, "t": 1764496800.0, "window_s": 2.0, "state": "ready",
     "accept_length": {"value": 2.01, "source": "metrics-counters", "stale": false, "window_s": 30.0,
                       "age_s": 0.8, "requests": 14},
     "accept_rate": [{"value": 0.337, "formula": "drafts-only", "source": "derived", "stale": false},
                     {"value": 0.502, "formula": "incl-bonus/draft-tokens", "source": "derived", "stale": false}],
     "cumulative_accept_length": {"value": 1.98, "source": "server_info", "cumulative": true, "requests": 57},
     "gen_throughput": {"value": 58.1, "source": "realtime-counter", "stale": false, "window_s": 2.0, "age_s": 0.0},
     "per_stream": {"value": 60.2, "source": "itl-histogram", "stale": false, "window_s": 5.0, "age_s": 0.0},
     "running_req": 1, "queue_req": 0, "token_usage": 0.01,
     "ttft_ms": {"p50": 100.0, "p50_rel": "<", "p99": 100.0, "p99_rel": "<", "mean": 41.0, "count": 12,
                 "source": "metrics-histogram", "window_s": 30.0},
     "itl_ms": {"p50": 16.4, "p50_rel": "=", "p99": 30.1, "p99_rel": "=", "mean": 16.6, ...},
     "speculative": {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4},
     "dp_ranks": null, "version": "0.5.23", "sources": {"metrics": "ok", "log": "ok", "server_info": "ok"}}

``speculative`` holds only ``null`` values when the algorithm is none (a server's
``/server_info`` lists speculative defaults even then). Where the server runs adaptive speculation
and reports the step count it runs now, ``speculative`` adds ``"adaptive": {"steps": 1,
"draft_tokens": 2, "source": "metrics-gauge", "launch_steps": 3}`` (``num_steps`` keeps the launch value).

``width_now`` is the draft width the server runs now, read from the ``sglang:spec_num_steps`` and
``sglang:spec_num_draft_tokens`` gauges (``--speculative-adaptive`` changes it while serving), with the wall time of
that read: ``{"steps": 1, "draft_tokens": 2, "source": "sglang:spec_num_draft_tokens", "read_at": 1764496800.0}``
(``topk`` only where the server publishes it; null when the server reports no width or /metrics was not read).
``width_changes`` lists the newest changes the agent saw, oldest first: ``[{"t": ..., "old": {"steps": 3,
"draft_tokens": 4}, "new": {"steps": 1, "draft_tokens": 2}}]``. :func:`settings_in_force` puts the width in force
over the launch settings for predictions, and names which it used.

``accept_rate`` lists the headline first: the formula of the server's release.

``step_series`` (absent when the server publishes none of them) holds the labelled step counters of the
read, ``{family: [[{label: value}, number], ...]}`` for ``forward_execution_seconds_total``,
``cuda_graph_passes_total`` and ``scheduler_idle_seconds_total`` (at most 64 label sets each);
:func:`frame_step_costs` turns two frames into :class:`spectui.core.stepcost.StepCosts` (docs/step-costs.md);
:class:`ServerSeries` keeps those of the last :data:`STEP_WINDOW_S` seconds, and :func:`timed_l_star` divides a
speculative server's cycle by the plain decode step a plain server on the same host timed.

``running_source`` says where ``running_req`` comes from: ``metrics-gauge`` (the scheduler's last batch
report), ``tokenizer-histograms`` (requests with a first token and not finished, when more than the gauge
says: the gauge lags a batch that grew until the next Decode log line), ``decode-log``, or ``busy`` (no
source counts them, yet tokens are decoded: at least one).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spectui.core.stepcost import StepCosts, StepFigure, StepSample, live_l_star, series_from_pairs, step_costs
from spectui.core.telemetry import RingBuffer


@dataclass(frozen=True)
class Measured:
    value: float | None
    source: str | None = None
    stale: bool = False
    cumulative: bool = False
    formula: str | None = None
    window_s: float | None = None
    age_s: float | None = None
    held: bool = False
    measuring: bool = False
    of: str | None = None
    ranks: int | None = None
    window: str | None = None
    requests: int | None = None  # a cumulative figure's finished requests (sglang:num_requests_total), if known

    @classmethod
    def from_dict(cls, d: dict | None) -> "Measured":
        if not d:
            return cls(None)
        return cls(d.get("value"), d.get("source"), bool(d.get("stale")), bool(d.get("cumulative")), d.get("formula"),
                   d.get("window_s"), d.get("age_s"), bool(d.get("held")), bool(d.get("measuring")), d.get("of"),
                   d.get("ranks"), d.get("window"), _count(d.get("requests")))


WIDTH_IN_FORCE = "the width in force (sglang:spec_num_draft_tokens)"
LAUNCH_FLAG = "the launch flag"


def _count(value: Any) -> int | None:
    """A non-negative whole number from a frame, else None (``bool`` is not one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        return None
    return int(value) if float(value).is_integer() else None


def _time(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class DraftWidth:
    """A draft width: speculative steps, draft tokens verified per step, and topk where known."""

    steps: int | None
    draft_tokens: int | None
    topk: int | None = None
    read_at: float | None = None       # wall time of the /metrics read (the width in force)
    source: str | None = None

    @classmethod
    def from_dict(cls, d: Any) -> "DraftWidth | None":
        """From a frame's ``width_now`` (or a change's ``old``/``new``); None for none or a malformed one."""
        if not isinstance(d, Mapping):
            return None
        steps, tokens = _count(d.get("steps")), _count(d.get("draft_tokens"))
        if steps is None and tokens is None:
            return None
        source = d.get("source")
        return cls(steps, tokens, _count(d.get("topk")), _time(d.get("read_at")),
                   source if isinstance(source, str) else None)


@dataclass(frozen=True)
class WidthChange:
    at: float          # the read that first saw ``new``
    old: DraftWidth
    new: DraftWidth

    @classmethod
    def from_dict(cls, d: Any) -> "WidthChange | None":
        if not isinstance(d, Mapping):
            return None
        at, old, new = _time(d.get("t")), DraftWidth.from_dict(d.get("old")), DraftWidth.from_dict(d.get("new"))
        return cls(at, old, new) if at is not None and old is not None and new is not None else None


def _seconds(value: Any) -> float | None:
    """A non-negative number of seconds from a frame, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        return None
    return float(value)


def _width_changes(items: Any) -> tuple[WidthChange, ...]:
    if not isinstance(items, list):
        return ()
    return tuple(c for c in (WidthChange.from_dict(x) for x in items) if c is not None)


@dataclass(frozen=True)
class ServerFrame:
    name: str
    seq: int
    sampled_at: float
    received_at: float
    state: str
    accept_length: Measured
    accept_rates: tuple[Measured, ...]
    cumulative_accept_length: Measured
    gen_throughput: Measured
    per_stream: Measured
    running_req: int | None
    queue_req: int | None
    token_usage: float | None
    ttft_ms: dict | None
    itl_ms: dict | None
    speculative: dict
    version: str | None
    sources: dict
    dp_ranks: int | None = None
    foreign_reqs: int | None = None  # of running + queued, requests spectui did not send (None: not known)
    running_source: str | None = None  # where running_req comes from (see the module docstring)
    step_series: dict | None = None  # the labelled step counters, JSON form (see the module docstring)
    width_now: DraftWidth | None = None  # the draft width in force at the read (see the module docstring)
    width_changes: tuple[WidthChange, ...] = ()  # its newest changes, oldest first
    read_s: float | None = None  # how long the /metrics read took: its figures are of a moment in [t - read_s, t]

    @classmethod
    def from_event(cls, d: dict, received_at: float) -> "ServerFrame":
        return cls(
            name=d["name"], seq=int(d.get("seq", 0)), sampled_at=float(d.get("t", received_at)),
            received_at=received_at, state=d.get("state", "?"),
            accept_length=Measured.from_dict(d.get("accept_length")),
            accept_rates=tuple(Measured.from_dict(x) for x in d.get("accept_rate") or ()),
            cumulative_accept_length=Measured.from_dict(d.get("cumulative_accept_length")),
            gen_throughput=Measured.from_dict(d.get("gen_throughput")),
            per_stream=Measured.from_dict(d.get("per_stream")),
            running_req=d.get("running_req"), queue_req=d.get("queue_req"), token_usage=d.get("token_usage"),
            ttft_ms=d.get("ttft_ms"), itl_ms=d.get("itl_ms"), speculative=d.get("speculative") or {},
            version=d.get("version"), sources=d.get("sources") or {}, dp_ranks=d.get("dp_ranks"),
            foreign_reqs=d.get("foreign_reqs"), running_source=d.get("running_source"),
            step_series=d.get("step_series"), width_now=DraftWidth.from_dict(d.get("width_now")),
            width_changes=_width_changes(d.get("width_changes")),
            read_s=_seconds(d.get("read_s")),
        )

    @property
    def speculating(self) -> bool:
        """Whether the server runs a speculative algorithm (its settings mean something)."""
        return bool((self.speculative or {}).get("algorithm"))

    def rate(self, formula: str) -> Measured | None:
        for r in self.accept_rates:
            if r.formula == formula:
                return r
        return None


def settings_in_force(settings: Mapping[str, Any], frame: ServerFrame | None) -> tuple[dict, str]:
    """``settings`` (``num_steps``, ``topk``, ``draft_tokens``: a profile's or ``/server_info``'s) with the width
    ``frame``'s server runs now over them, and which: :data:`WIDTH_IN_FORCE`, or :data:`LAUNCH_FLAG` where the
    frame is missing or carries no width in force."""
    width = frame.width_now if frame is not None else None
    if width is None:
        return dict(settings), LAUNCH_FLAG
    out = dict(settings)
    for key, value in (("num_steps", width.steps), ("draft_tokens", width.draft_tokens), ("topk", width.topk)):
        if value is not None:
            out[key] = value
    return out, WIDTH_IN_FORCE


def frame_step_costs(previous: ServerFrame | None, current: ServerFrame) -> StepCosts | None:
    """The step costs of one server between two of its frames (``spectui.core.stepcost.step_costs``), over the
    span between their reads; speculative when ``current``'s server runs a speculative algorithm. ``None`` when
    either frame carries no ``step_series`` (a server without the step counters, or an agent that sends none),
    when they are of two servers, or when ``current`` was not read after ``previous``."""
    if previous is None or previous.name != current.name or not previous.step_series or not current.step_series:
        return None
    if current.sampled_at <= previous.sampled_at:
        return None
    try:
        before = StepSample(previous.sampled_at, series_from_pairs(previous.step_series))
        after = StepSample(current.sampled_at, series_from_pairs(current.step_series))
    except (TypeError, ValueError):  # a malformed series: no step costs rather than a traceback
        return None
    return step_costs(before, after, current.speculating)


STEP_WINDOW_S = 10.0  # the span the live step costs are read over


@dataclass
class ServerSeries:
    """Bounded history of one server's panels (one hour at 1 Hz by default).

    ``step_costs``: the step costs of the last :data:`STEP_WINDOW_S` seconds (None without step counters);
    ``timed``: the newest step costs whose main figure (verify on a speculative server, decode on a plain one)
    has a value, kept while later windows have none (an idle server, one that stopped)."""

    capacity: int = 3600
    accept_length: RingBuffer = field(init=False)
    gen_throughput: RingBuffer = field(init=False)
    per_stream: RingBuffer = field(init=False)
    running_req: RingBuffer = field(init=False)
    latest: ServerFrame | None = None
    step_costs: StepCosts | None = None
    timed: StepCosts | None = None
    timed_until: float | None = None  # when the window of ``timed`` ended (wall time of its later read)
    _step_frames: deque = field(init=False)

    def __post_init__(self) -> None:
        self.accept_length = RingBuffer(self.capacity)
        self.gen_throughput = RingBuffer(self.capacity)
        self.per_stream = RingBuffer(self.capacity)
        self.running_req = RingBuffer(self.capacity)
        self._step_frames = deque()

    def _add_steps(self, frame: ServerFrame) -> None:
        frames = self._step_frames
        if not frame.step_series:
            frames.clear()
            self.step_costs = None
            return
        frames.append(frame)
        while len(frames) > 2 and frames[1].sampled_at <= frame.sampled_at - STEP_WINDOW_S:
            frames.popleft()
        self.step_costs = frame_step_costs(frames[0], frame) if len(frames) > 1 else None
        costs = self.step_costs
        if costs is not None and (costs.verify if costs.speculative else costs.decode).value is not None:
            self.timed, self.timed_until = costs, frame.sampled_at

    def add(self, frame: ServerFrame) -> None:
        if self.latest is not None and self.latest.speculating != frame.speculating:
            self.timed = self.timed_until = None  # another kind of server under this name
        self.latest = frame
        self._add_steps(frame)
        # A stale or held value is not a new measurement: the chart shows a gap, not a repeat.
        for ring, m in ((self.accept_length, frame.accept_length), (self.gen_throughput, frame.gen_throughput),
                        (self.per_stream, frame.per_stream)):
            ring.append(None if m.stale or m.held else m.value)
        self.running_req.append(frame.running_req)


@dataclass(frozen=True)
class LiveBreakEven:
    """The live L* of one speculative server from device timers (docs/step-costs.md).

    ``step``: its verify (+ draft) milliseconds per cycle, ``drafted`` whether drafting is in it, over ``window_s``
    ending at ``until``; ``decode``: the plain decode step of ``decode_server`` (a plain server on the same host),
    over its window ending at ``decode_until``; ``l_star``: their ratio. A missing figure comes with ``reason``."""

    step: StepFigure | None
    drafted: bool
    until: float | None
    decode: StepFigure | None
    decode_server: str | None
    decode_until: float | None
    l_star: StepFigure | None
    reason: str | None = None


def timed_l_star(series: Mapping[str, ServerSeries], name: str) -> LiveBreakEven | None:
    """The live L* of speculative server ``name`` from its timer and the newest plain decode step timed on the
    same host; None when ``name`` is not a speculative server with frames."""
    mine = series.get(name)
    if mine is None or mine.latest is None or not mine.latest.speculating:
        return None
    costs = mine.timed
    if costs is None:
        now = mine.step_costs
        if now is None:
            reason = "no step counters from this server" if not mine.latest.step_series else "measuring"
        else:
            reason = now.verify.reason
        return LiveBreakEven(None, False, None, None, None, None, None, reason)
    step = costs.verify
    drafted = costs.draft.value is not None
    if drafted:
        step = StepFigure("verify+draft", step.value + costs.draft.value, step.source + " + " + costs.draft.source,
                          step.window_s, reset=step.reset or costs.draft.reset)
    plain = [(n, s) for n, s in series.items() if n != name and s.latest is not None and not s.latest.speculating
             and s.timed is not None and s.timed_until is not None]
    if not plain:
        return LiveBreakEven(step, drafted, mine.timed_until, None, None, None, None,
                             "no plain server's timer on this host gives the decode step")
    base_name, base = max(plain, key=lambda p: p[1].timed_until)
    l_star = live_l_star(costs, decode=base.timed.decode)
    return LiveBreakEven(step, drafted, mine.timed_until, base.timed.decode, base_name, base.timed_until, l_star,
                         l_star.reason)
