"""The tune screen (``T`` on the benchmark screen) and its budget picker.

While the tune runs: its stages so far, the run in flight (profile, run n of N, requests, live tok/s,
ETA) and the whole tune's progress; the chart of tok/s per stream against the swept value fills in
as settings are predicted and measured (``spectui.ui.widgets.tune_chart``). When it ends: the
recommendation, one sentence per concurrency, as ``spectui tune`` prints it, then predicted beside
measured. It keeps the benchmark screen's keys: ``c`` stops the tune (what was measured is saved),
``e`` exports the last comparison, ``escape`` goes back (the tune goes on; ``T`` comes back).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import ModalScreen, Screen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from spectui.core.bench import Preset
from spectui.core.textsafe import visible_text
from spectui.ui import keys
from spectui.ui.draw import DEFAULT_STYLES, Styles, duration
from spectui.ui.screens.bench import BenchScreen, bar_text
from spectui.core.console.tunejob import BUDGETS_MIN, TuneJob
from spectui.ui.widgets.footer import KeyFooter
from spectui.ui.widgets.tune_chart import TuneChart
from spectui.core.tune.plan import DEFAULT_BUDGET_MIN


class BudgetPicker(ModalScreen["float | None"]):
    """How long the tune may take, measurements included (the same budget as ``spectui tune --budget``)."""

    BINDINGS = keys.PICKER

    def __init__(self, profile: str, baseline: str, preset: Preset, *, first: float | None = None) -> None:
        super().__init__(id="budget-picker")
        self.profile, self.baseline, self.preset = profile, baseline, preset
        self.budgets = sorted(BUDGETS_MIN, key=lambda b: b != (first if first in BUDGETS_MIN else DEFAULT_BUDGET_MIN))

    def compose(self) -> ComposeResult:
        p = self.preset
        with Vertical(classes="dialog"):
            yield Static(visible_text(f"Tune {self.profile} against {self.baseline}"), classes="dialog-title",
                         markup=False)
            yield Static(visible_text(
                f"Measures {self.profile} and {self.baseline} with {p.name} ({p.describe()}, {p.repeats} "
                f"repeat{'s' if p.repeats != 1 else ''}), predicts every setting of the drafter, then compares the most "
                f"promising with {self.baseline} as the budget allows: the plan spectui tune makes for the same "
                f"budget, shown when it starts."), markup=False)
            yield Static("Every run is saved to the history; c stops the tune.", markup=False)
            yield OptionList(*[Option(Text.assemble((f"{b:g} min", "bold"), "  budget, measurements included"),
                                      id=f"budget-{i}") for i, b in enumerate(self.budgets)], id="budgets")
            yield Static("enter: tune · escape: cancel", classes="dim", markup=False)

    def on_mount(self) -> None:
        box = self.query_one(OptionList)
        box.focus()
        box.highlighted = 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.budgets[int((event.option.id or "budget-0").split("-", 1)[1])])

    def choose(self, minutes: float) -> bool:
        """Highlight a budget (the tests use it); False if it is not offered."""
        if minutes not in self.budgets:
            return False
        self.query_one(OptionList).highlighted = self.budgets.index(minutes)
        return True

    def action_cancel(self) -> None:
        self.dismiss(None)


def progress_text(tune: TuneJob, st: Styles = DEFAULT_STYLES) -> Text:
    """The stages so far, what runs now and how far the tune is (also what the tests read)."""
    t = Text()
    t.append(f"on {tune.host}; {tune.preset.name}: {tune.preset.describe()}\n", style="dim")
    if tune.plan_line:
        t.append(f"{visible_text(tune.plan_line)}\n", style="dim")
    t.append("\n")
    for at, stage in tune.stages:
        t.append(f"  {duration(at):>6}  ", style="dim")
        t.append(visible_text(stage) + "\n")
    if tune.active:
        t.append(f"\n  {visible_text(tune.progress_line())}\n")
    frac = tune.fraction()
    state_style = {"done": st.ok, "failed": st.bad, "interrupted": st.warn}.get(tune.state, st.info)
    t.append(f"\n  {bar_text(frac, 30)}", style=st.bar)
    t.append(f" {100 * frac:3.0f}%", style="bold")
    t.append(f"  {tune.state}", style=state_style)
    t.append(f" · {duration(tune.elapsed_s())}", style="dim")
    if tune.active and tune.bench is not None and tune.bench.traffic_paused:
        t.append(" · the demo traffic is paused while it measures", style="dim")
    t.append("\n")
    if tune.message and tune.state in ("failed", "interrupted", "cancelling"):
        t.append(f"\n{visible_text(tune.message)}\n", style=st.bad if tune.state == "failed" else st.warn)
    return t


def results_text(tune: TuneJob, st: Styles = DEFAULT_STYLES) -> Text:
    """The recommendation and its evidence, once the tune ended."""
    out = tune.outcome
    t = Text()
    if out is None:
        return t
    rec = out.recommendation
    t.append("Prediction, nothing measured: " if rec.predicted_only else "Recommendation: ", style="bold")
    t.append(visible_text(rec.summary) + "\n", style=st.ok if any(p.beats_baseline for p in rec.picks) else st.warn)
    for pick in rec.picks:
        t.append(f"  {visible_text(pick.sentence())}\n")
    for note in out.notes:
        t.append(f"note: {visible_text(note)}\n", style="dim")
    t.append(f"\npredicted from {visible_text(out.measured.source or '?')} ({out.measured.setting.label}, accept "
             f"length {out.measured.accept_length:.2f}) and the verify-cost probe; per stream:\n", style="dim")
    for r in out.beside:
        pred = "–" if r["predicted_tok_s"] is None else f"{r['predicted_tok_s']:.1f}"
        meas = "–" if r["measured_tok_s"] is None else f"{r['measured_tok_s']:.1f}"
        t.append(f"  {visible_text(r['name'])}  c={r['concurrency']}: predicted {pred}, measured {meas} tok/s\n")
    ids = ", ".join(str(c.get("id")) for c in out.comparisons if c.get("id"))
    if ids:
        t.append(f"\nSaved in the history as comparison{'s' if ',' in ids else ''} {ids} "
                 f"(spectui history show ID); e exports the last one\n", style="dim")
    return t


class TuneScreen(BenchScreen):
    """A tune's progress, chart and recommendation; the benchmark screen's keys act on its comparison."""

    DEFAULT_CSS = """
    TuneScreen #tune-title { height: 1; padding: 0 1; background: $boost; text-style: bold; }
    TuneScreen #tune-scroll { height: 1fr; padding: 0 2; }
    TuneScreen #tune-progress { height: auto; padding: 1 0 0 0; }
    TuneScreen #tune-chart { height: 30; }
    TuneScreen #tune-results { height: auto; }
    """

    def __init__(self, tune: TuneJob) -> None:
        Screen.__init__(self, id="tune")
        self.tune = tune
        self.col = 0  # the benchmark screen's sideways tables: this screen has none
        self._state = None
        self._mounted = False

    @property
    def job(self):
        """The comparison of the tune in flight (or the last): what ``c`` stops and ``e`` exports."""
        return self.tune.bench

    def compose(self) -> ComposeResult:
        yield Static("", id="tune-title", markup=False)
        with VerticalScroll(id="tune-scroll"):
            yield Static("", id="tune-progress")
            yield Static("", id="tune-results")
            yield TuneChart(id="tune-chart")
        yield KeyFooter()

    def show_cols(self, col: int | None = None) -> None:
        """No sideways tables here: the chart and the text fit the screen's width."""

    def chart_views(self) -> tuple:
        return tuple(self.tune.chart(c) for c in self.tune.concurrencies()) if (
            self.tune.table is not None or self.tune.comparisons) else ()

    def sync(self) -> None:
        tune = self.tune
        if not self._mounted:
            return
        try:
            title = self.query_one("#tune-title", Static)
            progress = self.query_one("#tune-progress", Static)
            results = self.query_one("#tune-results", Static)
            chart = self.query_one("#tune-chart", TuneChart)
        except NoMatches:
            return
        title.update(tune.title())
        progress.update(progress_text(tune, self.styles_))
        results.update(results_text(tune, self.styles_))
        chart.show(self.chart_views())
        if tune.state != self._state:
            self._state = tune.state
            self.refresh_bindings()

    @property
    def progress_plain(self) -> str:
        return progress_text(self.tune).plain

    @property
    def results_plain(self) -> str:
        return results_text(self.tune).plain

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_bench":
            return self.tune.active and self.tune.state != "cancelling"
        return super().check_action(action, parameters)

    def action_tune(self) -> None:
        """The tune shown here is the one under way: T after it ended tunes the highlighted profile again."""
        if not self.tune.active:
            self.dismiss()
            super().action_tune()


__all__ = ["BudgetPicker", "TuneScreen", "progress_text", "results_text"]
