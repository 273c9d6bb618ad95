"""The throughput panel: generation tok/s now and over time, requests running and queued,
token usage, time to first token and inter-token latency."""

from __future__ import annotations

from spectui.ui.draw import Row, Styles, fnum, nice_max
from spectui.ui.views import ThroughputView
from spectui.ui.widgets.base import LinePanel
from spectui.ui.widgets.charts import chart_rows
from spectui.ui.widgets.speculative import marks


def _pair(name: str, p: tuple[float | None, float | None] | None, st: Styles) -> Row:
    row = Row(f"{name:<5}", st.text)
    if p is None:
        return row.add("–", st.dim)
    return row.add("p50 ", st.dim).add(fnum(p[0], 0, " ms"), st.bold).add("  p99 ", st.dim).add(fnum(p[1], 0, " ms"), st.text)


class ThroughputPanel(LinePanel):
    def title_of(self, view: ThroughputView | None) -> str:
        name = view.name if view is not None and view.name else None
        return ("Throughput" + (f" · {name}" if name else "")) + (" · stale" if view is not None and view.stale else "")

    def draw(self, view: ThroughputView | None, width: int, st: Styles) -> list[Row]:
        if view is None or not view.name:
            return [Row("no server: throughput appears once one is ready", st.dim)]
        if view.message:
            return [Row(view.message, st.dim)]
        g = view.gen
        head = Row("gen ", st.text).add("–" if g.value is None else f"{g.value:.1f}", st.dim if g.stale else st.bold)
        head.add(" tok/s", st.text).extend(marks(g, st))
        reqs = Row("running ", st.text).add(fnum(view.running, 0), st.bold).add("  queued ", st.text)
        reqs.add(fnum(view.queued, 0), st.bold)
        usage = Row("token usage ", st.text)
        usage.add("–" if view.token_usage is None else f"{100 * view.token_usage:.1f}%", st.bold)
        if reqs.width + 2 + usage.width <= width:
            reqs.add("  ").extend(usage)
            tail = [reqs]
        else:
            tail = [reqs, usage]
        tail += [_pair("TTFT", view.ttft_ms, st), _pair("ITL", view.itl_ms, st)]
        height = max(3, min(8, (self.draw_height or 12) - 1 - len(tail)))
        hi = nice_max([v * 1.1 for v in view.series if v is not None], 10.0)
        return [head, *chart_rows(view.series, width, height, 0.0, hi, st), *tail]
