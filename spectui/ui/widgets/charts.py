"""A small column chart with a y axis and a time axis, shared by the speculative and
throughput panels."""

from __future__ import annotations

from spectui.ui.draw import Row, Styles, column_chart, duration


def chart_rows(values, width: int, height: int, lo: float, hi: float, st: Styles, *, fmt: str = "{:.0f}",
               style=None, span_s: float | None = None, note: str = "") -> list[Row]:
    """``height`` rows of columns (the newest on the right), then, given ``span_s`` (the time
    the values cover), a time axis: how long ago the left edge is, "now" at the right, and
    ``note`` (what one point is, e.g. "each point a 5 s mean")."""
    axis_w = max(len(fmt.format(hi)), len(fmt.format(lo))) + 1
    cols = max(1, width - axis_w - 1)
    lines = column_chart(values, cols, height, lo, hi)
    rows = []
    for i, line in enumerate(lines):
        if i == 0:
            label = fmt.format(hi)
        elif i == len(lines) - 1:
            label = fmt.format(lo)
        else:
            label = ""
        rows.append(Row(label.rjust(axis_w - 1) + " ┤" if label else " " * (axis_w - 1) + " │", st.dim)
                    .add(line, style or st.bar))
    if span_s:
        n = max(1, len(values))
        shown = min(n, cols)
        left = f"−{duration(span_s * shown / n)}"
        right = "now"
        inner = cols - len(left) - len(right)
        text = f" {note} " if note and inner >= len(note) + 4 else ""
        fill = max(0, inner - len(text))
        axis = left + "─" * (fill // 2) + text + "─" * (fill - fill // 2) + right
        rows.append(Row(" " * (axis_w - 1) + " └", st.dim).add(axis[:cols], st.dim))
    return rows
