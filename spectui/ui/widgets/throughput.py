"""The throughput panel: decode speed per stream (what one request sees, the figure to compare
across profiles at concurrency 1) and for all streams together, each with its source and
window, over time; requests running and queued (and how many of them spectui did not send: this console's
demo traffic and the host's benchmarks are spectui's), token usage; time to first token (TTFT) and time per
output token (TPOT, the server's ``inter_token_latency_seconds`` histogram, which SGLang fills per token) with what
their histogram buckets can tell. The names are SGLang's bench_serving's (sglang 0.5.23 wheel,
sglang/bench_serving.py): TPOT is per output token; ITL there is the gap between streamed chunks, which
a speculative server sends several tokens at a time, so the live panel's per-token figure is TPOT, never ITL.
Every ``–`` says why in words."""

from __future__ import annotations

import textwrap

from spectui.core.server_frames import Measured
from spectui.ui.draw import Row, Styles, fnum, nice_max
from spectui.ui.views import Latency, ThroughputView
from spectui.ui.widgets.base import LinePanel, folded_len
from spectui.ui.widgets.charts import chart_rows
from spectui.ui.widgets.sources import source_text

WORDS = {"metrics-gauge": "gen_throughput gauge"}
NO_LATENCY = {"TTFT": "no request finished in the last 30 s", "TPOT": "no token decoded in the last 30 s"}


def figure_rows(label: str, v: Measured, unit: str, st: Styles, width: int) -> list[Row]:
    """The figure, then its source and window (on the next row when they do not fit)."""
    row = Row(f"{label:<12}", st.text)
    if v.measuring:
        row.add("measuring…", st.dim)
    else:
        row.add("–" if v.value is None else f"{v.value:.1f}", st.dim if (v.stale or v.held) else st.bold)
        row.add(unit, st.text)
    if v.held:
        row.add(" held", st.mark)
    if v.stale:
        row.add(" stale", st.mark)
    tail = source_text(v, WORDS)
    if row.width + 1 + len(tail) <= width:
        return [row.add(" " + tail, st.dim)]
    return [row, Row(" " * min(12, max(0, width - len(tail))) + tail, st.dim)]


def note_rows(lines: tuple[str, ...], width: int, st: Styles) -> list[Row]:
    """Dim lines, each wrapped at word boundaries (never cut) to the panel's width."""
    return [Row(part, st.dim) for line in lines for part in textwrap.wrap(line, max(8, width)) or [""]]


def _q(v: float | None, rel: str) -> str:
    if v is None:
        return "–"
    digits = 0 if v >= 100 else 1
    return f"{'<' if rel == '<' else '>' if rel == '>' else ''}{v:.{digits}f}"


def latency_rows(name: str, lat: Latency | None, unit: str, st: Styles, width: int) -> list[Row]:
    """``TTFT mean 41 ms  p50 <100  p99 <100 (12 in 30 s, histogram)``, wrapped by pieces
    (never cut) when the panel is narrow."""
    row = Row(f"{name:<5}", st.text)
    if lat is None:
        return [row.add(f"– ({NO_LATENCY.get(name, 'not reported')})", st.dim)]
    note = f"({lat.count} in {lat.window_s:g} s" if lat.window_s else f"({lat.count}"
    note += "; < = in 1st bucket)" if "<" in (lat.p50_rel, lat.p99_rel) else ", histogram)"
    pieces = [
        [("mean ", st.dim), (fnum(lat.mean, 1 if (lat.mean or 0) < 100 else 0, " ms"), st.bold), (unit, st.dim)],
        [("p50 ", st.dim), (_q(lat.p50, lat.p50_rel), st.text)],
        [("p99 ", st.dim), (_q(lat.p99, lat.p99_rel), st.text)],
        [(note, st.dim)],
    ]
    rows = [row]
    for i, piece in enumerate(pieces):
        size = sum(len(t) for t, _ in piece)
        gap = " " if i == len(pieces) - 1 else "  "
        if i and rows[-1].width + len(gap) + size > width:
            rows.append(Row(" " * 5))
            gap = ""
        elif i:
            rows[-1].add(gap)
        for text, style in piece:
            rows[-1].add(text, style)
    return rows


class ThroughputPanel(LinePanel):
    def title_of(self, view: ThroughputView | None) -> str:
        name = view.name if view is not None and view.name else None
        return ("Throughput" + (f" · {name}" if name else "")) + (" · stale" if view is not None and view.stale else "")

    def draw(self, view: ThroughputView | None, width: int, st: Styles) -> list[Row]:
        if view is None or not view.name:
            return [Row("no server: throughput appears once one is ready", st.dim)]
        if view.message:
            return [Row(view.message, st.dim), *note_rows(view.last_run, width, st)]
        head = [*figure_rows("per stream", view.per_stream, " tok/s", st, width),
                *figure_rows("all streams", view.gen, " tok/s", st, width)]
        reqs = Row("running ", st.text).add(fnum(view.running, 0, none="– (not reported)"), st.bold)
        if view.foreign:  # the server serves someone else's requests too: figures are not spectui's alone
            reqs.add(f" ({view.foreign} not spectui's)", st.warn)
        reqs.add("  queued ", st.text)
        reqs.add(fnum(view.queued, 0, none="– (not reported)"), st.bold)
        usage = Row("token usage ", st.text)
        usage.add("– (not reported)" if view.token_usage is None else f"{100 * view.token_usage:.1f}%",
                  st.dim if view.token_usage is None else st.bold)
        if reqs.width + 2 + usage.width <= width:
            reqs.add("  ").extend(usage)
            tail = [reqs]
        else:
            tail = [reqs, usage]
        tail += latency_rows("TTFT", view.ttft, "", st, width)
        tail += latency_rows("TPOT", view.itl, "/token", st, width)
        height = max(3, min(8, (self.draw_height or 12) - folded_len(head + tail, width) - 1))
        hi = nice_max([v * 1.1 for v in view.series if v is not None], 10.0)
        window = view.per_stream.window_s
        note = f"per stream, each point a {window:g} s mean" if window else "per stream"
        chart = chart_rows(view.series, width, height, 0.0, hi, st, span_s=view.series_span_s, note=note)
        return [*head, *chart, *tail]
