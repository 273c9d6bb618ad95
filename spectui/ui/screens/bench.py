"""The benchmark screen (``b``, ``B``, ``v``): a benchmark's progress while it runs, then its results.

While it runs: each profile's stage (switching, measuring, measured, failed), the run in flight
(requests done, live tok/s and accept length, ETA) and the whole job's progress. When it ends:
for a comparison, the table (``render_comparison`` text) and a bar chart of the speedup against
the baseline; for a single run, its figures. ``e`` exports them as Markdown, ``c`` cancels, ``T`` tunes the profile
highlighted on the dashboard (``spectui.ui.screens.tune``). Before any benchmark it says how to
start one.

The screen reads a :class:`~spectui.core.console.benchjob.BenchJob` that the app's workers feed; it asks
the app for everything else.
"""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.console import Group
from rich.segment import Segment
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.geometry import Size
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from spectui.core.bench import render_comparison, speedup_bars
from spectui.core import cells
from spectui.core.bench.table import FOREIGN_MARK, render_run_detail
from spectui.core.textsafe import visible, visible_text
from spectui.ui import keys
from spectui.core.console.benchjob import BenchJob
from spectui.ui.draw import DEFAULT_STYLES, EIGHTHS, Styles, duration
from spectui.ui.widgets.footer import KeyFooter

BAR_WIDTH = 48
NO_JOB = ("No benchmark yet in this session: on the dashboard b benchmarks the ready server and B compares the "
          "marked profiles; here T tunes the profile highlighted on the dashboard.")
STEP_MARKS = {"waiting": "○", "switching": "◌", "measuring": "◐", "measured": "●", "failed": "✗"}


def bar_text(fraction: float, width: int) -> str:
    eighths = int(round(min(1.0, max(0.0, fraction)) * width * 8))
    full, part = divmod(eighths, 8)
    text = "█" * full + (EIGHTHS[part] if part and full < width else "")
    return text + " " * (width - len(text))


def speedup_chart(comp: dict, st: Styles = DEFAULT_STYLES, width: int = BAR_WIDTH) -> Text:
    """Speedup against the baseline as horizontal bars; ``│`` marks 1.00x."""
    bars = speedup_bars(comp)
    out = Text()
    if not bars:
        return out
    top = max(1.0, max(b["speedup"] for b in bars))
    name_w = max(cells.width(b["profile"]) for b in bars)
    one = min(width - 1, round(width / top))
    out.append(f"Speedup against {comp['baseline']} (output tok/s; │ marks 1.00x)\n", style="bold")
    for b in bars:
        s = b["speedup"]
        bar = bar_text(s / top, width)
        bar = bar[:one] + ("│" if bar[one] == " " else bar[one]) + bar[one + 1:]
        style = st.dim if b["baseline"] else (st.dim if b["noise"] else (st.ok if s >= 1.0 else st.warn))
        out.append(cells.pad(b["profile"], name_w) + "  ", style="bold")
        out.append(bar, style=style)
        out.append(f"  {s:.2f}x")
        if b.get("foreign"):
            out.append(f" {FOREIGN_MARK}", style=st.warn)
        if b["baseline"]:
            out.append("  baseline", style="dim")
        elif b["noise"]:
            out.append("  (noise: within the run-to-run spread)", style="dim")
        out.append("\n")
    return out


def _positions(t: Text, job: BenchJob, indent: str) -> None:
    """The run in flight's acceptance per draft position so far, on a line of its own (it wraps)."""
    line = job.positions_text()
    if line:
        t.append(f"{indent}{visible(line)}\n")


def progress_text(job: BenchJob, st: Styles = DEFAULT_STYLES) -> Text:
    """What the job is doing, line by line (also what the tests read)."""
    t = Text()
    p = job.preset
    t.append(f"{p.name}: {p.describe()}", style="dim")
    if job.kind == "compare":
        t.append(f"; {p.repeats} repeat{'s' if p.repeats != 1 else ''} per profile; baseline {job.baseline}",
                 style="dim")
    t.append(f"\non {job.host}\n\n", style="dim")
    if job.kind == "compare":
        name_w = max(cells.width(n) for n in job.profiles)
        for name in job.profiles:
            step = job.steps[name]
            style = {"failed": st.bad, "measured": st.ok, "measuring": st.accent, "switching": st.info}.get(
                step.state, st.dim)
            t.append(f"  {STEP_MARKS.get(step.state, '?')} {cells.pad(name, name_w)}  ", style=style)
            t.append(f"{step.state:<10}", style=style)
            t.append(f" {step.runs_done}/{step.runs_total} runs", style="dim")
            live = step.state == "measuring" and job.current == name and job.active
            if live:
                t.append(f"   {visible(job.progress_text())}")
            elif step.state == "failed" and step.detail:
                t.append(f"   {visible(step.detail)}", style=st.bad)
            t.append("\n")
            if live:
                _positions(t, job, "    ")
    else:
        t.append(f"  run {job.run_id or '…'} on {job.server}: ", style="bold")
        t.append(visible(job.progress_text()) if job.active or job.progress is not None else "")
        t.append("\n")
        _positions(t, job, "  ")
    t.append("\n")
    frac = job.fraction() or 0.0
    state_style = {"done": st.ok, "failed": st.bad, "interrupted": st.warn}.get(job.state, st.info)
    t.append(f"  {bar_text(frac, 30)}", style=st.bar)
    t.append(f" {100 * frac:3.0f}%", style="bold")
    t.append(f"  {job.state}", style=state_style)
    t.append(f" · {duration(job.elapsed_s())}", style="dim")
    if job.active and job.traffic_paused:
        t.append(" · the demo traffic is paused while it measures", style="dim")
    t.append("\n")
    if job.message and job.state in ("failed", "interrupted", "cancelling"):
        t.append(f"\n{visible_text(job.message)}\n", style=st.bad if job.state == "failed" else st.warn)
    return t


def results_text(job: BenchJob, st: Styles = DEFAULT_STYLES) -> Text | Group:
    """The results, once there are some: the comparison table and chart, or a run's figures."""
    parts: list = []
    if job.comparison is not None:
        parts.append(Text(visible_text(render_comparison(job.comparison, "text"))))
        chart = speedup_chart(job.comparison, st)
        if chart.plain:
            parts.append(chart)
    elif job.result is not None:
        parts.append(Text(visible_text(render_run_detail(dict(job.result.to_dict(), id=job.saved_id or "")))))
    if not parts:
        return Text("")
    if job.saved_id:
        kind = "comparison" if job.comparison is not None else "run"
        foot = Text(f"\nSaved in the history as {kind} {job.saved_id} (spectui history show {job.saved_id})",
                    style="dim")
        if job.exported:
            foot.append(f"; exported to {job.exported}", style="dim")
        else:
            foot.append("; e exports it as Markdown", style="dim")
        parts.append(foot)
    return Group(*parts)


def plain_text(r: Text | Group) -> str:
    return r.plain if isinstance(r, Text) else "\n".join(x.plain for x in r.renderables)


_COLUMNS = re.compile(r"\S {2,}\S|[│█▏▎▍▌▋▊▉─┼]")  # aligned columns, a rule or a bar: a table's row


def blocks(r: Text | Group) -> list[tuple[bool, list[Text]]]:
    """The results cut into runs of lines: ``(True, rows)`` for a table's rows (aligned columns, bars), which
    keep their rows whole and scroll sideways together; ``(False, lines)`` for sentences, which wrap."""
    out: list[tuple[bool, list[Text]]] = []
    for part in (r.renderables if isinstance(r, Group) else [r]):
        for line in part.split("\n", allow_blank=True):
            table = bool(_COLUMNS.search(line.plain))
            if out and out[-1][0] == table or (out and not line.plain.strip()):
                out[-1][1].append(line)
            else:
                out.append((table, [line]))
    return out


class WideLines(Widget):
    """A table's rows, each whole on one screen row, shown from column :attr:`col` (the screen moves every table
    together with ← →)."""

    DEFAULT_CSS = "WideLines { height: auto; }"

    def __init__(self, rows: list[Text]) -> None:
        super().__init__()
        self.rows = rows
        self.col = 0
        self._strips: list[Strip] | None = None

    @property
    def content_width(self) -> int:
        return max((cell_len(r.plain) for r in self.rows), default=0)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.rows)

    def scroll_to_col(self, col: int) -> None:
        self.col = col
        self.refresh()

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if self._strips is None:
            console = self.app.console
            self._strips = [Strip([s for s in r.render(console) if s.text != "\n"] or [Segment("")])
                            for r in self.rows]
        if not 0 <= y < len(self._strips):
            return Strip.blank(width, self.rich_style)
        return self._strips[y].crop_extend(self.col, self.col + width, self.rich_style)

    @property
    def shown_text(self) -> list[str]:
        """The rows as they are on screen now (tests read it)."""
        return [self.render_line(y).text for y in range(len(self.rows))]


class BenchScreen(Screen):
    BINDINGS = keys.BENCH

    DEFAULT_CSS = """
    BenchScreen #bench-title { height: auto; padding: 0 1; background: $boost; text-style: bold; }
    BenchScreen #bench-progress { height: auto; padding: 1 2 0 2; }
    BenchScreen #bench-cols { height: 1; padding: 0 2; color: $warning; display: none; }
    BenchScreen #bench-scroll { height: 1fr; padding: 0 2; overflow-x: hidden; }
    BenchScreen #bench-results { height: auto; }
    BenchScreen #bench-results > Static { width: 1fr; }
    """
    COL_STEP = 8  # columns one ← or → moves the tables

    def __init__(self, job: BenchJob | None) -> None:
        super().__init__(id="bench")
        self.job = job
        self._state = None
        self._mounted = False
        self._results: str | None = None  # the results drawn (plain text)
        self.col = 0  # the first column of the tables shown

    def compose(self) -> ComposeResult:
        yield Static("", id="bench-title", markup=False)
        yield Static("", id="bench-progress")
        yield Static("", id="bench-cols", markup=False)
        with VerticalScroll(id="bench-scroll"):
            yield Vertical(id="bench-results")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._mounted = True
        self.sync()

    def on_unmount(self) -> None:
        self._mounted = False

    @property
    def styles_(self) -> Styles:
        return getattr(self.app, "draw_styles", DEFAULT_STYLES)

    def sync(self) -> None:
        """Draw the job as it is now: the App calls it when the ``bench`` panel was marked changed (the job's
        news, and once a second while it runs for its clock)."""
        job = self.job
        if not self._mounted:
            return
        try:
            title = self.query_one("#bench-title", Static)
            progress = self.query_one("#bench-progress", Static)
            results = self.query_one("#bench-results", Vertical)
        except NoMatches:  # being taken down (or not built yet): the next tick redraws
            return
        if job is None:
            title.update("Benchmarks")
            progress.update(Text(NO_JOB, style="dim"))
            return
        title.update(job.title())
        progress.update(progress_text(job, self.styles_))
        if not job.active:
            text = results_text(job, self.styles_)
            if plain_text(text) != self._results:  # sentences wrap; a table's rows stay whole and scroll sideways
                self._results = plain_text(text)
                results.remove_children()
                results.mount_all([WideLines(lines) if table else Static(Text("\n").join(lines), markup=False)
                                   for table, lines in blocks(text)])
                self.call_after_refresh(self.show_cols)
        if job.state != self._state:
            self._state = job.state
            self.refresh_bindings()

    # --- the tables' columns ------------------------------------------------------------------------------------
    def on_resize(self) -> None:
        self.call_after_refresh(self.show_cols)

    def show_cols(self, col: int | None = None) -> None:
        """Show the tables from column ``col`` (kept within them), and say which columns show when they are wider
        than the screen: ``cols 13-92 of 140 ←→``."""
        tables = list(self.query(WideLines))
        wide = max((t.content_width for t in tables), default=0)
        view = min((t.size.width for t in tables), default=0)
        self.col = max(0, min(self.col if col is None else col, wide - view))
        for t in tables:
            t.scroll_to_col(self.col)
        cols = self.query_one("#bench-cols", Static)
        cols.display = view > 0 and wide > view
        if cols.display:
            arrows = ("←" if self.col > 0 else " ") + ("→" if self.col + view < wide else " ")
            cols.update(f"cols {self.col + 1}-{min(wide, self.col + view)} of {wide} {arrows}  (← → move the "
                        "tables; sentences wrap)")

    def action_scroll_cols(self, step: int) -> None:
        self.show_cols(self.col + step * self.COL_STEP)

    @property
    def progress_plain(self) -> str:
        return progress_text(self.job).plain if self.job is not None else NO_JOB

    @property
    def results_plain(self) -> str:
        return plain_text(results_text(self.job)) if self.job is not None else ""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if getattr(self.app, "replay", None) is not None and action in ("cancel_bench", "tune"):
            return False  # a replay shows the benchmark as it went; it starts and stops nothing
        if action == "cancel_bench":
            return self.job is not None and self.job.active and self.job.state != "cancelling"
        if action == "export":
            return None if (self.job is None or self.job.active or not self.job.saved_id) else True
        return True

    def action_tune(self) -> None:
        self.app.tune.request()

    def action_cancel_bench(self) -> None:
        self.app.bench.request_cancel()

    def action_export(self) -> None:
        self.app.bench.export(self.job)

    def action_close(self) -> None:
        self.dismiss()
