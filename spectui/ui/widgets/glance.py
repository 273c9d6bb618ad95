"""The glance row: on a terminal too short or narrow for every panel at once, the story's figures on the first
screen, above the panels that scroll: the watched server and its state, its accept length against L* (and which
L*: from the servers' timers, measured from a baseline run, or predicted by the probe), per-stream and all-streams tok/s, the GPUs' load.

It derives nothing: each figure is the one its panel shows (:func:`glance_view` reads the panels' snapshots), in
the panel's format, with its window (the accept length with its source too, as the speculative panel names it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from spectui.core.server_frames import Measured
from spectui.ui.draw import Row, Styles
from spectui.ui.views import GpuView, ServerView, SpecView, ThroughputView
from spectui.ui.widgets.base import LinePanel
from spectui.ui.widgets.sources import source_text
from spectui.ui.widgets.speculative import WORDS as SPEC_WORDS


@dataclass(frozen=True)
class GlanceView:
    name: str | None
    state: str | None = None
    accept: Measured = field(default_factory=lambda: Measured(None))
    l_star: float | None = None
    l_star_how: str | None = None      # server timer | measured (a baseline run here) | predicted (the probe)
    speculative: bool = False
    per_stream: Measured = field(default_factory=lambda: Measured(None))
    gen: Measured = field(default_factory=lambda: Measured(None))
    gpu_util: float | None = None      # the mean over the GPUs that report one
    gpu_mem: tuple[float, float] | None = None  # GiB used and in all, over every GPU
    gpus_stale: bool = False


def glance_view(server: ServerView | None, spec: SpecView | None, tput: ThroughputView | None,
                gpus: GpuView | None) -> GlanceView:
    """The glance row's figures, read off the panels' own snapshots."""
    name = (server.name if server else None) or (spec.name if spec else None) or (tput.name if tput else None)
    out: dict = {"state": server.state if server else None}
    if spec is not None:
        out["speculative"] = bool(spec.algorithm)
        out["accept"] = spec.accept
        if spec.l_star is not None:  # the one the panel judges the accept length against
            out["l_star"], out["l_star_how"] = spec.l_star
    if tput is not None:
        out["per_stream"], out["gen"] = tput.per_stream, tput.gen
    if gpus is not None and gpus.rows:
        utils = [g.util for g in gpus.rows if g.util is not None]
        if utils:
            out["gpu_util"] = sum(utils) / len(utils)
        used = [g.mem_used for g in gpus.rows if g.mem_used is not None]
        total = [g.mem_total for g in gpus.rows if g.mem_total is not None]
        if used and total:
            out["gpu_mem"] = (sum(used) / 1024, sum(total) / 1024)
        out["gpus_stale"] = gpus.stale
    return GlanceView(name, **out)


def _window(v: Measured) -> str:
    return f" ({v.window_s:g} s)" if v.window_s else ""


def _figure(row: Row, v: Measured, digits: int, st: Styles) -> Row:
    row.add("–" if v.value is None else f"{v.value:.{digits}f}", st.dim if (v.stale or v.held) else st.bold)
    if v.stale:
        row.add(" stale", st.mark)
    return row


def glance_rows(view: GlanceView, st: Styles) -> list[Row]:
    if view.name is None:
        return [Row("no server is watched: pick a profile and press enter to start it", st.dim)]
    head = Row(view.name, st.accent).add(f" {view.state or '–'}", st.ok if view.state == "ready" else st.text)
    if view.speculative:
        head.add("  accept ", st.text)
        _figure(head, view.accept, 2, st)
        if view.l_star is not None:
            a = view.accept.value
            below = a is not None and a < view.l_star
            head.add("  " if a is None else " < " if below else " ≥ ", st.warn if below else st.ok)
            head.add("L* ", st.text).add(f"{view.l_star:.2f}", st.accent).add(f" {view.l_star_how}", st.dim)
        if view.accept.source:
            head.add(" " + source_text(view.accept, SPEC_WORDS), st.dim)
        if view.l_star is None:
            head.add("  L* –", st.text).add(" (a baseline run or the probe, p, gives it)", st.dim)
    else:
        head.add("  no speculation", st.dim)
    tok = Row("tok/s ", st.text)
    _figure(tok, view.per_stream, 1, st).add(" per stream", st.text).add(_window(view.per_stream), st.dim)
    _figure(tok.add(" · ", st.dim), view.gen, 1, st).add(" all", st.text).add(_window(view.gen), st.dim)
    tok.add("  GPU ", st.text).add("–" if view.gpu_util is None else f"{view.gpu_util:.0f}%", st.bold)
    if view.gpu_mem is not None:
        tok.add(f" · {view.gpu_mem[0]:.0f}/{view.gpu_mem[1]:.0f} GiB", st.text)
    if view.gpus_stale:
        tok.add(" stale", st.mark)
    return [head, tok]


class GlanceRow(LinePanel):
    """Shown where the panels do not all fit (``.compact`` / ``.narrow`` dashboards): as tall as its rows."""

    def draw(self, view: GlanceView, width: int, styles: Styles) -> list[Row]:
        return glance_rows(view, styles)

    def _rebuild(self) -> None:
        super()._rebuild()
        height = max(1, len(self._strips))
        if self.styles.height is None or self.styles.height.value != height:
            self.styles.height = height
