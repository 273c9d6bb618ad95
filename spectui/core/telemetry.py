"""GPU telemetry as the client holds it: typed frames and bounded ring buffers."""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    used_mib: float | None
    user: str | None = None      # None: not readable on the host (another PID namespace, exited, not ours)
    command: str | None = None
    pgid: int | None = None      # matches a server's process group

    @classmethod
    def from_dict(cls, d: dict) -> "GpuProcess":
        pgid = d.get("pgid")
        return cls(int(d["pid"]), d.get("used_mib"), d.get("user"), d.get("command"),
                   int(pgid) if isinstance(pgid, int) else None)


@dataclass(frozen=True)
class GpuSample:
    index: int
    name: str | None = None
    uuid: str | None = None
    util_pct: float | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temp_c: float | None = None
    sm_clock_mhz: float | None = None
    processes: tuple[GpuProcess, ...] | None = None  # None: the source cannot list them

    @classmethod
    def from_dict(cls, d: dict) -> "GpuSample":
        procs = d.get("processes")
        return cls(
            index=int(d["index"]),
            name=d.get("name"),
            uuid=d.get("uuid"),
            util_pct=d.get("util_pct"),
            mem_used_mib=d.get("mem_used_mib"),
            mem_total_mib=d.get("mem_total_mib"),
            power_w=d.get("power_w"),
            power_limit_w=d.get("power_limit_w"),
            temp_c=d.get("temp_c"),
            sm_clock_mhz=d.get("sm_clock_mhz"),
            processes=None if procs is None else tuple(GpuProcess.from_dict(p) for p in procs),
        )


@dataclass(frozen=True)
class TelemetryFrame:
    """One GPU sample of the whole host."""

    seq: int
    sampled_at: float          # host clock
    received_at: float         # client clock
    source: str
    gpus: tuple[GpuSample, ...]
    missing: tuple[str, ...] = ()
    message: str | None = None  # e.g. "no GPU telemetry: ..."
    error: str | None = None

    @classmethod
    def from_event(cls, data: dict, received_at: float) -> "TelemetryFrame":
        return cls(
            seq=int(data.get("seq", 0)),
            sampled_at=float(data.get("t", received_at)),
            received_at=received_at,
            source=str(data.get("source", "?")),
            gpus=tuple(GpuSample.from_dict(g) for g in data.get("gpus", [])),
            missing=tuple(data.get("missing", ())),
            message=data.get("message"),
            error=data.get("error"),
        )

    @property
    def available(self) -> bool:
        return self.source != "none"


class RingBuffer:
    """A fixed-capacity series of floats (NaN for a missing value); memory never grows."""

    def __init__(self, capacity: int):
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        self.capacity = capacity
        self._data = array("d", [math.nan]) * capacity
        self._next = 0
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def append(self, value: float | None) -> None:
        self._data[self._next] = math.nan if value is None else float(value)
        self._next = (self._next + 1) % self.capacity
        if self._count < self.capacity:
            self._count += 1

    def values(self, last: int | None = None) -> list[float]:
        n = self._count if last is None else min(last, self._count)
        start = (self._next - n) % self.capacity
        if start + n <= self.capacity:
            return self._data[start:start + n].tolist()
        return (self._data[start:] + self._data[:(start + n) % self.capacity]).tolist()

    def latest(self) -> float | None:
        if not self._count:
            return None
        v = self._data[(self._next - 1) % self.capacity]
        return None if math.isnan(v) else v


@dataclass
class GpuHistory:
    """Per-GPU series for the panels (utilization, memory, power), bounded."""

    capacity: int = 3600
    util: dict[int, RingBuffer] = field(default_factory=dict)
    mem: dict[int, RingBuffer] = field(default_factory=dict)
    power: dict[int, RingBuffer] = field(default_factory=dict)

    def add(self, frame: TelemetryFrame) -> None:
        for g in frame.gpus:
            for series, value in ((self.util, g.util_pct), (self.mem, g.mem_used_mib), (self.power, g.power_w)):
                buf = series.get(g.index)
                if buf is None:
                    buf = series[g.index] = RingBuffer(self.capacity)
                buf.append(value)
