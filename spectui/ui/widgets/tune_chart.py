"""The tune chart: tok/s per stream against the swept value (steps of a chain, draft tokens of a tree).

One plot per concurrency: ``·`` the model's prediction for every setting, ``●`` each measured
setting with its run-to-run spread as ``│`` above and below, ``─`` the baseline (plain decoding);
under it, one row per measured setting: predicted, measured ± spread, speedup, and ``noise`` when
the speedup is inside the spread. Drawn as one Line API panel from :class:`ChartView` snapshots.
"""

from __future__ import annotations

from spectui.ui.draw import Row, Styles
from spectui.core.console.tunejob import ChartPoint, ChartView
from spectui.ui.widgets.base import LinePanel

PLOT_HEIGHT = 10
LABEL_W = 7   # the y axis: "  123.4" then "┤"


def _fmt(v: float | None, spec: str = ".1f") -> str:
    return "–" if v is None else format(v, spec)


def _columns(points: tuple[ChartPoint, ...], plot_w: int) -> dict[int, int]:
    values = [p.value for p in points]
    if len(values) == 1:
        return {values[0]: plot_w // 2}
    step = (plot_w - 1) / (len(values) - 1)
    return {v: round(i * step) for i, v in enumerate(values)}


def plot_rows(view: ChartView, width: int, st: Styles, height: int = PLOT_HEIGHT) -> list[Row]:
    """The plot of one concurrency: y axis tok/s per stream, x axis the swept values."""
    points = view.points
    if not points:
        return [Row(f"concurrency {view.concurrency}: nothing predicted or measured yet", st.dim)]
    plot_w = max(len(points) * 2, width - LABEL_W - 2)
    values = [v for v in [p.predicted for p in points] + [view.baseline] if v is not None]
    for p in points:
        if p.measured is not None:
            values += [p.measured * (1 - (p.spread or 0)), p.measured * (1 + (p.spread or 0))]
    top, bottom = (max(values), min(values)) if values else (1.0, 0.0)
    pad = max(0.05 * (top - bottom), 0.02 * top, 0.1)   # the y axis spans the values, not 0 to the top
    hi, lo = top + pad, max(0.0, bottom - pad)
    cols = _columns(points, plot_w)

    def y(v: float) -> int:  # row index from the top
        return max(0, min(height - 1, height - 1 - round((v - lo) / (hi - lo) * (height - 1))))

    grid: list[list[tuple[str, object]]] = [[(" ", None)] * plot_w for _ in range(height)]
    if view.baseline is not None:
        by = y(view.baseline)
        grid[by] = [("─", st.dim)] * plot_w
    for p in points:
        c = cols[p.value]
        if p.measured is not None and p.spread:
            low_row, high_row = y(p.measured * (1 - p.spread)), y(p.measured * (1 + p.spread))
            for r in range(high_row, low_row + 1):
                grid[r][c] = ("│", st.dim)
        if p.predicted is not None:
            grid[y(p.predicted)][c] = ("·", st.info)
        if p.measured is not None:
            style = st.dim if p.noise else (st.ok if (p.speedup or 0) >= 1.0 else st.warn)
            grid[y(p.measured)][c] = ("●", style)
    rows = [Row(f"concurrency {view.concurrency}: tok/s per stream against {view.axis}", st.bold)]
    for r in range(height):
        label = f"{lo + (hi - lo) * (height - 1 - r) / (height - 1):>{LABEL_W}.1f}" if r in (0, height - 1) \
            else " " * LABEL_W
        if view.baseline is not None and r == y(view.baseline) and r not in (0, height - 1):
            label = f"{view.baseline:>{LABEL_W}.1f}"
        row = Row(label, st.dim).add("┤", st.dim)
        for ch, style in grid[r]:
            row.add(ch, style)
        rows.append(row)
    axis = [" "] * plot_w
    for p in points:
        text = str(p.value)
        c = min(max(0, cols[p.value] - len(text) // 2), plot_w - len(text))
        if all(ch == " " for ch in axis[max(0, c - 1):c + len(text)]):
            axis[c:c + len(text)] = list(text)
    rows.append(Row(" " * LABEL_W + "└" + "─" * plot_w, st.dim))
    rows.append(Row(" " * (LABEL_W + 1) + "".join(axis), st.dim))
    legend = Row("  ● measured  │ spread  · predicted", st.dim)
    if view.baseline is not None:
        legend.add(f"  ─ {view.baseline_name or 'baseline'} {view.baseline:.1f} tok/s ({view.baseline_source})", st.dim)
    rows.append(legend)
    return rows


def measured_rows(view: ChartView, st: Styles) -> list[Row]:
    """One row per setting measured: its swept value, predicted and measured tok/s, speedup, noise."""
    measured = view.measured
    if not measured:
        return [Row("  no setting measured yet at this concurrency", st.dim)]
    rows = [Row(f"  {view.axis:<17} {'predicted':>9}  {'measured':>15}  {'speedup':>7}", st.dim)]
    for p in measured:
        spread = f" ±{p.spread:.0%}" if p.spread is not None else ""
        row = Row(f"  {p.value:<17} {_fmt(p.predicted):>9}  {(_fmt(p.measured) + spread):>15}  ", st.text)
        row.add(f"{_fmt(p.speedup, '.2f')}x".rjust(7), st.dim if p.noise else
                (st.ok if (p.speedup or 0) >= 1.0 else st.warn))
        if p.noise:
            row.add("  noise", st.mark)
        if p.is_profile:
            row.add("  (the profile's own)", st.dim)
        rows.append(row)
    return rows


class TuneChart(LinePanel):
    """The tune's chart: ``show(tuple of ChartView)``, one per concurrency."""

    TITLE = "tok/s per stream against the swept value"

    def draw(self, view: tuple[ChartView, ...] | None, width: int, st: Styles) -> list[Row]:
        if not view:
            return [Row("the chart appears once the settings are predicted", st.dim)]
        rows: list[Row] = []
        for v in view:
            rows += plot_rows(v, width, st)
            rows += measured_rows(v, st)
            rows.append(Row(""))
        return rows


__all__ = ["TuneChart", "measured_rows", "plot_rows"]
