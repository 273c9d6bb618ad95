"""The log tail: the focused server's newest log lines, following, errors highlighted, filterable.

The filter is the log screen's search (``spectui.core.search``): a regular expression, case as typed
(smart case); one that does not compile keeps the last good filter and says why in the title.
spectui's own polls are left out (``LogBuffer.tail``); the title counts them.
"""

from __future__ import annotations

import re

from spectui.core.search import Query, SearchError, found, spans
from spectui.ui.derive import log_level
from spectui.ui.draw import Row, Styles
from spectui.ui.views import LogTailView
from spectui.ui.widgets.base import LinePanel


def styled_line(line: str, width: int, st: Styles, pattern: re.Pattern | None = None, lo: int = 0,
                hi: int | None = None) -> Row:
    """``line[lo:hi]`` in its level's colour, the matches of ``pattern`` (found in the whole line) marked."""
    lvl = log_level(line)
    base = st.bad if lvl == "error" else st.warn if lvl == "warning" else st.text
    hi = len(line) if hi is None else min(hi, len(line))
    row = Row()
    pos = lo
    for a, b in spans(pattern, line):
        a, b = max(a, lo), min(b, hi)
        if a >= b:
            continue
        row.add(line[pos:a], base).add(line[a:b], st.match)
        pos = b
    row.add(line[pos:hi], base)
    return row


def polls_note(hidden: int, shown: bool, key: str = "p") -> str:
    """What the log screen and the tail say of spectui's own poll lines: ``312 poll lines hidden (p to show)``."""
    if not hidden:
        return ""
    return f"{hidden} poll lines shown ({key} to hide)" if shown else f"{hidden} poll lines hidden ({key} to show)"


class LogTail(LinePanel):
    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.filter = ""
        self.pattern: re.Pattern | None = None
        self.filter_error = ""

    def set_filter(self, text: str) -> None:
        if text == self.filter and not self.filter_error:
            return
        try:
            self.pattern = Query(text).compile() if text else None
        except SearchError as exc:  # the last good filter stays
            self.filter_error = str(exc)
        else:
            self.filter = text
            self.filter_error = ""
        self._rebuild()

    def _hidden_polls(self, name: str | None) -> int:
        host = getattr(self.app, "host", None)
        logs = getattr(host, "logs", None)
        buf = logs.tail(name) if logs is not None and name else None
        return buf.poll_lines if buf is not None and not buf.options.polls_shown else 0

    def title_of(self, view: LogTailView | None) -> str:
        name = view.name if view is not None and view.name else None
        t = "Log" + (f" · {name}" if name else "")
        if self.filter:
            t += f" · filter: {self.filter}"
        if self.filter_error:
            t += f" · {self.filter_error}"
        hidden = self._hidden_polls(name)
        if hidden:
            t += f" · {hidden} poll lines hidden"
        return t + (" · stale" if view is not None and view.stale else "") + "  (l: full log, /: filter)"

    def draw(self, view: LogTailView | None, width: int, st: Styles) -> list[Row]:
        if view is None or not view.name:
            return [Row("no server log yet", st.dim)]
        if view.message and not view.lines:
            return [Row(view.message, st.dim)]
        lines = [line for line in view.lines if found(self.pattern, line)]
        if not lines:
            return [Row(f"no line matches {self.filter!r}" if self.filter else "the log is empty so far", st.dim)]
        # the newest lines whole (a long one wraps) as far as the panel's height goes
        room = max(1, self.draw_height or 10)
        rows: list[Row] = []
        for line in reversed(lines):
            row = styled_line(line, width, st, self.pattern)
            room -= len(row.fold(width))
            if rows and room < 0:
                break
            rows.append(row)
        return rows[::-1]
