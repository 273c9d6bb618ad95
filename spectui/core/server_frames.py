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
     "cumulative_accept_length": {"value": 1.98, "source": "server_info", "cumulative": true},
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

``accept_rate`` lists the headline first: the formula of the server's release.

``running_source`` says where ``running_req`` comes from: ``metrics-gauge`` (the scheduler's last batch
report), ``tokenizer-histograms`` (requests with a first token and not finished, when more than the gauge
says: the gauge lags a batch that grew until the next Decode log line), ``decode-log``, or ``busy`` (no
source counts them, yet tokens are decoded: at least one).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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

    @classmethod
    def from_dict(cls, d: dict | None) -> "Measured":
        if not d:
            return cls(None)
        return cls(d.get("value"), d.get("source"), bool(d.get("stale")), bool(d.get("cumulative")), d.get("formula"),
                   d.get("window_s"), d.get("age_s"), bool(d.get("held")), bool(d.get("measuring")), d.get("of"),
                   d.get("ranks"), d.get("window"))


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


@dataclass
class ServerSeries:
    """Bounded history of one server's panels (one hour at 1 Hz by default)."""

    capacity: int = 3600
    accept_length: RingBuffer = field(init=False)
    gen_throughput: RingBuffer = field(init=False)
    per_stream: RingBuffer = field(init=False)
    running_req: RingBuffer = field(init=False)
    latest: ServerFrame | None = None

    def __post_init__(self) -> None:
        self.accept_length = RingBuffer(self.capacity)
        self.gen_throughput = RingBuffer(self.capacity)
        self.per_stream = RingBuffer(self.capacity)
        self.running_req = RingBuffer(self.capacity)

    def add(self, frame: ServerFrame) -> None:
        self.latest = frame
        # A stale or held value is not a new measurement: the chart shows a gap, not a repeat.
        for ring, m in ((self.accept_length, frame.accept_length), (self.gen_throughput, frame.gen_throughput),
                        (self.per_stream, frame.per_stream)):
            ring.append(None if m.stale or m.held else m.value)
        self.running_req.append(frame.running_req)
