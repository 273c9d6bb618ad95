"""What a tune runs within its budget: one planner for ``spectui tune`` and the console's tune screen.

* ``tune_inputs(library, name, budget_min, ...)``: the profile, its baseline, the preset and the
  budget a tune of ``name`` uses (both front ends build their inputs here, so the same budget
  means the same preset and the same limits);
* ``estimate_run_s(preset, runs, host)`` / ``estimate_switch_s(runs, host)``: how long one run of
  the preset and one server switch take on this host, from the history's earlier runs (their
  ``started_at``/``ended_at``), else a stated guess;
* ``plan_tune(inputs, runs, host, spent_s=0, first_done=False)``: the :class:`TunePlan`: whether
  the profile and its baseline are measured first, how many predicted settings fit, every run in
  order and the per-run estimate it rests on.

Pure: plain dicts (history runs) in, frozen dataclasses out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from statistics import median
from typing import Any

from spectui.core.bench.presets import Preset, load_presets
from spectui.core.profiles import Profile
from spectui.core.tune.errors import TuneError
from spectui.core.tune.sweep import baseline_for, history_measured

TUNE_PRESET = "tune"
DEFAULT_BUDGET_MIN = 8.0
MAX_SETTINGS = 3
SWITCH_S = 10.0   # a guess at one switch (with its warm-up) when the history timed none on this host
RUN_S = 30.0      # a guess at one run of the preset when the history holds none on this host

_SAME_LOAD = ("dataset", "dataset-path", "input-len", "output-len", "num-prompts", "request-rate", "seed")


@dataclass(frozen=True)
class TuneInputs:
    """What a tune is asked to do; the CLI and the console build it with :func:`tune_inputs`."""

    profile: Profile
    baseline: Profile
    preset: Preset
    budget_s: float
    max_settings: int = MAX_SETTINGS

    def key(self) -> tuple:
        """The inputs compared by value (profiles by name and content)."""
        return (self.profile.name, self.profile.content_hash, self.baseline.name, self.baseline.content_hash,
                self.preset, self.budget_s, self.max_settings)


def tune_preset(name: str = TUNE_PRESET, concurrency: Sequence[int] | None = None,
                repeats: int | None = None) -> Preset:
    """The preset ``name`` with its concurrency levels and repeats replaced where given."""
    preset = load_presets().get(name)
    if concurrency:
        preset = replace(preset, concurrency=tuple(int(c) for c in concurrency))
    return preset.with_repeats(repeats)


def tune_inputs(library, name: str, budget_min: float, *, baseline: str | None = None, preset: str = TUNE_PRESET,
                concurrency: Sequence[int] | None = None, repeats: int | None = None,
                max_settings: int = MAX_SETTINGS) -> TuneInputs:
    """The inputs of a tune of profile ``name`` from ``library`` within ``budget_min`` minutes."""
    prof = library.get(name)
    if prof.algorithm is None:
        raise TuneError(f"{prof.name} has no speculative algorithm: tune a speculative profile")
    base_name = baseline or baseline_for(prof, library.get)
    if base_name is None:
        raise TuneError(f"{prof.name} extends no profile without speculation: name the one to beat with --baseline")
    return TuneInputs(prof, library.get(base_name), tune_preset(preset, concurrency, repeats),
                      max(0.0, float(budget_min) * 60.0), int(max_settings))


# -- how long things take ---------------------------------------------------------------------------

def _same_load(run: Mapping, preset: Preset) -> bool:
    theirs = run.get("preset") or {}
    mine = preset.to_dict()
    return all(theirs.get(k) == mine.get(k) for k in _SAME_LOAD)


def _timed(runs: Sequence[Mapping], host: str | None) -> list[Mapping]:
    return [r for r in runs if r.get("state") in (None, "done") and (host is None or r.get("host") == host)
            and isinstance(r.get("started_at"), (int, float)) and isinstance(r.get("ended_at"), (int, float))
            and r["ended_at"] >= r["started_at"]]


@dataclass(frozen=True)
class Estimate:
    seconds: float
    basis: str          # in words: where the figure comes from


def estimate_run_s(preset: Preset, runs: Sequence[Mapping], host: str | None) -> Estimate:
    """One run of ``preset``: the median wall time of the history's finished runs of the same load on ``host``."""
    same = [r["ended_at"] - r["started_at"] for r in _timed(runs, host) if _same_load(r, preset)
            and r.get("concurrency") in preset.concurrency]
    if same:
        return Estimate(float(median(same)), f"the median of {len(same)} earlier run{'s' if len(same) != 1 else ''} "
                                             f"of this load on this host")
    return Estimate(RUN_S, "a guess: no earlier run of this load on this host")


def estimate_switch_s(runs: Sequence[Mapping], host: str | None) -> Estimate:
    """One switch: the median gap, within one comparison, between a profile's last run and the next one's first."""
    by_key: dict[str, list[Mapping]] = {}
    for r in _timed(runs, host):
        if r.get("comparison_key"):
            by_key.setdefault(r["comparison_key"], []).append(r)
    gaps = []
    for group in by_key.values():
        group = sorted(group, key=lambda r: r["started_at"])
        gaps += [b["started_at"] - a["ended_at"] for a, b in zip(group, group[1:])
                 if a.get("profile") != b.get("profile") and b["started_at"] >= a["ended_at"]]
    if gaps:
        return Estimate(float(median(gaps)), f"the median of {len(gaps)} earlier switch{'es' if len(gaps) != 1 else ''}"
                                             " on this host")
    return Estimate(SWITCH_S, "a guess: no switch timed on this host yet")


# -- the plan -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PlannedRun:
    profile: str          # the profile's name, or ``predicted setting N``
    concurrency: int
    repeat: int


def covers(measured, concurrencies: Sequence[int]) -> bool:
    """``measured`` has the profile's verify step and the baseline's decode step at every concurrency."""
    return measured is not None and all(
        (p := measured.point(c)) is not None and p.spec_step_ms and p.base_step_ms for c in concurrencies)


@dataclass(frozen=True)
class TunePlan:
    budget_s: float
    preset: str
    concurrencies: tuple[int, ...]
    repeats: int
    run_s: float
    run_basis: str
    switch_s: float
    switch_basis: str
    measure_first: bool             # the profile and its baseline are measured before predicting
    settings: int                   # predicted settings compared with the baseline afterwards
    compare_profile: bool           # the profile itself is in the comparison of the predicted settings
    spent_s: float = 0.0
    runs: tuple[PlannedRun, ...] = ()

    @property
    def per_profile_s(self) -> float:
        """One profile in a comparison: its switch and its runs."""
        return self.switch_s + len(self.concurrencies) * self.repeats * self.run_s

    @property
    def total_s(self) -> float:
        return self.spent_s + len(self.runs) * self.run_s + self.switches() * self.switch_s

    def switches(self) -> int:
        """Server switches: one per profile in the runs' order."""
        return sum(1 for i, r in enumerate(self.runs) if i == 0 or self.runs[i - 1].profile != r.profile)

    @property
    def comparisons(self) -> int:
        """The comparisons the plan runs: the first measurement, then the one with the settings."""
        first = 2 * len(self.concurrencies) * self.repeats if self.measure_first else 0
        return int(self.measure_first) + int(len(self.runs) > first)

    @property
    def measures_anything(self) -> bool:
        return bool(self.runs)

    def note(self) -> str | None:
        """Why fewer settings are measured than asked, in one sentence (None when the budget was no limit)."""
        if self.settings:
            return None
        each = f"about {self.per_profile_s:.0f} s each; {self.run_s:.0f} s a run, {self.run_basis}"
        if not self.runs and self.compare_profile:  # not even the profile and its baseline again
            return f"the budget of {self.budget_s / 60:g} min left no time to measure anything ({each})"
        return f"the budget of {self.budget_s / 60:g} min left no time to measure other settings ({each})"

    def to_dict(self) -> dict[str, Any]:
        return {"budget_s": self.budget_s, "preset": self.preset, "concurrencies": list(self.concurrencies),
                "repeats": self.repeats, "run_s": self.run_s, "run_basis": self.run_basis, "switch_s": self.switch_s,
                "switch_basis": self.switch_basis, "measure_first": self.measure_first, "settings": self.settings,
                "compare_profile": self.compare_profile, "spent_s": self.spent_s, "per_profile_s": self.per_profile_s,
                "total_s": self.total_s,
                "runs": [[r.profile, r.concurrency, r.repeat] for r in self.runs]}


def _runs_of(names: Sequence[str], preset: Preset) -> tuple[PlannedRun, ...]:
    return tuple(PlannedRun(n, c, rep + 1) for n in names for c in preset.concurrency for rep in range(preset.repeats))


def plan_tune(inputs: TuneInputs, runs: Sequence[Mapping], host: str | None, *, spent_s: float = 0.0,
              first_done: bool = False) -> TunePlan:
    """The runs a tune of ``inputs`` makes on ``host`` given the history ``runs``.

    Without a measurement of the profile and its baseline at every concurrency in the history, both
    are measured first (the prediction needs them, whatever the budget). Then the baseline is
    compared again with as many predicted settings as the budget leaves time for (at most
    ``max_settings``), with the profile too when this tune has not measured it: nothing is
    recommended from the history alone. ``first_done``: the first measurement has run, taking
    ``spent_s``; the plan is what is left."""
    preset, budget = inputs.preset, inputs.budget_s
    run = estimate_run_s(preset, runs, host)
    switch = estimate_switch_s(runs, host)
    per = switch.seconds + len(preset.concurrency) * preset.repeats * run.seconds
    measured = history_measured(runs, inputs.profile.name, host=host, baseline=inputs.baseline.name)
    first = not first_done and not covers(measured, preset.concurrency)
    base, prof = inputs.baseline.name, inputs.profile.name
    first_runs = _runs_of([base, prof], preset) if first else ()
    left = budget - spent_s - (2 * per if first else 0.0)
    compare_profile = not first and not first_done
    fixed = 2 if compare_profile else 1   # the baseline again, and the profile when not measured yet
    fits = max(0, math.floor((left - fixed * per) / per + 1e-9)) if per > 0 else 0
    count = min(max(0, inputs.max_settings), fits)
    later: tuple[PlannedRun, ...] = ()
    if count or (compare_profile and left >= fixed * per):
        names = [base] + ([prof] if compare_profile else []) + [f"predicted setting {i + 1}" for i in range(count)]
        later = _runs_of(names, preset)
    return TunePlan(budget, preset.name, tuple(preset.concurrency), preset.repeats, run.seconds, run.basis,
                    switch.seconds, switch.basis, first, count, compare_profile, float(spent_s), first_runs + later)


__all__ = ["DEFAULT_BUDGET_MIN", "MAX_SETTINGS", "RUN_S", "SWITCH_S", "TUNE_PRESET", "Estimate", "PlannedRun",
           "TuneInputs", "TunePlan", "covers", "estimate_run_s", "estimate_switch_s", "plan_tune", "tune_inputs",
           "tune_preset"]
