"""The parser object and the feeder that gathers tracebacks (see the package docstring)."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from .fastpath import CHUNK_LINES, UNREAD, LearnedShapes
from .messages import Learn, parse_message, parse_progress
from .prefix import Ranks, split_loose, split_prefix
from .tracebacks import TRACEBACK, PendingTraceback


def read_generic(line: str, values: Optional[Dict[str, Any]] = None, learn: Optional[Learn] = None) -> Optional[dict]:
    """The record of one line read by what it says (the generic reader), values through
    the cache ``values``, the shapes of batch lines that the fast readers can take told
    to ``learn``."""
    if "\r" in line or line[-1:] == "\n":
        line = line.rstrip("\r\n")
        if "\r" in line:
            segments = [s for s in line.split("\r") if s.strip()]
            if not segments:
                return None
            line = segments[-1]
    prefix = split_prefix(line)
    if prefix is None:
        prefix = split_loose(line)
        if prefix is None:
            return parse_progress(line)
        return parse_message(prefix[0], prefix[1], prefix[2], None, values)
    time, ranks, msg = prefix
    rank_text = None
    if line[:1] == "[" and time is not None and len(time) >= 19:  # the fast readers' prefix
        close = len(line) - len(msg) - 2
        if line[close:close + 2] == "] ":
            rank_text = line[1 + len(time):close]
    return parse_message(time, ranks, msg, rank_text, values, learn)


class LogParser:
    """Reads log lines to records, learning the shapes of the batch lines it reads so as to
    read the next ones fast (the package docstring, and :mod:`.fastpath`). The learned
    shapes and the value cache are this object's: each reader of a log (a
    :class:`LogFeeder`) has its own parser, used by one thread at a time.

    ``fast=False``: no learned shapes and no cache, every line read by the generic reader
    (what :func:`parse_line` does). ``generated=False``: the fast readers are plain Python
    rather than generated code (see :func:`.fastpath.define`)."""

    def __init__(self, fast: bool = True, generated: bool = True) -> None:
        self.values: Optional[Dict[str, Any]] = {} if fast else None
        self.shapes = LearnedShapes(self.values, generated) if self.values is not None else None

    def parse_line(self, line: str) -> Optional[dict]:
        """One log line -> a record, or ``None`` for lines that are not SGLang's or not of
        interest. Tracebacks need a :class:`LogFeeder`."""
        if self.shapes is None:
            return read_generic(line)
        rec = self.shapes.read_line(line)
        return self.parse_generic(line) if rec is UNREAD else rec

    def parse_generic(self, line: str) -> Optional[dict]:
        """``line`` read by the generic reader (which learns its shape), not the fast readers."""
        shapes = self.shapes
        return read_generic(line, self.values, shapes.learn if shapes is not None else None)

    def parse_message(self, time: Optional[str], ranks: Ranks, msg: str) -> Optional[dict]:
        """The record of a message (a line after its prefix), read by the generic reader."""
        return parse_message(time, ranks, msg, None, self.values)

    def read_chunk(self, lines: List[str], append: Any, extend: Any, slow: Any) -> int:
        """The learned shapes' chunk reader (see :func:`.fastpath._generated_chunk_reader`)."""
        return self.shapes.read_chunk(lines, append, extend, slow) if self.shapes is not None else 0


def parse_line(line: str) -> Optional[dict]:
    """One log line -> a record, or ``None`` for lines that are not SGLang's or not of
    interest. One-shot (no shape learned, nothing kept): tracebacks need a
    :class:`LogFeeder`, and a log read line by line is read faster by one
    :class:`LogParser`'s ``parse_line``."""
    return read_generic(line)


def parse_lines(lines: Iterable[str], max_error_lines: int = 200, parser: Optional[LogParser] = None) -> List[dict]:
    """All records of ``lines`` in order, tracebacks gathered (a :class:`LogFeeder` run,
    with ``parser`` or a new one)."""
    feeder = LogFeeder(max_error_lines=max_error_lines, parser=parser)
    out = feeder.feed_lines(lines)
    out.extend(feeder.flush())
    return out


class LogFeeder:
    """Feed log lines one at a time; get records back, tracebacks as one ``error`` record.

    ``feed(line)`` returns the records the line completes (usually zero or one; a line
    that ends a pending traceback returns it before its own record). A traceback is
    complete when a line with SGLang's prefix arrives, a separate traceback starts, a
    bracketed line from another source follows its exception line, or on ``flush()``
    (call it at end of input, or when the log has been idle for a while).
    A physical line holding ``\\r``-separated tqdm updates gives only its last update.

    Each feeder reads with its own :class:`LogParser` (``parser``, a new one by default):
    a feeder, like its parser, is driven by one thread at a time.
    """

    def __init__(self, max_error_lines: int = 200, parser: Optional[LogParser] = None) -> None:
        self.max_error_lines = max(1, int(max_error_lines))
        self.parser = parser if parser is not None else LogParser()
        self._tb: Optional[PendingTraceback] = None

    @property
    def pending(self) -> bool:
        """A traceback is being gathered."""
        return self._tb is not None

    def flush(self) -> List[dict]:
        """Close a pending traceback, if any, and return it."""
        tb, self._tb = self._tb, None
        return [tb.record()] if tb is not None else []

    def feed_lines(self, lines: Iterable[str]) -> List[dict]:
        """``feed`` each of ``lines``; the records they complete, in order. While no
        traceback is pending, lines are read a chunk at a time by the learned shapes'
        regex (see "Learned shapes" in the source), the lines it cannot read one by one."""
        out: List[dict] = []
        extend = out.extend
        feed = self.feed

        def slow(line: str) -> bool:
            extend(feed(line))
            return self._tb is not None

        if not isinstance(lines, list):
            lines = list(lines)
        pos, end = 0, len(lines)
        parser = self.parser
        while pos < end:
            if self._tb is None:
                chunk = lines[pos:pos + CHUNK_LINES]
                done = parser.read_chunk(chunk, out.append, extend, slow)
                if done:
                    pos += done
                    continue
                for line in chunk:  # a line holds "\n": this chunk line by line
                    extend(feed(line))
                pos += len(chunk)
                continue
            extend(feed(lines[pos]))
            pos += 1
        return out

    def feed(self, line: str) -> List[dict]:
        if self._tb is None and "\r" not in line and "Traceback" not in line:
            rec = self.parser.parse_line(line)  # the common case: one line, one record or none
            return [rec] if rec is not None else []
        line = line.rstrip("\r\n")
        if "\r" not in line:
            return self._feed_one(line)
        out: List[dict] = []
        progress: Optional[dict] = None
        for segment in line.split("\r"):
            if not segment.strip():
                continue
            for rec in self._feed_one(segment):
                if rec["kind"] in ("loading", "progress"):
                    progress = rec  # keep only the latest tqdm update of this line
                else:
                    if progress is not None:
                        out.append(progress)
                        progress = None
                    out.append(rec)
        if progress is not None:
            out.append(progress)
        return out

    def _feed_one(self, line: str) -> List[dict]:
        out: List[dict] = []
        prefix = split_prefix(line)
        if prefix is None:
            prefix = split_loose(line)  # a batch line, say, without SGLang's prefix
        if self._tb is not None:
            if prefix is None and self._tb.add(line):
                return out
            out.extend(self.flush())
        if prefix is None:
            stripped = line.lstrip()
            if stripped.startswith(TRACEBACK):
                self._tb = PendingTraceback(None, (), None, line, self.max_error_lines)
                return out
            rec = parse_progress(line)
        else:
            time, ranks, msg = prefix
            at = msg.find(TRACEBACK) if "Traceback" in msg else -1
            if at >= 0:
                context = msg[:at].strip().rstrip(":").strip() or None
                self._tb = PendingTraceback(time, ranks, context, line, self.max_error_lines)
                return out
            rec = self.parser.parse_message(time, ranks, msg)
        if rec is not None:
            out.append(rec)
        return out
