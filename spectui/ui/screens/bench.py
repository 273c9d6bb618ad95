"""The benchmark screen (``b``, ``B``, ``v``): a benchmark's progress while it runs, then its results.

While it runs: each profile's stage (switching, measuring, measured, failed), the run in flight
(requests done, live tok/s and accept length, ETA) and the whole job's progress. When it ends:
for a comparison, the table (``render_comparison`` text) and a bar chart of the speedup against
the baseline; for a single run, its figures. ``e`` exports them as Markdown, ``c`` cancels, ``T`` tunes the profile
highlighted on the dashboard (``spectui.ui.screens.tune``). Before any benchmark it says how to
start one.

The screen reads a :class:`~spectui.ui.benchjob.BenchJob` that the app's workers feed; it asks
the app for everything else.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Static

from spectui.core.bench import render_comparison, speedup_bars
from spectui.core.bench.table import FOREIGN_MARK, render_run_detail
from spectui.core.textsafe import visible, visible_text
from spectui.ui import keys
from spectui.ui.benchjob import BenchJob
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
    name_w = max(len(b["profile"]) for b in bars)
    one = min(width - 1, round(width / top))
    out.append(f"Speedup against {comp['baseline']} (output tok/s; │ marks 1.00x)\n", style="bold")
    for b in bars:
        s = b["speedup"]
        bar = bar_text(s / top, width)
        bar = bar[:one] + ("│" if bar[one] == " " else bar[one]) + bar[one + 1:]
        style = st.dim if b["baseline"] else (st.dim if b["noise"] else (st.ok if s >= 1.0 else st.warn))
        out.append(b["profile"].ljust(name_w) + "  ", style="bold")
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
        width = max(len(n) for n in job.profiles)
        for name in job.profiles:
            step = job.steps[name]
            style = {"failed": st.bad, "measured": st.ok, "measuring": st.accent, "switching": st.info}.get(
                step.state, st.dim)
            t.append(f"  {STEP_MARKS.get(step.state, '?')} {name.ljust(width)}  ", style=style)
            t.append(f"{step.state:<10}", style=style)
            t.append(f" {step.runs_done}/{step.runs_total} runs", style="dim")
            if step.state == "measuring" and job.current == name and job.active:
                t.append(f"   {visible(job.progress_text())}")
            elif step.state == "failed" and step.detail:
                t.append(f"   {visible(step.detail)}", style=st.bad)
            t.append("\n")
    else:
        t.append(f"  run {job.run_id or '…'} on {job.server}: ", style="bold")
        t.append(visible(job.progress_text()) if job.active or job.progress is not None else "")
        t.append("\n")
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


class BenchScreen(Screen):
    BINDINGS = keys.BENCH

    DEFAULT_CSS = """
    BenchScreen #bench-title { height: 1; padding: 0 1; background: $boost; text-style: bold; }
    BenchScreen #bench-progress { height: auto; padding: 1 2 0 2; }
    BenchScreen #bench-scroll { height: 1fr; padding: 0 2; overflow-x: auto; }
    BenchScreen #bench-results { width: auto; }
    """

    def __init__(self, job: BenchJob | None) -> None:
        super().__init__(id="bench")
        self.job = job
        self._seen: tuple | None = None
        self._state = None
        self._mounted = False

    def compose(self) -> ComposeResult:
        yield Static("", id="bench-title", markup=False)
        yield Static("", id="bench-progress")
        with VerticalScroll(id="bench-scroll"):
            yield Static("", id="bench-results")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._mounted = True
        self.sync(force=True)

    def on_unmount(self) -> None:
        self._mounted = False

    @property
    def styles_(self) -> Styles:
        return getattr(self.app, "draw_styles", DEFAULT_STYLES)

    def sync(self, *, force: bool = False) -> None:
        """Redraw if the job changed (or, while it runs, once a second for the clock)."""
        job = self.job
        key = (job.version, int(job.elapsed_s()) if job.active else None) if job is not None else None
        if not self._mounted or (not force and key == self._seen):
            return
        try:
            title = self.query_one("#bench-title", Static)
            progress = self.query_one("#bench-progress", Static)
            results = self.query_one("#bench-results", Static)
        except NoMatches:  # being taken down (or not built yet): the next tick redraws
            return
        self._seen = key
        if job is None:
            title.update("Benchmarks")
            progress.update(Text(NO_JOB, style="dim"))
            return
        title.update(job.title())
        progress.update(progress_text(job, self.styles_))
        if not job.active:
            text = results_text(job, self.styles_)
            results.update(text)
            # as wide as its widest row: a narrow terminal scrolls the results sideways, never wraps a row
            plain = plain_text(text)
            results.styles.width = max((cell_len(line) for line in plain.splitlines()), default=0) or "auto"
        if job.state != self._state:
            self._state = job.state
            self.refresh_bindings()

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
        from spectui.ui.controllers.tune import TuneController  # it opens this screen's subclass

        TuneController.of(self.app).request()

    def action_cancel_bench(self) -> None:
        self.app.bench.request_cancel()

    def action_export(self) -> None:
        self.app.bench.export(self.job)

    def action_close(self) -> None:
        self.dismiss()
