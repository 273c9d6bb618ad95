"""The speculative panel: accept length now and over time, accept rates with their formula,
stale and cumulative marks, the break-even accept length L* once measured on this host, and the
step count adaptive speculation runs now (``steps N (adaptive)``) with its source, where the
server reports it; under the accept length, the verify and decode step costs the servers' device timers
measured and the live L* from them (or, without a timer, which L* is shown instead), and the draft width in
force with when it last changed."""

from __future__ import annotations

from spectui.core.server_frames import Measured
from spectui.ui.draw import Row, Styles, nice_max
from spectui.ui.derive import CUMULATIVE_MIN_REQUESTS, fitted_range, probe_name
from spectui.ui.views import PredictedLStar, SpecView
from spectui.ui.widgets.base import LinePanel, folded_len
from spectui.ui.widgets.charts import chart_rows
from spectui.ui.widgets.sources import source_text
from spectui.ui.widgets.throughput import note_rows

# Accept-rate formulas by the names the agent gives them (per release in ``spectui/agent/servers/releases.py``, read from the SGLang wheels).
FORMULAS = {
    "drafts-only": "correct drafts / (steps × (draft tokens − 1))",
    "incl-bonus/draft-tokens": "accepted incl. bonus / (steps × draft tokens)",
}
RATE_NOTE = {"derived": "from accept length", "decode-log": "as logged"}


WORDS = {"metrics-gauge": "spec_accept_length gauge, last log interval"}


def marks(v: Measured, st: Styles) -> Row:
    row = Row()
    if v.stale:
        row.add(" stale", st.mark)
    if v.held:
        row.add(" held", st.mark)
    if v.cumulative:
        row.add(" cumulative", st.mark)
    if v.source or v.value is None:  # a figure without a value says why, never a bare dash
        row.add(" " + source_text(v, WORDS), st.dim)
    return row


def predicted_rows(p: PredictedLStar, accept: float | None, measured: bool, st: Styles) -> list[Row]:
    """The probe's predicted L*, beside the measured one: the value, then where it came from."""
    row = Row("predicted L* ", st.text)
    if p.value is None:
        row.add("–", st.dim)
        rows = [row, Row(f"   {p.note or 'no prediction'} ({probe_name(p)})", st.dim)]
        return rows + ([Row(f"   {p.why}", st.text)] if p.why else [])
    row.add(f"{p.value:.2f}", st.accent)
    if not measured and accept is not None:
        row.add("  ≥ break-even" if accept >= p.value else "  < break-even", st.ok if accept >= p.value else st.warn)
    if p.comm_only is not None:
        row.add(f"  (comm-only ≥ {p.comm_only:.2f})", st.dim)
    if p.reachable is False:
        row.add(f"  unreachable: at most {p.max_accept} per step", st.warn)
    rows = [row, Row(f"   {probe_name(p)}: {p.how}", st.dim)]
    if p.why:
        rows.append(Row(f"   {p.why}", st.text))
    return rows


class SpecPanel(LinePanel):
    def title_of(self, view: SpecView | None) -> str:
        if view is None or not view.name:
            return "Speculative"
        algo = f" · {view.algorithm}" if view.algorithm else " · no speculation"
        return f"Speculative · {view.name}{algo}" + (" · stale" if view.stale else "")

    def draw(self, view: SpecView | None, width: int, st: Styles) -> list[Row]:
        if view is None or not view.name:
            return [Row("no server: accept length appears once one is ready", st.dim)]
        rows: list[Row] = []
        if view.settings and view.algorithm:  # no steps, topk or draft tokens without an algorithm
            rows.append(Row(view.settings, st.dim))
            if view.adaptive:  # "steps N (adaptive)": where the server reports it
                rows.append(Row(f"   {view.adaptive}", st.dim))
        if view.message:
            rows.append(Row(view.message, st.dim))
            rows += note_rows(view.last_run, width, st)
            if view.predicted is not None:
                rows += predicted_rows(view.predicted, None, False, st)
            return rows
        head = Row("accept length ", st.text)
        a = view.accept
        head.add("–" if a.value is None else f"{a.value:.2f}", st.dim if a.stale else st.bold)
        if view.l_star is not None and view.l_star[1] != "predicted":  # a prediction has its own row
            be, how = view.l_star
            head.add("  L* ", st.text).add(f"{be:.2f}", st.accent)
            if how != "measured":
                head.add(f" ({how})", st.dim)
            if a.value is not None:
                head.add("  ≥ break-even" if a.value >= be else "  < break-even", st.ok if a.value >= be else st.warn)
        tail_marks = marks(a, st)
        if head.width + tail_marks.width <= width:
            rows.append(head.extend(tail_marks))
        else:  # the source and window on a row of their own rather than cut
            rows += [head, Row("  ").extend(tail_marks)]
        if view.predicted is not None:
            # beside the measured L*: what the verify-cost probe predicts for these settings
            rows += predicted_rows(view.predicted, a.value, view.l_star is not None and view.l_star[1] != "predicted",
                                   st)
        # the step costs the server's own timer measured and the live L* from them (or the L* used instead),
        # then the width in force: each folds onto further rows rather than being cut
        rows += [Row(text, st.dim) for text in (view.step_line, view.width_line) if text]
        tail: list[Row] = []
        c = view.cumulative
        if c.value is not None:
            tail.append(Row("since start   ", st.text).add(f"{c.value:.2f}", st.text).extend(marks(c, st))
                        .add(f" over {c.requests} requests", st.dim))
        elif c.requests is not None:  # too few requests for a figure since start to mean something yet
            tail.append(Row(f"since start: after {CUMULATIVE_MIN_REQUESTS} requests ({c.requests} so far)", st.dim))
        for r in view.rates:
            val = "–" if r.value is None else f"{100 * r.value:.1f}%"
            row = Row("accept rate   ", st.text).add(f"{val:>6}", st.dim if r.stale else st.bold)
            row.add(f" {r.formula or 'formula unknown'}", st.accent)
            if r.stale:
                row.add(" stale", st.mark)
            # its source says which rate this is (two formulas may share a name): it wraps, never goes
            row.add(f" · {RATE_NOTE.get(r.source or '', r.source or 'source not reported')}", st.dim)
            tail.append(row)
            more = f" · a: other formula ({view.rate_count - 1} more)" if view.rate_count > 1 else ""
            if r.formula in FORMULAS:
                line = Row(f"   = {FORMULAS[r.formula]}", st.dim)
                if line.width + len(more) <= width:
                    tail.append(line.add(more, st.dim))
                else:
                    tail += [line, Row("  " + more, st.dim)] if more else [line]
            elif more:
                tail.append(Row("  " + more, st.dim))
        be = view.breakeven
        if be is not None:
            tail.append(Row(f"L* = {be.spec_step_ms:.1f} ms / {be.base_step_ms:.1f} ms per step", st.dim)
                        .add(f" (this server / {be.base_name})", st.dim))
            tail.append(Row(f"   measured here at 1 request, {be.spec_samples} + {be.base_samples} frames", st.dim))
        elif view.algorithm and view.breakeven_note:
            tail.append(Row(view.breakeven_note, st.dim))
        height = max(3, min(8, (self.draw_height or 12) - folded_len(rows + tail, width)))
        # the y axis fitted to the accept lengths seen (never below 1, the bonus token)
        lo, hi = fitted_range(view.series, floor=1.0) or (1.0, view.scale_max or nice_max(view.series, 2.0))
        rows += chart_rows(view.series, width, height, lo, hi, st, fmt="{:.1f}", style=st.accent,
                           span_s=view.series_span_s, note="accept length, one point a frame")
        rows += tail
        return rows
