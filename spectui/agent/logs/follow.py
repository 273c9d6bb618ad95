"""Follow a growing log file, and turn what it gains into SGLang log records.

Runs on the GPU host under the host's Python (3.8+): standard library only. Poll-based
(no inotify): the agent calls ``read_new()`` / ``poll()`` on its own schedule.

:class:`LogFollower` yields complete lines, holding a partial last line until its end
arrives, and survives the two ways a log is cut:

* rotation -- the path now names another file (another inode, or the file is gone and
  comes back): the rest of the old file is read first, then the new one from its start;
* truncation -- the file shrank below the read offset, or its first bytes changed under
  us (``copytruncate`` followed by quick regrowth): reading restarts at offset 0.

Only a regular file is read: a log path is opened without waiting (``O_NONBLOCK``: a FIFO
with no writer would hold the open forever) and without following a symbolic link where the
path is spectui's own (``nofollow``), and what it opened is looked at (``fstat``): a FIFO, a
device (``/dev/zero`` never ends), a socket or a folder is refused, and ``refused`` says so in
one sentence (:func:`open_regular`).

Memory and time stay bounded on a huge backlog: ``tail_bytes`` starts near the end instead of at
the beginning, each call reads at most ``max_read_bytes`` within ``max_read_s``, and a line longer than
``max_line_bytes`` (64 KiB) is cut there, marked by a ``(index, "cut")`` entry in
``events``, and the rest of it is skipped up to its end: following goes on with the next
line, however long the cut one is.

:func:`read_lines_at` serves the stateless ``server.logs`` reads (an offset in, whole lines
and the next offset out) under the same cap; :func:`read_tail` its tails, read from the end of
the file, bounded in lines (:data:`TAIL_MAX_LINES`) and bytes (:data:`TAIL_MAX_BYTES`).

``\\r`` counts as a line end too (``split_cr``), so each tqdm update of a progress bar
(written as ``\\r<bar>`` on one physical line) is a line of its own.

:class:`LogStream` is the agent's one-stop object: a follower feeding a
:class:`~.logs.LogFeeder`; ``poll()`` returns new records.
"""

from __future__ import annotations

import json
import os
import stat
import time
from typing import Any, Callable, Dict, List, Optional

from . import LogFeeder, parse_progress

__all__ = ["LogFollower", "LogStream", "read_lines_at", "read_tail", "open_regular", "NotRegular", "CUT_MARK",
           "LINE_CAP_BYTES", "TAIL_MAX_LINES", "TAIL_MAX_BYTES"]

READ_S = 0.5  # the most one call of LogFollower.read_new reads for


class NotRegular(OSError):
    """A log path that names no regular file (a FIFO, a device, a socket, a folder, a link where none is
    followed); ``str()`` is one sentence naming it."""


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, in words, for a file that is not regular."""
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def open_regular(path: str, nofollow: bool = False) -> int:
    """An fd (read-only, close-on-exec) of the regular file ``path``, opened without waiting (a FIFO with no writer
    holds a plain open forever) and, with ``nofollow``, without following a symbolic link. Raises
    :class:`NotRegular` (one sentence) for anything else, and OSError when it cannot be opened."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (getattr(os, "O_NOFOLLOW", 0) if nofollow else 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if nofollow and os.path.islink(path):
            raise NotRegular("%s is a symbolic link, which spectui does not follow for a log it writes itself; "
                             "nothing was read" % path) from None
        raise exc
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegular("%s is %s, not a regular file, so spectui did not read it" % (path, kind_of(mode)))
    return fd

_HEAD_BYTES = 64
# A log line longer than this is cut: SGLang's longest lines (the ``server_args=ServerArgs(...)``
# dump at start-up) are a few KiB; anything past this is not a line a person or a parser reads.
LINE_CAP_BYTES = 64 * 1024
# Appended to a cut line, so that a reader sees it was cut.
CUT_MARK = " [... line cut at %d KiB]"


def cut_line(raw: bytes, limit: int, encoding: str = "utf-8") -> str:
    """The first ``limit`` bytes of a too-long line, decoded, with ``CUT_MARK``."""
    return raw[:limit].decode(encoding, "replace") + CUT_MARK % max(1, limit // 1024)


def _first_line_end(data: bytes, split_cr: bool) -> int:
    i = data.find(b"\n")
    if split_cr:
        j = data.find(b"\r")
        if j >= 0 and (i < 0 or j < i):
            i = j
    return i


def read_lines_at(fh: Any, offset: int, max_bytes: int = 1 << 20,
                  max_line_bytes: int = LINE_CAP_BYTES) -> "tuple[List[str], int]":
    """Whole lines of the open binary file ``fh`` from ``offset``, and the offset after them.

    Lines end at ``\\n``; an unfinished line longer than ``max_line_bytes`` also ends at its last
    ``\\r`` (a progress bar redrawn in place). Reads at most ``max_bytes`` per call. A line longer
    than ``max_line_bytes`` comes back cut (with ``CUT_MARK``) and the offset returned may lie
    inside it, past the cap; a later call from such an offset (no line end in the
    ``max_line_bytes`` before it) skips the rest of that line, so the offset always moves on.
    """
    cap = int(max_line_bytes)
    max_bytes = max(int(max_bytes), cap + 1)
    before = b""
    if offset > 0:
        start = max(0, offset - cap - 1)
        fh.seek(start)
        before = fh.read(offset - start)
    fh.seek(offset)
    data = fh.read(max_bytes)
    if len(before) > cap and _first_line_end(before, True) < 0:  # inside a cut line: skip to its end
        i = _first_line_end(data, True)
        if i < 0:
            return [], offset + len(data)
        i += 2 if data[i:i + 2] == b"\r\n" else 1
        offset += i
        data = data[i:]
    elif before.endswith(b"\r") and data.startswith(b"\n"):  # the rest of a "\r\n"
        offset += 1
        data = data[1:]
    cut = data.rfind(b"\n") + 1
    done, rest = data[:cut], data[cut:]
    after = offset + cut
    pieces = []
    if len(rest) > cap:
        j = rest.rfind(b"\r") + 1
        done, rest, after = data[:cut + j], rest[j:], after + j
        if len(rest) > cap:  # an unfinished line already past the cap: give it cut, move on
            pieces.append(rest)
            after = offset + len(data)
    lines: List[str] = []
    for raw in done.splitlines() + pieces:
        if len(raw) > cap:
            lines.append(cut_line(raw, cap))
        else:
            lines.extend(raw.decode("utf-8", "replace").splitlines() or [""])
    return lines, after


TAIL_MAX_LINES = 100000  # the most lines a tail gives
TAIL_MAX_BYTES = 8 * 1024 * 1024  # the most a tail reads of a log (from its end), and sends (JSON-encoded)


def read_tail(fh: Any, size: int, lines: int, max_bytes: int = TAIL_MAX_BYTES,
              max_line_bytes: int = LINE_CAP_BYTES) -> "tuple[List[str], bool]":
    """The last ``lines`` lines of the open binary regular file ``fh`` whose size was ``size``, read backwards
    from that end (never past it: a file that grows meanwhile is not followed) and at most ``max_bytes`` of it,
    each line cut at ``max_line_bytes``, and no more lines than fit in ``max_bytes`` once JSON-encoded. Returns the
    lines and whether the byte budget, not ``lines``, decided how many came back."""
    lines = max(0, min(int(lines), TAIL_MAX_LINES))
    chunks: List[bytes] = []
    pos, newlines = size, 0
    while lines and pos > 0 and newlines <= lines and size - pos < max_bytes:
        step = min(1 << 16, pos, max_bytes - (size - pos))
        pos -= step
        fh.seek(pos)
        piece = fh.read(step)
        chunks.append(piece)
        newlines += piece.count(b"\n")
    data = b"".join(reversed(chunks))
    short = pos > 0 and newlines <= lines
    if pos > 0 and b"\n" in data:  # the first line read is the end of one that began before
        data = data[data.index(b"\n") + 1:]
    text = data.decode("utf-8", "replace").splitlines()[-lines:] if lines else []
    cap = int(max_line_bytes)
    out: List[str] = []
    budget = max_bytes
    for line in reversed(text):
        if len(line) > cap:
            line = line[:cap] + CUT_MARK % max(1, cap // 1024)
        budget -= len(json.dumps(line)) + 1
        if budget < 0:
            short = True
            break
        out.append(line)
    out.reverse()
    return out, short


class LogFollower:
    """Read the lines a log file gains, across rotation and truncation.

    ``tail_bytes=None`` reads the existing file from its start; ``tail_bytes=N`` starts at
    the last ``N`` bytes (dropping the partial line there); ``tail_bytes=0`` starts at the
    end. A file that does not exist yet is waited for, and read from its start when it
    appears. Counters ``rotations``, ``truncations`` and ``cut_lines`` tell what happened.
    """

    def __init__(
        self,
        path: str,
        tail_bytes: Optional[int] = None,
        max_read_bytes: int = 4 << 20,
        max_line_bytes: int = LINE_CAP_BYTES,
        encoding: str = "utf-8",
        split_cr: bool = True,
        nofollow: bool = False,
        max_read_s: float = READ_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = os.fspath(path)
        self.nofollow = nofollow
        self.max_read_s = max_read_s
        self.clock = clock
        #: one sentence while the path names no regular file (nothing is read then), else None
        self.refused: Optional[str] = None
        self.tail_bytes = tail_bytes
        self.max_read_bytes = max(1, int(max_read_bytes))
        self.max_line_bytes = max(1, int(max_line_bytes))
        self.encoding = encoding
        self.split_cr = split_cr
        self.rotations = 0
        self.truncations = 0
        self.cut_lines = 0
        self._dropping = False  # inside a line already cut: skip up to its end
        self._fh: Optional[Any] = None
        self._id: Optional[tuple] = None
        self._pos = 0
        self._partial = b""
        self._head = b""
        self._skip_first = False
        self._last_cr = False
        self._first_check = True
        # (index in the last read_new() result, "rotated" | "truncated" | "cut"); a "cut" line
        # is the first max_line_bytes of a longer one
        self.events: List[tuple] = []

    # -- public -------------------------------------------------------------------

    @property
    def partial(self) -> str:
        """The bytes of the line still being written, decoded (may be empty)."""
        return self._partial.decode(self.encoding, "replace")

    @property
    def offset(self) -> int:
        """Bytes consumed from the current file."""
        return self._pos

    def read_new(self) -> List[str]:
        """The complete lines added since the last call (without line ends)."""
        out: List[str] = []
        self.events = []
        self._check_file(out)
        if self._fh is not None:
            self._read(self._fh, self.max_read_bytes, out)
        return out

    def close(self) -> None:
        if self._fh is not None:
            try:
                self._fh.close()
            finally:
                self._fh = None

    def __enter__(self) -> "LogFollower":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- internals ------------------------------------------------------------------

    def _open(self, from_start: bool) -> None:
        try:
            fd = open_regular(self.path, self.nofollow)
        except NotRegular as exc:
            self.refused = str(exc)
            return
        except OSError:
            return
        self.refused = None
        fh = os.fdopen(fd, "rb")
        st = os.fstat(fh.fileno())
        self._fh = fh
        self._id = (st.st_dev, st.st_ino)
        self._partial = b""
        self._last_cr = False
        self._skip_first = False
        self._dropping = False
        self._pos = 0
        self._head = self._read_head()
        if not from_start and self.tail_bytes is not None and st.st_size > self.tail_bytes:
            self._pos = st.st_size - max(0, self.tail_bytes)
            fh.seek(self._pos)
            # Unless a line ends just before the start, the first line read is a fragment.
            self._skip_first = self._pread(1, self._pos - 1) not in (b"\n", b"\r")

    def _pread(self, size: int, offset: int) -> bytes:
        fh = self._fh
        try:
            return os.pread(fh.fileno(), size, offset)
        except (OSError, AttributeError):  # no pread on this platform: seek and read
            here = fh.tell()
            try:
                fh.seek(offset)
                return fh.read(size)
            finally:
                fh.seek(here)

    def _read_head(self) -> bytes:
        return self._pread(_HEAD_BYTES, 0)

    def _check_file(self, out: List[str]) -> None:
        first, self._first_check = self._first_check, False
        try:
            st = os.lstat(self.path) if self.nofollow else os.stat(self.path)
        except OSError:
            return  # not there (yet, or mid-rotation): keep reading the open file, if any
        if self._fh is None:
            # tail_bytes applies to the file found at the start; one that appears later is new.
            self._open(from_start=not first)
            return
        if (st.st_dev, st.st_ino) != self._id:
            # Rotated: finish the old file (within one call's budget), then start the new one from its beginning.
            self._read(self._fh, self.max_read_bytes, out)
            if self._partial:
                out.append(self._decode(self._partial))
            self.close()
            self.rotations += 1
            self.events.append((len(out), "rotated"))
            self._open(from_start=True)
            return
        size = os.fstat(self._fh.fileno()).st_size
        if size < self._pos or (self._head and self._read_head()[: len(self._head)] != self._head):
            self.truncations += 1
            self.events.append((len(out), "truncated"))
            self._fh.seek(0)
            self._pos = 0
            self._partial = b""
            self._last_cr = False
            self._skip_first = False
            self._dropping = False
            self._head = self._read_head()
        elif len(self._head) < _HEAD_BYTES and size > len(self._head):
            self._head = self._read_head()

    def _decode(self, raw: bytes) -> str:
        return raw.decode(self.encoding, "replace")

    def _read(self, fh: Any, budget: Optional[int], out: List[str]) -> None:
        end = self.clock() + self.max_read_s
        while (budget is None or budget > 0) and self.clock() < end:
            want = 1 << 18 if budget is None else min(1 << 18, budget)
            chunk = fh.read(want)
            if not chunk:
                return
            self._pos += len(chunk)
            if budget is not None:
                budget -= len(chunk)
            self._consume(chunk, out)

    def _consume(self, chunk: bytes, out: List[str]) -> None:
        if self._last_cr and chunk[:1] == b"\n":
            chunk = chunk[1:]  # the "\n" of a "\r\n" split across reads
        self._last_cr = False
        if self._dropping:
            chunk = self._drop_rest_of_cut_line(chunk)
            if not chunk:
                return
        data = self._partial + chunk if self._partial else chunk
        if self.split_cr:
            pieces = data.splitlines()
            ends_complete = data[-1:] in (b"\n", b"\r")
            self._last_cr = data[-1:] == b"\r"
        else:
            pieces = data.split(b"\n")
            ends_complete = data[-1:] == b"\n"
            if ends_complete:
                pieces.pop()
            pieces = [p[:-1] if p[-1:] == b"\r" else p for p in pieces]
        if ends_complete:
            self._partial = b""
        else:
            self._partial = pieces.pop() if pieces else data
        if self._skip_first and pieces:
            pieces.pop(0)
            self._skip_first = False
        decode = self._decode
        limit = self.max_line_bytes
        for p in pieces:
            if len(p) <= limit:
                out.append(decode(p))
            else:
                self._cut(p, out)
        if len(self._partial) > limit:
            if self._skip_first:
                self._skip_first = False
            else:
                self._cut(self._partial, out)
            self._partial = b""
            self._dropping = True

    def _cut(self, raw: bytes, out: List[str]) -> None:
        self.cut_lines += 1
        self.events.append((len(out), "cut"))
        out.append(self._decode(raw[: self.max_line_bytes]))

    def _drop_rest_of_cut_line(self, chunk: bytes) -> bytes:
        """What follows the end of the line being skipped (b"" while it goes on)."""
        i = _first_line_end(chunk, self.split_cr)
        if i < 0:
            return b""
        self._dropping = False
        end = chunk[i:i + 1]
        chunk = chunk[i + 1:]
        if end == b"\r" and self.split_cr:
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
            elif not chunk:
                self._last_cr = True
        return chunk


class LogStream:
    """A log file followed and read: ``poll()`` returns the records it gained.

    Besides the records of :func:`~.logs.parse_line` / :class:`~.logs.LogFeeder`:

    * a traceback still open when the log has been quiet for ``idle_flush_s`` is closed
      and returned (a crashing server writes nothing after it);
    * the tqdm bar being drawn right now (the unterminated last line) is returned as a
      ``loading`` / ``progress`` record as soon as it changes, so weight loading shows
      live; the same update is not returned twice;
    * ``{"kind": "log_reset", "reason": "rotated" | "truncated", "time": None}`` when
      the file was rotated or truncated, so that a consumer can reset its view.
    """

    def __init__(
        self,
        path: str,
        tail_bytes: Optional[int] = None,
        idle_flush_s: float = 1.0,
        max_read_bytes: int = 4 << 20,
        max_error_lines: int = 200,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.follower = LogFollower(path, tail_bytes=tail_bytes, max_read_bytes=max_read_bytes)
        self.feeder = LogFeeder(max_error_lines=max_error_lines)
        self.idle_flush_s = idle_flush_s
        self._clock = clock
        self._last_data = clock()
        self._last_progress: Optional[tuple] = None

    @property
    def path(self) -> str:
        return self.follower.path

    def poll(self) -> List[Dict[str, Any]]:
        """New records since the last call, in log order."""
        follower = self.follower
        lines = follower.read_new()
        out: List[Dict[str, Any]] = []
        now = self._clock()
        if lines or follower.events:
            self._last_data = now
            start = 0
            for at, reason in follower.events:
                if reason == "cut":
                    continue
                self._feed(lines[start:at], out)
                out.extend(self.feeder.flush())
                self._last_progress = None
                out.append({"kind": "log_reset", "time": None, "reason": reason})
                start = at
            self._feed(lines[start:], out)
        elif self.feeder.pending and now - self._last_data >= self.idle_flush_s:
            out.extend(self.feeder.flush())
        partial = follower.partial
        if partial:
            rec = parse_progress(partial)
            if rec is not None:
                self._add_progress(rec, out)
        return out

    def _feed(self, lines: List[str], out: List[Dict[str, Any]]) -> None:
        for rec in self.feeder.feed_lines(lines):
            if rec["kind"] in ("loading", "progress"):
                self._add_progress(rec, out)
            else:
                out.append(rec)

    def _add_progress(self, rec: Dict[str, Any], out: List[Dict[str, Any]]) -> None:
        key = (rec["desc"], rec["done"], rec["total"], rec["percent"])
        if key != self._last_progress:
            self._last_progress = key
            out.append(rec)

    def close(self) -> None:
        self.follower.close()

    def __enter__(self) -> "LogStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
