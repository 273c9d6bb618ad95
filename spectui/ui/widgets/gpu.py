"""The GPU panel: per GPU, utilization, memory and power as bars on fixed scales, a short
utilization history and the temperature. Up to 8 GPUs fit as they are; with more, an
aggregate row comes first and the panel scrolls. A multi-node server's GPUs are grouped by node."""

from __future__ import annotations

from spectui.ui.draw import Row, Styles, hbar, sparkline
from spectui.ui.views import GpuRow, GpuView
from spectui.ui.widgets.base import LinePanel

FIT = 8
SEP = " │ "


def _widths(width: int, label: int) -> tuple[int, int, int, int] | None:
    """Cells for the utilization bar, its history, the memory and the power bars; None when even
    the shortest bars leave no room for the figures (the panel then shows figures only)."""
    fixed = label + 5 + 1 + 3 + 8 + 3 + 5 + 3 + 5
    rest = width - fixed
    if rest < 9:
        return None
    util = max(3, min(30, rest * 24 // 100))
    mem = max(3, min(30, rest * 24 // 100))
    pwr = max(3, min(24, rest * 18 // 100))
    hist = max(0, rest - util - mem - pwr)
    return util, hist, mem, pwr


def _frac(v: float | None, total: float | None) -> float | None:
    if v is None or not total:
        return None
    return v / total


def _util(g: GpuRow) -> str:
    return "–" if g.util is None else f"{g.util:.0f}%"


def _mem(g: GpuRow) -> str:
    return "–" if g.mem_used is None else f"{g.mem_used / 1024:.0f}/{(g.mem_total or 0) / 1024:.0f}"


def _power(g: GpuRow) -> str:
    return "–" if g.power is None else f"{g.power:.0f}"


def _temp(g: GpuRow, st: Styles, text) -> Row:
    if g.temp is None:
        return Row("  –  ", st.dim)
    return Row(f"{g.temp:>3.0f}°C", st.bad if g.temp >= 85 else st.warn if g.temp >= 75 else text)


class GpuPanel(LinePanel):
    def title_of(self, view: GpuView | None) -> str:
        if view is None or not view.rows:
            return "GPUs"
        name = f" {view.name}" if view.name else ""
        t = f"GPUs · {len(view.rows)}×{name}" + (f" · {view.nodes} nodes" if view.nodes else "")
        return t + (" · stale" if view.stale else "")

    def draw(self, view: GpuView | None, width: int, st: Styles) -> list[Row]:
        if view is None:
            return [Row("waiting for GPU telemetry…", st.dim)]
        if not view.rows:
            return [Row(view.message or "no GPU telemetry on this host", st.warn)]
        label = len(str(max(r.index for r in view.rows))) + 1
        widths = _widths(width, label)
        if widths is None:  # narrow: the figures without their bars
            rows = [self._figures_legend(label, st)]
        else:
            rows = [self._legend(label, *widths, st)]
        if len(view.rows) > FIT:
            rows.append(self._aggregate(view, st))
        node = None
        for g in view.rows:
            if g.node is not None and g.node != node:
                node = g.node
                rows.append(Row(g.node, st.bold))
            if widths is None:
                rows.append(self._figures(g, label, st, view.stale))
            else:
                rows.append(self._row(g, label, *widths, st, view.stale))
        if view.message:
            rows.append(Row(view.message, st.dim))
        return rows

    def _legend(self, label: int, wu: int, wh: int, wm: int, wp: int, st: Styles) -> Row:
        row = Row(" " * label, st.dim)
        row.add(("utilization %" if wu + 5 >= 13 else "util %").ljust(wu + 5), st.dim)
        if wh:
            row.add(" " + ("history" if wh >= 7 else "").ljust(wh), st.dim)
        row.add(SEP, st.dim).add("memory GiB".ljust(wm + 8), st.dim)
        row.add(SEP, st.dim).add("power W".ljust(wp + 5), st.dim)
        row.add(SEP, st.dim).add("temp", st.dim)
        return row

    def _figures_legend(self, label: int, st: Styles) -> Row:
        return Row(" " * label + "util" + SEP + "   memory GiB" + SEP + "power W" + SEP + "temp", st.dim)

    def _figures(self, g: GpuRow, label: int, st: Styles, stale: bool) -> Row:
        text = st.dim if stale else st.text
        row = Row(f"{g.index:>{label - 1}} ", st.dim)
        row.add(f"{_util(g):>4}", st.bar_hot if (g.util or 0) > 90 else text).add(SEP, st.dim)
        row.add(f"{_mem(g):>13}", text).add(SEP, st.dim)
        row.add(f"{_power(g):>7}", text).add(SEP, st.dim)
        return row.extend(_temp(g, st, text))

    def _row(self, g: GpuRow, label: int, wu: int, wh: int, wm: int, wp: int, st: Styles, stale: bool) -> Row:
        text = st.dim if stale else st.text
        row = Row(f"{g.index:>{label - 1}} ", st.dim)
        u = _frac(g.util, 100.0)
        row.extend(hbar(u, wu, st.bar_hot if (u or 0) > 0.9 else st.bar, st.bar_empty))
        row.add(f" {_util(g):>4}", text)
        if wh:
            row.add(" ").add(sparkline(g.util_history, wh, 0.0, 100.0), st.dim)
        row.add(SEP, st.dim)
        m = _frac(g.mem_used, g.mem_total)
        row.extend(hbar(m, wm, st.bar_hot if (m or 0) > 0.95 else st.bar, st.bar_empty))
        row.add(f" {_mem(g):>7}", text)
        row.add(SEP, st.dim)
        p = _frac(g.power, g.power_limit)
        row.extend(hbar(p, wp, st.bar, st.bar_empty))
        row.add(f" {_power(g):>4}", text)
        row.add(SEP, st.dim)
        return row.extend(_temp(g, st, text))

    def _aggregate(self, view: GpuView, st: Styles) -> Row:
        utils = [r.util for r in view.rows if r.util is not None]
        used = sum(r.mem_used or 0 for r in view.rows)
        total = sum(r.mem_total or 0 for r in view.rows)
        power = sum(r.power or 0 for r in view.rows)
        temps = [r.temp for r in view.rows if r.temp is not None]
        avg = f"{sum(utils) / len(utils):.0f}%" if utils else "–"
        row = Row(f"all {len(view.rows)}: ", st.bold)
        row.add(f"util avg {avg} · memory {used / 1024:.0f}/{total / 1024:.0f} GiB · power {power:.0f} W", st.text)
        if temps:
            row.add(f" · hottest {max(temps):.0f}°C", st.text)
        row.add("  (scroll for each)", st.dim)
        return row
