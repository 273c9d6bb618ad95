"""A tune a host's console runs (the benchmark screen's ``T``; its :attr:`~spectui.core.console.HostConsole.tune_job`),
as the tune screen sees it. It holds its host's action seat for its whole run and stays with its host.

The tune loop (``spectui.core.tune.run``) reports to :meth:`TuneJob.on_event`; each comparison it
runs is also a :class:`~spectui.core.console.benchjob.BenchJob` (``bench``), so the banner, ``v`` and ``c``
follow it as they follow any comparison. The tune screen and its chart read the job at their
refresh. Plain data and text, no Textual: tested on its own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from spectui.core.bench import Preset
from spectui.core.tune import SpecSetting
from spectui.core.tune.plan import TunePlan
from spectui.core.tune.predict import PredictionTable
from spectui.core.tune.run import TuneEvent, TuneOutcome, swept_axis, swept_value
from spectui.core.console.benchjob import BenchJob, JobClock

BUDGETS_MIN = (2.0, 4.0, 8.0, 15.0, 30.0)


@dataclass(frozen=True)
class ChartPoint:
    """One setting at one concurrency: its swept value, predicted and measured tok/s per stream."""

    value: int
    label: str
    predicted: float | None = None
    measured: float | None = None
    spread: float | None = None     # the measured tok/s spread, a fraction (±)
    noise: bool = False             # its speedup is within the run-to-run spread
    speedup: float | None = None    # measured, against the baseline
    is_profile: bool = False        # the tuned profile's own setting


@dataclass(frozen=True)
class ChartView:
    """What the tune chart draws at one concurrency (frozen: the chart redraws only on change)."""

    concurrency: int
    axis: str                               # num-steps | num-draft-tokens
    points: tuple[ChartPoint, ...] = ()
    baseline: float | None = None           # the baseline's tok/s per stream
    baseline_source: str = ""               # "measured" (this tune) | "measured earlier" (history) | "predicted"
    baseline_name: str = ""

    @property
    def measured(self) -> tuple[ChartPoint, ...]:
        return tuple(p for p in self.points if p.measured is not None)


@dataclass
class TuneJob(JobClock):
    profile: str
    baseline: str
    preset: Preset
    host: str
    budget_min: float
    setting: SpecSetting | None = None        # the profile's own setting
    state: str = "starting"                   # starting | running | cancelling | done | interrupted | failed
    stage: str = "starting"
    stages: list[tuple[float, str]] = field(default_factory=list)
    message: str | None = None
    bench: BenchJob | None = None             # the comparison in flight, or the last
    comparisons: list[dict] = field(default_factory=list)
    settings: dict[str, SpecSetting] = field(default_factory=dict)  # server name -> its setting
    names: dict[str, str] = field(default_factory=dict)            # server name -> display name
    table: PredictionTable | None = None
    plan: TunePlan | None = None              # what the tune runs within its budget (the CLI's plan too)
    plan_line: str = ""
    _planned_after: int = 0                   # comparisons done when the plan was made
    outcome: TuneOutcome | None = None
    started_at: float = field(default_factory=time.monotonic)
    ended_at: float | None = None

    def __post_init__(self) -> None:
        if self.setting is not None:
            self.settings[self.profile] = self.setting
        if self.bench is None:  # the banner, v and c follow it until the first comparison starts
            self.bench = BenchJob.comparing(self.preset, self.host, [self.baseline, self.profile], self.baseline)

    # --- state ------------------------------------------------------------------------------------
    def on_event(self, ev: TuneEvent) -> None:
        if self.state == "starting":
            self.state = "running"
        if ev.kind == "stage":
            self.stage = ev.text
            self.stages.append((self.elapsed_s(), ev.text))
        elif ev.kind == "planned":
            self.plan, self.plan_line, self._planned_after = ev.plan, ev.text, len(self.comparisons)
        elif ev.kind == "predicted":
            self.table = ev.table
            for vp in ev.predictions:
                if vp.setting is not None:
                    self.settings[vp.server] = vp.setting
        elif ev.kind == "compare_started":
            self.names.update(ev.variants)
            job = BenchJob.comparing(self.preset, self.host, list(ev.names), self.baseline)
            job.state = "running"
            job.traffic_paused = bool(self.bench and self.bench.traffic_paused)
            self.bench = job
        elif ev.kind == "compare" and self.bench is not None and ev.compare is not None:
            self.bench.on_compare_event(ev.compare)
        elif ev.kind == "compared" and ev.comparison is not None:
            self.comparisons.append(ev.comparison)
            if self.bench is not None:  # its results, while it stays running: the tune goes on
                self.bench.comparison, self.bench.saved_id = ev.comparison, ev.comparison.get("id")
        elif ev.kind in ("problems", "note"):
            self.message = ev.text

    def finish(self, outcome: TuneOutcome) -> None:
        self.outcome = outcome
        self.table = outcome.table
        self.comparisons = list(outcome.comparisons)
        self.state = "done"
        self.stage = "done"
        self._end()

    def fail(self, message: str, state: str = "failed") -> None:
        self.state = state
        self.message = message
        self._end()

    def _end(self) -> None:
        self.ended_at = time.monotonic()
        job = self.bench
        if job is not None and job.active:
            if self.state == "done" and job.comparison is not None:
                job.finish_comparison(job.comparison)
            elif self.state == "done":
                job.state = "done"
                job._end()
            else:
                job.interrupted(self.message or self.state, job.comparison)

    # --- what the screen shows ----------------------------------------------------------------------
    @property
    def axis(self) -> str:
        return swept_axis(self.setting) if self.setting is not None else "setting"

    def concurrencies(self) -> tuple[int, ...]:
        return tuple(self.preset.concurrency)

    def chart(self, concurrency: int) -> ChartView:
        """Predicted and measured tok/s per stream of each setting at ``concurrency``, and the baseline."""
        axis = self.axis
        points: dict[int, dict] = {}
        baseline, source = None, ""
        if self.table is not None:
            for row in self.table.at(concurrency):
                if self.setting is not None and row.setting.shape != self.setting.shape:
                    continue
                v = swept_value(row.setting)
                points[v] = {"value": v, "label": row.setting.label, "predicted": row.tok_s,
                             "is_profile": row.is_measured}
                if row.baseline_tok_s is not None:
                    point = self.table.measured.point(concurrency)
                    earlier = point is not None and bool(point.base_step_ms)  # the history's baseline run, else the probe
                    baseline, source = row.baseline_tok_s, "measured earlier" if earlier else "predicted"
        for comp in self.comparisons:
            for row in comp.get("profiles") or []:
                cell = (row.get("cells") or {}).get(str(concurrency)) or {}
                if cell.get("decode_tok_s") is None:
                    continue
                if row["name"] == comp.get("baseline"):
                    baseline, source = cell["decode_tok_s"], "measured"
                    continue
                setting = self.settings.get(row["name"])
                if setting is None:
                    continue
                v = swept_value(setting)
                p = points.setdefault(v, {"value": v, "label": setting.label})
                p.update(measured=cell["decode_tok_s"], spread=(cell.get("tok_s") or {}).get("spread"),
                         noise=bool(cell.get("noise")), speedup=cell.get("speedup"),
                         is_profile=row["name"] == self.profile or p.get("is_profile", False))
        return ChartView(concurrency, axis, tuple(ChartPoint(**points[v]) for v in sorted(points)), baseline, source,
                         self.baseline)

    def progress_line(self) -> str:
        """What runs now: the stage, and the comparison's run in flight."""
        job = self.bench
        if self.active and job is not None and job.active and job.current:
            return f"{self.stage}: {job.current}, run {job.index}/{job.total}: {job.progress_text()}"
        return self.stage

    def fraction(self) -> float:
        """How far the tune is, by the runs of its comparisons (the predicted one counted when chosen)."""
        if not self.active:
            return 1.0 if self.state == "done" else 0.0
        job = self.bench
        done = len(self.comparisons)
        inner = (job.fraction() or 0.0) if job is not None and job.active else 0.0
        if self.plan is not None:  # the comparisons the plan makes: the first measurement, then the settings
            expected = self._planned_after + self.plan.comparisons
        else:
            expected = 2 if self.table is None or self.names or done == 0 else 1
        return min(0.99, (done + inner) / max(1, expected))

    def title(self) -> str:
        return f"Tune · {self.profile} against {self.baseline} · {self.preset.name} · budget {self.budget_min:g} min"


__all__ = ["BUDGETS_MIN", "ChartPoint", "ChartView", "TuneJob"]
