"""Python tracebacks in a log, gathered line by line into one ``error`` record."""

from __future__ import annotations

import re
from typing import Any, Dict, Optional

from .prefix import Ranks

TRACEBACK = "Traceback (most recent call last)"
CHAIN_MARKERS = (
    "During handling of the above exception",
    "The above exception was the direct cause",
)

_EXC_TYPE = re.compile(r"([A-Za-z_][\w.]*)(?::|$)")


class PendingTraceback:
    __slots__ = ("time", "ranks", "context", "lines", "line_count", "exc", "after_frames", "chained", "continuations", "max_lines")

    def __init__(self, time: Optional[str], ranks: Ranks, context: Optional[str], first: str, max_lines: int) -> None:
        self.time = time
        self.ranks = ranks
        self.context = context
        self.lines = [first]
        self.line_count = 1
        self.exc: Optional[str] = None
        self.after_frames = False
        self.chained = False
        self.continuations = 0
        self.max_lines = max_lines

    def _keep(self, line: str) -> None:
        self.line_count += 1
        if len(self.lines) < self.max_lines:
            self.lines.append(line)

    def add(self, line: str) -> bool:
        """Take an unprefixed line; ``False`` when it does not belong to this traceback."""
        if line[:1] in (" ", "\t"):
            if line.strip():
                self.after_frames = True
            self._keep(line)
            return True
        s = line.strip()
        if not s:
            self._keep(line)
            return True
        if s.startswith(TRACEBACK):
            if self.exc is not None and not self.chained:
                return False  # a separate traceback: this one is complete
            self.chained = False
            self.after_frames = False
            self._keep(line)
            return True
        if s.startswith(CHAIN_MARKERS):
            self.chained = True
            self._keep(line)
            return True
        if self.exc is None or self.after_frames:
            self.exc = s
            self.after_frames = False
            self.continuations = 0
            self._keep(line)
            return True
        # A further line of the exception message, unless it is someone else's log line.
        if s.startswith("[") or self.continuations >= 50:
            return False
        self.continuations += 1
        self._keep(line)
        return True

    def record(self) -> dict:
        rec: Dict[str, Any] = {"kind": "error", "time": self.time}
        if self.ranks:
            rec.update(self.ranks)
        summary = self.exc or self.context or TRACEBACK
        m = _EXC_TYPE.match(self.exc) if self.exc else None
        rec["summary"] = summary
        rec["exception"] = m.group(1) if m else None
        rec["context"] = self.context
        rec["lines"] = self.lines
        rec["line_count"] = self.line_count
        return rec
