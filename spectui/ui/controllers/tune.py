"""Tune from the console (``T`` on the benchmark screen): the profile highlighted on the dashboard,
against its baseline, with the ``tune`` preset, within a budget chosen from a list.

The loop is ``spectui.core.tune.run`` (the one ``spectui tune`` prints), run by the host's console
(:func:`spectui.core.console.jobs.run_tune`). Each comparison it runs is
the console's benchmark while it runs (the banner, ``v`` and ``c`` follow it, the demo traffic stays
paused, ``b`` and ``B`` wait); the tune screen shows the stages, the run in flight, the chart of
tok/s against the swept value, and the recommendation with its evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spectui.core.profiles import ProfileError
from spectui.ui.controllers.base import Controller
from spectui.ui.dashboard_views import showing

if TYPE_CHECKING:  # the planner, the loop, the job and its screens: loaded by the key that starts a tune
    from spectui.core.console.tunejob import TuneJob
    from spectui.core.tune import SpecSetting
    from spectui.core.tune.plan import TuneInputs


def console_inputs(library, name: str, budget_min: float) -> TuneInputs:
    """The console's tune of ``name`` within ``budget_min``: the inputs ``spectui tune NAME --budget MIN`` builds
    (its default preset, concurrency levels, repeats and settings limit), for the same planner."""
    from spectui.core.tune.plan import tune_inputs
    return tune_inputs(library, name, budget_min)


class TuneController(Controller):
    """The shown host's tune under way (one at a time per host, as a benchmark is; its console's
    :attr:`~spectui.core.console.HostConsole.tune_job`) and the last one's results."""

    def __init__(self, app) -> None:
        super().__init__(app)
        self.last_budget: float | None = None

    @property
    def job(self) -> TuneJob | None:
        return self.console.tune_job

    @property
    def active(self) -> bool:
        return self.job is not None and self.job.active

    # --- T ----------------------------------------------------------------------------------------------
    def request(self) -> None:
        """Show the tune under way; else ask for a budget and tune the highlighted profile."""
        if self.active:
            self.open_screen()
            return
        if self.console.measuring:
            self.notify("A benchmark is running: the tune starts once it ends (c stops it).", severity="warning")
            return
        if self.ready_link() is None:
            return
        name = self.app.highlighted_name()
        profile = self.console.library.profiles.get(name) if name else None
        if profile is None or profile.algorithm is None:
            self.notify(f"{name or 'No profile'} has no speculative algorithm: highlight a speculative profile on "
                        "the dashboard, then T tunes it.", severity="warning", markup=False)
            return
        from spectui.core.bench.presets import PresetError
        from spectui.core.tune import SpecSetting, TuneError
        from spectui.core.tune.plan import DEFAULT_BUDGET_MIN
        try:
            inputs = console_inputs(self.console.library, profile.name, DEFAULT_BUDGET_MIN)
            setting = SpecSetting.from_settings(profile.speculative_settings())
        except (TuneError, ProfileError, PresetError) as exc:
            self.notify(f"Tune of {profile.name}: {exc}", severity="error", timeout=15, markup=False)
            return

        def picked(budget: float | None) -> None:
            if budget is not None:
                self.start(profile.name, budget, setting)

        from spectui.ui.screens.tune import BudgetPicker
        self.push_screen(BudgetPicker(profile.name, inputs.baseline.name, inputs.preset, first=self.last_budget),
                         picked)

    def start(self, name: str, budget_min: float, setting: SpecSetting | None = None) -> None:
        bench, traffic = self.app.bench, self.app.traffic
        if self.active or bench.measuring() or self.ready_link() is None:
            return
        console = self.console
        from spectui.core.bench.presets import PresetError
        from spectui.core.console.tunejob import TuneJob
        from spectui.core.tune import TuneError
        from spectui.ui.screens.tune import TuneScreen
        try:
            inputs = console_inputs(console.library, name, budget_min)
        except (TuneError, ProfileError, PresetError) as exc:
            self.notify(f"Tune of {name}: {exc}", severity="error", timeout=15, markup=False)
            return
        profile, baseline, preset = inputs.profile, inputs.baseline, inputs.preset
        job = TuneJob(profile.name, baseline.name, preset, self.link.session.target.history_label, budget_min, setting)
        job.bench.traffic_paused = bool(traffic.available and traffic.wanted)
        if not console.seat.take(f"tuning {profile.name}"):
            return
        console.tune_job, console.bench_job = job, job.bench  # its comparison is the host's benchmark
        self.last_budget = budget_min
        from spectui.core.console.jobs import run_tune
        console.run_job(run_tune(console, job, inputs))
        if showing(self.app.screen, "bench", "BenchScreen") and self.app.screen.job is None:
            self.app.pop_screen()  # it said there was no benchmark: the tune is one now
        self.push_screen(TuneScreen(job))
        self.refresh()

    def open_screen(self) -> None:
        if self.job is None:
            self.request()
            return
        if showing(self.app.screen, "tune", "TuneScreen"):
            return
        from spectui.ui.screens.tune import TuneScreen
        self.push_screen(TuneScreen(self.job))


__all__ = ["TuneController"]
