"""A benchmark run's progress as the console follows it: the agent's ``bench_progress`` events, the latest of each
run (:class:`ProgressBoard`), and the agent's error code for a server another run measures. Light on purpose: the
console loads it at start; the rest of a run (:mod:`spectui.core.bench.runs`) loads with the first run."""

from __future__ import annotations

from dataclasses import dataclass, field

from spectui.agent.protocol import BENCH_BUSY, BENCH_FINAL_STATES  # noqa: F401 - the console reads it here
from spectui.core.rpc import Event


@dataclass
class BenchProgress:
    """A ``bench_progress`` event: how far a run on the host has got."""

    run_id: str
    state: str
    done: int = 0
    total: int = 0
    errors: int = 0
    tok_s: float | None = None
    accept_length: float | None = None
    eta_s: float | None = None
    elapsed_s: float | None = None
    warmup_done: int | None = None
    warmup_total: int | None = None
    reason: str | None = None
    labels: dict = field(default_factory=dict)
    positions: dict | None = None  # the finished requests' pooled spec figures so far (positions.pooled_figures)

    @classmethod
    def from_event(cls, data: dict) -> "BenchProgress":
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names and (v is not None or k in ("run_id", "state"))})

    @property
    def finished(self) -> bool:
        return self.state in BENCH_FINAL_STATES

    def line(self) -> str:
        """``12/40 requests, 61.2 tok/s, accept 2.04, ETA 8 s`` (for a status line)."""
        if self.state == "warmup":
            return f"warming up {self.warmup_done or 0}/{self.warmup_total or 0}"
        if self.state in ("starting", "flushing"):
            return self.state
        parts = [f"{self.done}/{self.total} requests"]
        if self.errors:
            parts.append(f"{self.errors} errors")
        if self.tok_s is not None:
            parts.append(f"{self.tok_s:.1f} tok/s")
        if self.accept_length is not None:
            parts.append(f"accept {self.accept_length:.2f}")
        if self.eta_s is not None and not self.finished:
            parts.append(f"ETA {self.eta_s:.0f} s")
        if self.finished and self.state != "done":
            parts.append(self.state + (f": {self.reason}" if self.reason else ""))
        return ", ".join(parts)


class ProgressBoard:
    """The latest :class:`BenchProgress` of each run, fed with agent events (for a display's refresh).

    Hand :meth:`on_event` to ``AgentClient.add_listener`` (or call it from a listener that already
    receives every event, such as the console's link); read ``runs`` at the display's own rate.
    """

    def __init__(self) -> None:
        self.runs: dict[str, BenchProgress] = {}
        self.version = 0

    def on_event(self, ev: Event) -> None:
        if ev.name == "bench_progress" and ev.data.get("run_id"):
            self.runs[ev.data["run_id"]] = BenchProgress.from_event(ev.data)
            self.version += 1

    def active(self) -> list[BenchProgress]:
        return [p for p in self.runs.values() if not p.finished]
