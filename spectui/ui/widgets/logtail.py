"""The log tail: the focused server's newest log lines, following, errors highlighted, filterable."""

from __future__ import annotations

from spectui.ui.derive import log_level, matches
from spectui.ui.draw import Row, Styles
from spectui.ui.views import LogTailView
from spectui.ui.widgets.base import LinePanel


def styled_line(line: str, width: int, st: Styles, needle: str = "") -> Row:
    lvl = log_level(line)
    base = st.bad if lvl == "error" else st.warn if lvl == "warning" else st.text
    text = line
    row = Row()
    if needle:
        low, n = text.lower(), needle.lower()
        pos = 0
        while True:
            i = low.find(n, pos)
            if i < 0:
                break
            row.add(text[pos:i], base).add(text[i:i + len(n)], st.match)
            pos = i + len(n)
        row.add(text[pos:], base)
    else:
        row.add(text, base)
    return row


class LogTail(LinePanel):
    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.filter = ""

    def set_filter(self, text: str) -> None:
        if text != self.filter:
            self.filter = text
            self._rebuild()

    def title_of(self, view: LogTailView | None) -> str:
        name = view.name if view is not None and view.name else None
        t = "Log" + (f" · {name}" if name else "")
        if self.filter:
            t += f" · filter: {self.filter}"
        return t + (" · stale" if view is not None and view.stale else "") + "  (l: full log, /: filter)"

    def draw(self, view: LogTailView | None, width: int, st: Styles) -> list[Row]:
        if view is None or not view.name:
            return [Row("no server log yet", st.dim)]
        if view.message and not view.lines:
            return [Row(view.message, st.dim)]
        lines = [l for l in view.lines if matches(l, self.filter)]
        if not lines:
            return [Row(f"no line matches {self.filter!r}" if self.filter else "the log is empty so far", st.dim)]
        # the newest lines whole (a long one wraps) as far as the panel's height goes
        room = max(1, self.draw_height or 10)
        rows: list[Row] = []
        for line in reversed(lines):
            row = styled_line(line, width, st, self.filter)
            room -= len(row.fold(width))
            if rows and room < 0:
                break
            rows.append(row)
        return rows[::-1]
