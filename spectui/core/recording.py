"""Recordings: everything the console received from a host, in one file that replays.

A recording is gzip-compressed JSON lines. The first line is the header::

    {"format": "spectui-recording", "version": 1, "spectui": "0.2.0", "started": 1764496800.0,
     "host": {...host.facts...}, "target": "root@gpu-box", "profiles": [{...}, ...]}

then one line per thing received, in order, ``t`` in seconds since ``started``::

    {"t": 12.31, "ev": "server_frame", "d": {...the agent's event data...}}
    {"t": 14.02, "ev": "alert", "d": {"kind": "fired", "rule": "below_break_even", ...}}

Event names are the agent's (``gpu``, ``server``, ``server_frame``, ``switch``, ``log``, ...) plus the
console's own (``alert``, ``bench``, ``note``). The file is flushed as a complete deflate block every
``flush_s`` (1 s) and fsynced, so a console killed with -9 leaves a file that reads up to its last
flush: :func:`read_recording` stops at a cut end and says so (``truncated``).

Size is bounded per hour (``budget_mb_per_hour``, 50 MB): when the compressed bytes run ahead of the
budget for the time recorded, frequent series (``gpu``, ``server_frame``) are kept at a coarser
interval (doubling, per event and server), never dropped entirely, and each thinning is noted in
the file. A full disk or any write error ends the recording with one sentence (``error``); what was
written stays readable and the console goes on.

A recording from an older version plays: readers upgrade each line through :data:`UPGRADES`.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spectui.core.errors import SpectuiError

log = logging.getLogger(__name__)

FORMAT = "spectui-recording"
VERSION = 1
FLUSH_S = 1.0
BUDGET_MB_PER_HOUR = 50.0
THINNED = ("gpu", "server_frame")
# version -> function upgrading one event line of that version to the next
UPGRADES: dict[int, Callable[[dict], dict]] = {}


class RecordingError(SpectuiError):
    """A recording that cannot be written or read; ``str()`` is one sentence."""


class RecordingWriter:
    """Appends events to a recording; see the module doc. ``clock`` is for tests."""

    def __init__(self, path: str | Path, header: dict[str, Any], *, flush_s: float = FLUSH_S,
                 budget_mb_per_hour: float = BUDGET_MB_PER_HOUR, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.flush_s = flush_s
        self.budget_bytes_per_s = budget_mb_per_hour * 1e6 / 3600.0
        self.clock = clock
        self.started = clock()
        self.error: str | None = None
        self.events = 0
        self.thinned = 0
        self._interval: dict[tuple[str, str], float] = {}   # (event, key) -> seconds between kept events
        self._last_kept: dict[tuple[str, str], float] = {}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._raw = open(self.path, "wb")  # noqa: SIM115 (held open for the recording's life)
        except OSError as exc:
            raise RecordingError(f"cannot record to {self.path}: {exc.strerror or exc}") from None
        self._gz = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=6, mtime=0)
        self._last_flush = self.started
        self._write({"format": FORMAT, "version": VERSION, "started": self.started, **header})
        self.flush()

    @property
    def closed(self) -> bool:
        return self._gz is None

    @property
    def bytes_written(self) -> int:
        return self._raw.tell() if not self._raw.closed else self.path.stat().st_size

    def write(self, event: str, data: Any, *, at: float | None = None) -> bool:
        """Record one event (``at``: when it was received, default now); False when it was thinned out or
        the recording has ended."""
        if self._gz is None:
            return False
        now = self.clock() if at is None else at
        if event in THINNED and not self._keep(event, data, now):
            return False
        self._write({"t": round(now - self.started, 3), "ev": event, "d": data})
        self.events += 1
        if now - self._last_flush >= self.flush_s:
            self.flush(now)
        return True

    def _keep(self, event: str, data: Any, now: float) -> bool:
        key = (event, str(data.get("name", "")) if isinstance(data, dict) else "")
        interval = self._interval.get(key, 0.0)
        last = self._last_kept.get(key)
        if last is not None and now - last < interval:
            return False
        self._last_kept[key] = now
        elapsed = max(now - self.started, 60.0)   # a first minute's burst is not a trend
        if self._raw.tell() > self.budget_bytes_per_s * elapsed:
            self._interval[key] = max(1.0, interval * 2)
            self.thinned += 1
            self._write({"t": round(now - self.started, 3), "ev": "note",
                         "d": {"thinned": event, "key": key[1], "interval_s": self._interval[key]}})
        return True

    def _write(self, obj: dict) -> None:
        if self._gz is None:
            return
        try:
            self._gz.write(json.dumps(obj, separators=(",", ":"), default=str).encode() + b"\n")
        except OSError as exc:
            self._fail(exc)

    def flush(self, now: float | None = None) -> None:
        """Make everything written so far readable after a crash (a sync flush, then fsync)."""
        if self._gz is None:
            return
        try:
            self._gz.flush(zlib.Z_SYNC_FLUSH)
            self._raw.flush()
            os.fsync(self._raw.fileno())
        except OSError as exc:
            self._fail(exc)
        self._last_flush = self.clock() if now is None else now

    def flush_if_due(self) -> None:
        """Flush when ``flush_s`` has passed since the last flush (a quiet recording is written each second too)."""
        now = self.clock()
        if now - self._last_flush >= self.flush_s:
            self.flush(now)

    def _fail(self, exc: OSError) -> None:
        self.error = f"recording to {self.path} stopped: {exc.strerror or exc}; what was written before stays"
        log.warning("%s", self.error)
        gz, self._gz = self._gz, None
        for f in (gz, self._raw):
            try:
                f.close()
            except OSError as close_exc:  # the disk that failed the write may fail the close too
                log.debug("closing %s after a failed write: %s", self.path, close_exc)

    def close(self) -> None:
        if self._gz is None:
            return
        try:
            self._gz.close()
            self._raw.close()
        except OSError as exc:
            self._fail(exc)
        self._gz = None


@dataclass
class Recording:
    header: dict
    events: list[tuple[float, str, Any]] = field(default_factory=list)   # (t since start, event, data)
    truncated: bool = False   # the file ends mid-stream (a crash): everything up to its last flush is here

    @property
    def duration_s(self) -> float:
        return self.events[-1][0] if self.events else 0.0

    def between(self, start_s: float = 0.0, end_s: float | None = None) -> Iterator[tuple[float, str, Any]]:
        for t, ev, d in self.events:
            if t >= start_s and (end_s is None or t <= end_s):
                yield t, ev, d


def _lines(path: Path) -> tuple[list[bytes], bool]:
    """The complete lines of a gzip file, reading through a cut end; (lines, truncated)."""
    decomp = zlib.decompressobj(16 + zlib.MAX_WBITS)
    buf = b""
    truncated = False
    with open(path, "rb") as f:
        while True:
            chunk = f.read(1 << 16)
            if not chunk:
                break
            try:
                buf += decomp.decompress(chunk)
            except zlib.error:
                truncated = True
                break
            if decomp.eof:
                break
    if not decomp.eof:
        truncated = True
    lines = buf.split(b"\n")
    if lines and lines[-1]:
        truncated = True   # a line cut mid-way: not replayed
    return [ln for ln in lines[:-1] if ln], truncated


def read_recording(path: str | Path) -> Recording:
    p = Path(path)
    try:
        lines, truncated = _lines(p)
    except OSError as exc:
        raise RecordingError(f"cannot read the recording {p}: {exc.strerror or exc}") from None
    if not lines:
        raise RecordingError(f"{p} is not a spectui recording (it is empty or not gzip-compressed)")
    try:
        header = json.loads(lines[0])
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise RecordingError(f"{p} is not a spectui recording (its first line is not a recording header)")
    version = header.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise RecordingError(f"{p} is a recording of format version {version}, newer than this spectui reads "
                             f"({VERSION}); update spectui to replay it")
    rec = Recording(header=header, truncated=truncated)
    for raw in lines[1:]:
        try:
            obj = json.loads(raw)
        except ValueError:
            rec.truncated = True
            break
        for v in range(version, VERSION):
            obj = UPGRADES[v](obj)
        rec.events.append((float(obj["t"]), str(obj["ev"]), obj.get("d")))
    return rec
