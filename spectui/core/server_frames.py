"""Server telemetry frames as the console holds them (the agent's ``server_frame`` events).

Every number carries where it came from; a value that did not move since the last frame
is ``stale``; the server's own cumulative figures are marked ``cumulative``.

Event data (``server_frame``), as the agent sends it::

    {"name": "kimi-eagle3", "seq": 12, "t": 1764496800.0, "window_s": 1.0, "state": "ready",
     "accept_length": {"value": 2.01, "source": "metrics-counters", "stale": false},
     "accept_rate": [{"value": 0.337, "formula": "drafts-only", "source": "derived", "stale": false},
                     {"value": 0.502, "formula": "incl-bonus/draft-tokens", "source": "derived", "stale": false}],
     "cumulative_accept_length": {"value": 1.98, "source": "server_info", "cumulative": true},
     "gen_throughput": {"value": 60.2, "source": "metrics-counters", "stale": false},
     "running_req": 1, "queue_req": 0, "token_usage": 0.01,
     "ttft_ms": {"p50": 41.0, "p99": 80.0}, "itl_ms": {"p50": 33.0, "p99": 35.0},
     "speculative": {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4},
     "version": "0.5.23", "sources": {"metrics": "ok", "log": "ok", "server_info": "ok"}}
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

    @classmethod
    def from_dict(cls, d: dict | None) -> "Measured":
        if not d:
            return cls(None)
        return cls(d.get("value"), d.get("source"), bool(d.get("stale")), bool(d.get("cumulative")), d.get("formula"))


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
    running_req: int | None
    queue_req: int | None
    token_usage: float | None
    ttft_ms: dict | None
    itl_ms: dict | None
    speculative: dict
    version: str | None
    sources: dict

    @classmethod
    def from_event(cls, d: dict, received_at: float) -> "ServerFrame":
        return cls(
            name=d["name"], seq=int(d.get("seq", 0)), sampled_at=float(d.get("t", received_at)),
            received_at=received_at, state=d.get("state", "?"),
            accept_length=Measured.from_dict(d.get("accept_length")),
            accept_rates=tuple(Measured.from_dict(x) for x in d.get("accept_rate") or ()),
            cumulative_accept_length=Measured.from_dict(d.get("cumulative_accept_length")),
            gen_throughput=Measured.from_dict(d.get("gen_throughput")),
            running_req=d.get("running_req"), queue_req=d.get("queue_req"), token_usage=d.get("token_usage"),
            ttft_ms=d.get("ttft_ms"), itl_ms=d.get("itl_ms"), speculative=d.get("speculative") or {},
            version=d.get("version"), sources=d.get("sources") or {},
        )

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
    running_req: RingBuffer = field(init=False)
    latest: ServerFrame | None = None

    def __post_init__(self) -> None:
        self.accept_length = RingBuffer(self.capacity)
        self.gen_throughput = RingBuffer(self.capacity)
        self.running_req = RingBuffer(self.capacity)

    def add(self, frame: ServerFrame) -> None:
        self.latest = frame
        # A stale value is not a new measurement: the chart shows a gap, not a repeat.
        al = frame.accept_length
        self.accept_length.append(None if al.stale else al.value)
        gt = frame.gen_throughput
        self.gen_throughput.append(None if gt.stale else gt.value)
        self.running_req.append(frame.running_req)
