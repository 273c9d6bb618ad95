"""Tune from the console (``T`` on the benchmark screen): the profile highlighted on the dashboard,
against its baseline, with the ``tune`` preset, within a budget chosen from a list.

The loop is ``spectui.core.tune.run`` (the one ``spectui tune`` prints). Each comparison it runs is
the console's benchmark while it runs (the banner, ``v`` and ``c`` follow it, the demo traffic stays
paused, ``b`` and ``B`` wait); the tune screen shows the stages, the run in flight, the chart of
tok/s against the swept value, and the recommendation with its evidence.
"""

from __future__ import annotations

import asyncio

from spectui.core.bench import PresetError, load_presets
from spectui.core.bench.runs import host_label
from spectui.core.errors import Disconnected, SpectuiError
from spectui.core.profiles import ProfileError
from spectui.core.tune import SpecSetting, TuneError
from spectui.core.tune.run import TUNE_PRESET, TuneEvent, TuneProblems, lookup_baseline, run_tune
from spectui.ui.controllers.base import Controller
from spectui.ui.screens.bench import BenchScreen
from spectui.ui.screens.tune import BudgetPicker, TuneScreen
from spectui.ui.tunejob import TuneJob


class BenchSeat:
    """The console's one benchmark at a time, as the tune takes it and gives it back."""

    def __init__(self, app) -> None:
        self.app = app
        self.owner = getattr(app, "bench", None)  # the benchmark controller, where the app has one

    def measuring(self) -> bool:
        return self.owner.measuring() if self.owner is not None else self.app.bench_measuring()

    def ready_link(self):
        ready = getattr(self.app, "ready_link", None) or self.app._ready_link
        return ready()

    def traffic_paused(self) -> bool:
        traffic = getattr(self.app, "traffic", None)
        if traffic is not None and hasattr(traffic, "available"):
            return bool(traffic.available and traffic.wanted)
        return bool(self.app.traffic_available and self.app.traffic_wanted)

    def take(self, job, worker) -> None:
        if self.owner is not None:
            self.owner.job, self.owner._worker = job, worker
        else:
            self.app.bench_job, self.app._bench_worker = job, worker

    def follow(self, job) -> None:
        """A new comparison of the tune is the benchmark under way."""
        if self.owner is not None:
            self.owner.job = job
        else:
            self.app.bench_job = job

    def history_store(self):
        return self.owner.history_store() if self.owner is not None else self.app.history_store()

    def done(self, job) -> None:
        if self.owner is not None:
            self.owner._done(job)
        else:
            self.app._bench_done(job)


class TuneController(Controller):
    """The tune under way (one at a time, as a benchmark is) and the last one's results."""

    def __init__(self, app) -> None:
        super().__init__(app)
        self.job: TuneJob | None = None
        self._worker = None
        self.last_budget: float | None = None

    @classmethod
    def of(cls, app) -> "TuneController":
        """The app's tune controller (made on first use)."""
        ctl = getattr(app, "tune", None)
        if not isinstance(ctl, cls):
            ctl = cls(app)
            app.tune = ctl
        return ctl

    @property
    def active(self) -> bool:
        return self.job is not None and self.job.active

    # --- T ----------------------------------------------------------------------------------------------
    def request(self) -> None:
        """Show the tune under way; else ask for a budget and tune the highlighted profile."""
        if self.active:
            self.open_screen()
            return
        seat = BenchSeat(self.app)
        if seat.measuring():
            self.notify("A benchmark is running: the tune starts once it ends (c stops it).", severity="warning")
            return
        if seat.ready_link() is None:
            return
        name = self.app.highlighted_name()
        profile = self.app.library.profiles.get(name) if name else None
        if profile is None or profile.algorithm is None:
            self.notify(f"{name or 'No profile'} has no speculative algorithm: highlight a speculative profile on "
                        "the dashboard, then T tunes it.", severity="warning", markup=False)
            return
        try:
            baseline = lookup_baseline(self.app.library, profile, None)
            preset = load_presets().get(TUNE_PRESET)
            setting = SpecSetting.from_settings(profile.speculative_settings())
        except (TuneError, ProfileError, PresetError) as exc:
            self.notify(f"Tune of {profile.name}: {exc}", severity="error", timeout=15, markup=False)
            return

        def picked(budget: float | None) -> None:
            if budget is not None:
                self.start(profile, baseline, preset, budget, setting)

        self.app.push_screen(BudgetPicker(profile.name, baseline.name, preset, first=self.last_budget), picked)

    def start(self, profile, baseline, preset, budget_min: float, setting: SpecSetting | None = None) -> None:
        seat = BenchSeat(self.app)
        if self.active or seat.measuring() or seat.ready_link() is None:
            return
        job = TuneJob(profile.name, baseline.name, preset, host_label(self.link.session), budget_min, setting)
        job.bench.traffic_paused = seat.traffic_paused()
        self.job = job
        self.last_budget = budget_min
        self._worker = self.app.run_worker(self._run(job, profile, baseline, preset, seat), name="tune",
                                           group="bench", exclusive=True, exit_on_error=False)
        seat.take(job.bench, self._worker)
        self.app.busy = f"tuning {profile.name}"
        if isinstance(self.app.screen, BenchScreen) and self.app.screen.job is None:
            self.app.pop_screen()  # it said there was no benchmark: the tune is one now
        self.app.push_screen(TuneScreen(job))
        self.refresh()

    async def _run(self, job: TuneJob, profile, baseline, preset, seat: BenchSeat) -> None:
        session = self.link.session

        def on_event(ev: TuneEvent) -> None:
            job.on_event(ev)
            if ev.kind == "compare_started":
                seat.follow(job.bench)
            if ev.kind != "compare" or ev.compare.kind != "progress":
                self.refresh()

        try:
            outcome = await run_tune(session, profile, baseline, preset, budget_s=job.budget_min * 60.0,
                                     store=seat.history_store(), on_event=on_event)
            job.finish(outcome)
            self.notify(f"Tune of {profile.name}: {outcome.recommendation.summary}.", timeout=15, markup=False)
        except asyncio.CancelledError:
            job.fail("Cancelled: the run in flight was stopped on the host; what was measured is saved, marked "
                     "interrupted.", "interrupted")
            raise
        except TuneProblems as exc:
            job.fail("; ".join(str(p) for p in exc.problems) + f"; {exc.closing}")
            self.notify(f"Tune of {profile.name}: {job.message}", severity="error", timeout=15, markup=False)
        except Disconnected as exc:
            job.fail(f"The connection dropped ({exc}); the run in flight goes on on the host (spectui bench "
                     f"--collect saves it).", "interrupted")
            self.notify(job.message, severity="error", timeout=15, markup=False)
        except (SpectuiError, ValueError, OSError) as exc:
            job.fail(str(exc))
            self.notify(f"Tune of {profile.name}: {exc}", severity="error", timeout=15, markup=False)
        finally:
            self._worker = None
            seat.done(job.bench)

    def open_screen(self) -> None:
        if self.job is None:
            self.request()
            return
        if isinstance(self.app.screen, TuneScreen):
            return
        self.app.push_screen(TuneScreen(self.job))


__all__ = ["TuneController"]
