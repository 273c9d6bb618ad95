"""A small column chart with a y axis, shared by the speculative and throughput panels."""

from __future__ import annotations

from spectui.ui.draw import Row, Styles, column_chart


def chart_rows(values, width: int, height: int, lo: float, hi: float, st: Styles, *, fmt: str = "{:.0f}",
               style=None) -> list[Row]:
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
    return rows
