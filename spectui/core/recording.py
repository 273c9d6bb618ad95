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

A recording is also a file anyone can hand over, so reading one trusts nothing in it: the inflated size
(:data:`MAX_INFLATED_BYTES`), the number of events (:data:`MAX_EVENTS`) and each line's length
(:data:`MAX_LINE_BYTES`) are measured on a first pass that keeps nothing, and the header and every event
are held to :mod:`spectui.core.recording_schema`; anything wrong is one sentence naming the file and line.
The writer ends a recording before it would outgrow what a reader takes.

What a recording keeps of a command line has its secrets masked as everywhere else
(:mod:`spectui.core.profiles.secret_flags`): ``argv`` and ``launch_argv`` lists, ``profile`` dicts and GPU
process ``command`` lines, and any later text holding a value masked there (a server log printing its own
arguments). The file is created new (never through a link, never over a file) and private (0600); a folder
the writer creates, and the recordings folder, are 0700. In the recordings folder a name already taken (two
recordings started in the same second) gets a number (``-2``) rather than an error.
"""

from __future__ import annotations

import collections
import errno
import gzip
import json
import logging
import os
import re
import stat
import sys
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spectui.core.errors import SpectuiError
from spectui.core.paths import recordings_dir
from spectui.core.profiles.secret_flags import REDACTED, is_secret_flag, redact_argv, redact_profile_dict
from spectui.core.recording_schema import (HEADER, STARTED_MAX, T_MAX, T_MIN, Invalid, check_event, kind, number,
                                           whole)

log = logging.getLogger(__name__)

FORMAT = "spectui-recording"
VERSION = 1
FLUSH_S = 1.0
BUDGET_MB_PER_HOUR = 50.0
THINNED = ("gpu", "server_frame")
# version -> function upgrading one event line of that version to the next
UPGRADES: dict[int, Callable[[dict], dict]] = {}

#: The most a recording inflates to: about ten hours of a busy host (four servers, eight GPUs) at the default
#: rates, and what the console can hold for a replay.
MAX_INFLATED_BYTES = 256 * 1024 * 1024
#: The most events a recording holds.
MAX_EVENTS = 2_000_000
#: The longest line (a log read is the longest event spectui writes, far below this).
MAX_LINE_BYTES = 8 * 1024 * 1024
CHUNK = 1 << 16
EVENT_NAME = re.compile(r"[a-z][a-z0-9_.]{0,63}")   # the agent's (gpu, probe.progress) and the console's
REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
#: Keys whose value is a command line (a list of words) or a profile, in any event.
ARGV_KEYS = ("argv", "launch_argv")
PROFILE_KEYS = ("profile", "profile_content")
#: A masked value shorter than this is not looked for in other text (it would mask ordinary words).
MIN_SCRUBBED = 6
SAME_NAME_TRIES = 100
SUFFIX = ".spectui.gz"
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class RecordingError(SpectuiError):
    """A recording that cannot be written or read; ``str()`` is one sentence."""


# --- files made new and private ------------------------------------------------------------------------------------
def private_folder(folder: Path) -> None:
    """Create ``folder`` (and its parents) when missing; the folder itself 0700 when created here, or when it
    is spectui's recordings folder."""
    if not folder.is_dir():
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(folder, 0o700)
    elif _same(folder, recordings_dir()):
        os.chmod(folder, 0o700)


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def create_new(path: Path, *, dir_fd: int | None = None) -> int:
    """A file descriptor of ``path`` (in the folder ``dir_fd``, when given) created now, 0600, for writing;
    never through a link, never over a file (``FileExistsError``, also for a link that points nowhere)."""
    fd = os.open(path, _CREATE, 0o600, dir_fd=dir_fd)
    os.fchmod(fd, 0o600)
    return fd


def numbered(path: Path, n: int) -> Path:
    """``name-2.spectui.gz`` for ``name.spectui.gz`` (``n`` = 2)."""
    name = path.name
    stem, ext = (name[: -len(SUFFIX)], SUFFIX) if name.endswith(SUFFIX) else (path.stem, path.suffix)
    return path.with_name(f"{stem}-{n}{ext}")


def _open_new(path: Path) -> tuple[Path, int]:
    """The path created and its descriptor: in the recordings folder, a taken name gets a number."""
    try:
        private_folder(path.parent)
    except OSError as exc:
        raise RecordingError(f"cannot record to {path}: {exc.strerror or exc}") from None
    tries = SAME_NAME_TRIES if _same(path.parent, recordings_dir()) else 1
    for n in range(1, tries + 1):
        candidate = path if n == 1 else numbered(path, n)
        try:
            return candidate, create_new(candidate)
        except FileExistsError:
            continue
        except OSError as exc:
            if exc.errno == errno.ELOOP:   # O_NOFOLLOW on a link
                continue
            raise RecordingError(f"cannot record to {candidate}: {exc.strerror or exc}") from None
    raise RecordingError(f"cannot record to {path}: it exists (a recording is never overwritten, nor written "
                         "through a link); give another file name")


# --- secrets --------------------------------------------------------------------------------------------------------
class _Masker:
    """Masks secret flag values in what is written, and remembers each value masked to mask it in later text."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def argv(self, words: list) -> list:
        shown = redact_argv([str(w) for w in words]) or []
        for before, after in zip(words, shown):
            if before != after:
                self.remember(str(before).split("=", 1)[1] if after.endswith("=" + REDACTED) else str(before))
        return shown

    def remember(self, value: str) -> None:
        """Mask ``value`` wherever it shows up later; not a short one, nor a ``${NAME}`` reference (no secret)."""
        if len(value) >= MIN_SCRUBBED and value != REDACTED and not REFERENCE.fullmatch(value):
            self.seen.add(value)

    def profile(self, content: dict) -> dict:
        args = content.get("args")
        if isinstance(args, dict):
            for k, v in args.items():
                if is_secret_flag(str(k)) and isinstance(v, str):
                    self.remember(v)
        return redact_profile_dict(self.walk(content))

    def walk(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.walk(v) for v in value]
        if not isinstance(value, Mapping):
            return value
        out = {}
        for k, v in value.items():
            if k in ARGV_KEYS and isinstance(v, list):
                out[k] = self.argv(v)
            elif k in PROFILE_KEYS and isinstance(v, dict):
                out[k] = self.profile(v)
            elif k == "profiles" and isinstance(v, list):
                out[k] = [self.profile(p) if isinstance(p, dict) else p for p in v]
            elif k == "command" and isinstance(v, str):
                words = v.split()
                shown = self.argv(words)
                out[k] = v if shown == words else " ".join(shown)
            else:
                out[k] = self.walk(v)
        return out

    def line(self, obj: dict) -> str:
        text = json.dumps(obj, separators=(",", ":"), default=_json_value)
        if any(f'"{k}":' in text for k in (*ARGV_KEYS, *PROFILE_KEYS, "command", "profiles")):
            text = json.dumps(self.walk(obj), separators=(",", ":"), default=_json_value)
        for secret in self.seen:
            shown = json.dumps(secret)[1:-1]
            if shown in text:
                text = text.replace(shown, REDACTED)
        return text


def _json_value(value: Any) -> Any:
    """What JSON writes for a value it has no form for: a read-only mapping (a checked server record) as the
    object it reads as, anything else as its text."""
    return dict(value) if isinstance(value, Mapping) else str(value)


class RecordingWriter:
    """Appends events to a recording; see the module doc. ``clock`` is for tests."""

    def __init__(self, path: str | Path, header: dict[str, Any], *, flush_s: float = FLUSH_S,
                 budget_mb_per_hour: float = BUDGET_MB_PER_HOUR, clock: Callable[[], float] = time.time) -> None:
        self.flush_s = flush_s
        self.budget_bytes_per_s = budget_mb_per_hour * 1e6 / 3600.0
        self.clock = clock
        self.started = clock()
        self.error: str | None = None
        self.events = 0
        self.thinned = 0
        self.inflated = 0   # bytes written before compression: what a reader inflates
        self.lines = 0      # lines written, the header and notes included
        self._interval: dict[tuple[str, str], float] = {}   # (event, key) -> seconds between kept events
        self._last_kept: dict[tuple[str, str], float] = {}
        self._mask = _Masker()
        self.path, fd = _open_new(Path(path))
        self._raw = os.fdopen(fd, "wb")  # noqa: SIM115 (held open for the recording's life)
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
        if isinstance(data, Mapping) and not isinstance(data, dict):
            data = dict(data)  # a checked server record: written as its wire record
        if event in THINNED and not self._keep(event, data, now):
            return False
        if not self._write({"t": round(now - self.started, 3), "ev": event, "d": data}):
            return False
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

    def _write(self, obj: dict) -> bool:
        """Write one line (the header, an event, a note); False when it was not written."""
        if self._gz is None:
            return False
        line = self._mask.line(obj).encode() + b"\n"
        if len(line) > MAX_LINE_BYTES:
            log.warning("an event of %d bytes was not recorded (%s holds events up to %d bytes)", len(line),
                        self.path, MAX_LINE_BYTES)
            return False
        if self.inflated + len(line) > MAX_INFLATED_BYTES or self.lines > MAX_EVENTS:   # the header is a line too
            self._end(f"recording to {self.path} stopped at the most a recording holds ({MAX_EVENTS} events, "
                      f"{MAX_INFLATED_BYTES // (1 << 20)} MB); what was written before stays")
            return False
        try:
            self._gz.write(line)
        except OSError as exc:
            self._fail(exc)
            return False
        self.inflated += len(line)
        self.lines += 1
        return True

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

    def _end(self, message: str) -> None:
        """End a recording that has reached a limit: closed as a complete file, ``error`` says why."""
        self.close()
        if self.error is None:
            self.error = message
            log.warning("%s", message)

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

    @property
    def has_session(self) -> bool:
        """Whether the recorded console ever connected (a replay starts at its first session)."""
        return any(name == "session" for _, name, _ in self.events)

    def between(self, start_s: float = 0.0, end_s: float | None = None) -> Iterator[tuple[float, str, Any]]:
        for t, ev, d in self.events:
            if t >= start_s and (end_s is None or t <= end_s):
                yield t, ev, d


# --- reading --------------------------------------------------------------------------------------------------------
class _Stream:
    """The lines of a recording, inflated a chunk at a time and held to the limits; ``truncated`` once read
    through a cut end (a crash: the last flush is the end)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.truncated = False

    def _refuse(self, what: str) -> RecordingError:
        return RecordingError(f"{self.path} is not a recording spectui reads: {what}")

    def _chunks(self, f) -> Iterator[bytes]:
        decomp = zlib.decompressobj(16 + zlib.MAX_WBITS)
        inflated = 0
        while not decomp.eof:
            data = decomp.unconsumed_tail or f.read(CHUNK)
            try:
                out = decomp.decompress(data, CHUNK)   # at most CHUNK bytes out, whatever the ratio
            except zlib.error:
                break
            if not data and not out:   # the end of the file, and nothing held back
                break
            inflated += len(out)
            if inflated > MAX_INFLATED_BYTES:
                raise self._refuse(f"it inflates to more than {MAX_INFLATED_BYTES // (1 << 20)} MB, the most a "
                                   "recording holds")
            if out:
                yield out
        if not decomp.eof:
            self.truncated = True

    def lines(self) -> Iterator[tuple[int, bytes]]:
        """``(line number, line)`` of each complete, non-empty line; a line cut by the end is not one."""
        with _open_regular(self.path) as f:
            pending: list[bytes] = []
            pending_len = 0
            lineno = 0
            for out in self._chunks(f):
                parts = out.split(b"\n")
                for part in parts[:-1]:
                    lineno += 1
                    if lineno > MAX_EVENTS + 1:  # empty lines count: the writer writes none, and a bomb of them is slow
                        raise self._refuse(f"it holds more than {MAX_EVENTS} lines (events), the most a recording "
                                           "holds")
                    line = b"".join((*pending, part)) if pending else part
                    pending, pending_len = [], 0
                    if len(line) > MAX_LINE_BYTES:
                        raise self._line_too_long(lineno)
                    if line:
                        yield lineno, line
                if parts[-1]:
                    pending.append(parts[-1])
                    pending_len += len(parts[-1])
                    if pending_len > MAX_LINE_BYTES:
                        raise self._line_too_long(lineno + 1)
            if pending:
                self.truncated = True   # a line cut mid-way: not replayed

    def _line_too_long(self, lineno: int) -> RecordingError:
        return RecordingError(f"{self.path}, line {lineno}: the line is longer than {MAX_LINE_BYTES // (1 << 20)} MB, "
                              "more than any event spectui writes; this is not a recording spectui reads")


def _open_regular(path: Path):
    """``path`` opened for reading, without blocking on a FIFO or a device; only a regular file is read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    f = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        f.close()
        raise RecordingError(f"{path} is not a regular file; give a recording (spectui connect --record FILE)")
    return f


_STARTED = number(0.0, STARTED_MAX)
_T = number(T_MIN, T_MAX)


def _json(path: Path, lineno: int, raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except RecursionError:
        raise RecordingError(f"{path}, line {lineno}: the line nests deeper than JSON can be read; this is not a "
                             "recording spectui reads") from None
    except ValueError:
        raise RecordingError(f"{path}, line {lineno}: the line is not a JSON object; this is not a recording "
                             "spectui reads") from None


def _header(path: Path, raw: bytes | None) -> dict:
    try:
        header = json.loads(raw) if raw is not None else None
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise RecordingError(f"{path} is not a spectui recording (its first line is not a recording header)")
    try:
        whole()(header.get("version"), "version")
        version = header["version"]
        if version > VERSION:
            raise RecordingError(f"{path} is a recording of format version {version}, newer than this spectui "
                                 f"reads ({VERSION}); update spectui to replay it")
        if version < 1:
            raise Invalid(f"version {version} is not a recording format version (1 to {VERSION})")
        if header.get("started") is None:
            raise Invalid("started (when the recording began) is missing")
        _STARTED(header["started"], "started")
        HEADER(header, "")
    except Invalid as exc:
        raise RecordingError(f"{path}, line 1 (the header): {exc}; this is not a recording spectui reads") from None
    return header


def _event(path: Path, lineno: int, raw: bytes, version: int) -> tuple[float, str, Any]:
    obj = _json(path, lineno, raw)
    ev = obj.get("ev") if isinstance(obj, dict) else None
    try:
        if not isinstance(obj, dict):
            raise Invalid(f"an event must be an object, not {kind(obj)}")
        for v in range(version, VERSION):
            obj = UPGRADES[v](obj)
        if obj.get("t") is None:
            raise Invalid("t (the event's time) is missing")
        _T(obj["t"], "t")
        if not isinstance(ev, str):
            raise Invalid("ev (the event's name) is missing" if ev is None else f"ev must be text, not {kind(ev)}")
        if not EVENT_NAME.fullmatch(ev):
            raise Invalid("ev is not an event name (lower-case letters, digits, _ and .)")
        check_event(ev, obj.get("d"))
    except Invalid as exc:
        what = f" ({ev} event)" if isinstance(ev, str) and EVENT_NAME.fullmatch(ev) else ""
        raise RecordingError(f"{path}, line {lineno}{what}: {exc}; this is not a recording spectui reads") from None
    return float(obj["t"]), sys.intern(ev), obj.get("d")


def read_recording(path: str | Path) -> Recording:
    """The recording at ``path``, every line checked (see the module doc); :class:`RecordingError` otherwise."""
    p = Path(path)
    try:
        collections.deque(_Stream(p).lines(), maxlen=0)   # the limits, keeping nothing
        stream = _Stream(p)
        lines = stream.lines()
        first = next(lines, None)
        if first is None:
            raise RecordingError(f"{p} is not a spectui recording (it is empty or not gzip-compressed)")
        header = _header(p, first[1])
        rec = Recording(header=header)
        for lineno, raw in lines:
            rec.events.append(_event(p, lineno, raw, header["version"]))
    except OSError as exc:
        raise RecordingError(f"cannot read the recording {p}: {exc.strerror or exc}") from None
    rec.truncated = stream.truncated
    return rec
