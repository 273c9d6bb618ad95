"""The tune loop: measure a profile and its baseline, predict, run the most promising, recommend.

One loop for every front end: ``spectui tune`` prints it, the console's tune screen draws it.

1. check the profile and its baseline with the host's own parser (problems raise
   :class:`TuneProblems`, nothing runs);
2. the verify-cost probe (instant on the simulated host);
3. the latest measurement of the profile in the history, else a comparison of the profile with its
   baseline first;
4. every candidate setting predicted (:func:`~spectui.core.tune.predict_table`), the most promising
   chosen as the budget allows (:func:`~spectui.core.tune.sweep.promising_settings`);
5. those settings compared with the baseline;
6. predicted beside measured and one recommendation (:func:`~spectui.core.tune.sweep.recommend`).

Each step is reported to ``on_event`` as a :class:`TuneEvent` (the comparisons' own
:class:`~spectui.core.bench.CompareEvent` inside ``compare`` events); :func:`run_tune` returns a
:class:`TuneOutcome` holding everything the report says (``outcome.report`` is the
``spectui.tune/1`` JSON object).
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from spectui.core.bench import CompareEvent, run_comparison
from spectui.core.bench.presets import Preset
from spectui.core.bench.runs import host_label
from spectui.core.errors import AgentCallError, Disconnected, SpectuiError
from spectui.core.flagcheck import check_on_host
from spectui.core.probe import ProbeOptions, probe_params, run_probe
from spectui.core.profiles import Profile
from spectui.core.session import Session
from spectui.core.tune.errors import TuneError
from spectui.core.tune.predict import MeasuredRun, PredictionTable, predict_table
from spectui.core.tune.sweep import (Recommendation, VariantPrediction, baseline_for, history_measured,
                                     predict_variants, predicted_vs_measured, promising_settings, recommend,
                                     variant_for_setting)
from spectui.core.tune.variants import Variant

SCHEMA = "spectui.tune/1"
TUNE_PRESET = "tune"
DEFAULT_BUDGET_MIN = 8.0
MAX_SETTINGS = 3
SWITCH_S = 10.0   # a guess at one switch when no comparison has been timed yet
RUN_S = 30.0      # a guess at one run of the preset, likewise


class TuneProblems(TuneError):
    """Profiles the host's parser refuses: nothing was tuned. ``problems`` lists each one."""

    def __init__(self, problems: Sequence[Exception], closing: str):
        super().__init__(closing)
        self.problems = list(problems)
        self.closing = closing


@dataclass(frozen=True)
class TuneEvent:
    """One step of a tune, for a progress display.

    ``kind``: ``stage`` (``text`` says what it does now), ``predicted`` (``table`` and
    ``predictions`` of the chosen settings), ``compare_started`` (``index``: the comparison's
    number from 1, ``names``: its profiles in order, ``variants``: server name -> display name),
    ``compare`` (``compare``: one :class:`CompareEvent` of comparison ``index``), ``compared``
    (``comparison``: its dict, ``beside``: predicted beside measured so far), ``problems``
    (``problems`` the host's parser found in the chosen settings; ``text`` closes them), ``note``.
    """

    kind: str
    text: str = ""
    index: int = 0
    names: tuple[str, ...] = ()
    variants: dict[str, str] = field(default_factory=dict)
    compare: CompareEvent | None = None
    comparison: dict | None = None
    beside: tuple[dict, ...] = ()
    table: PredictionTable | None = None
    predictions: tuple[VariantPrediction, ...] = ()
    problems: tuple[Exception, ...] = ()


@dataclass(frozen=True)
class TuneOutcome:
    """What a tune found: the ``spectui.tune/1`` report and the objects behind it."""

    report: dict[str, Any]
    measured: MeasuredRun
    table: PredictionTable
    predictions: tuple[VariantPrediction, ...]
    comparisons: tuple[dict, ...]
    beside: tuple[dict, ...]
    recommendation: Recommendation
    variants: tuple[Variant, ...] = ()

    @property
    def notes(self) -> list[str]:
        return list(self.report.get("notes") or [])

    @property
    def axis(self) -> str:
        """What the tune varies: ``num-steps`` for a chain, ``num-draft-tokens`` for a tree."""
        return swept_axis(self.measured.setting)


def swept_axis(setting) -> str:
    return "num-steps" if setting.shape == "chain" else "num-draft-tokens"


def swept_value(setting) -> int:
    """The value of the swept flag of ``setting`` (steps of a chain, draft tokens of a tree)."""
    return int(setting.num_steps or 0) if setting.shape == "chain" else int(setting.draft_tokens)


def lookup_baseline(lib, profile: Profile, given: str | None) -> Profile:
    """The plain profile ``profile`` is compared with: ``given``, else the nearest it extends."""
    name = given or baseline_for(profile, lib.get)
    if name is None:
        raise TuneError(f"{profile.name} extends no profile without speculation: name the one to beat with --baseline")
    return lib.get(name)


async def probe_for(session: Session, profile: Profile) -> tuple[dict | None, str | None]:
    """The verify-cost probe's result for ``profile`` on this host, or None and the sentence why not."""
    try:
        params = probe_params(profile, ProbeOptions(), agent_python=session.hello.get("python"))
        return await run_probe(session, params), None
    except (AgentCallError, SpectuiError, ValueError) as exc:
        return None, f"no step-time predictions: the verify-cost probe failed: {exc}"


def variant_meta(variants: Sequence[Variant]) -> dict[str, dict]:
    """``run_comparison``'s ``variants``: each variant's display name, base and changes."""
    return {v.server_name: {"display_name": v.display_name, "base": v.base,
                            "changes": [[f, val] for f, val in v.changes]} for v in variants}


async def problems_on_host(session: Session, profiles: Sequence[Profile]) -> list[Exception]:
    """What the host's own parser refuses in ``profiles`` (all of them; empty when none)."""
    out: list[Exception] = []
    for prof in profiles:
        out += await check_on_host(session, prof)
    return out


def _covers(measured: MeasuredRun | None, concurrencies: Sequence[int]) -> bool:
    return measured is not None and all(
        (p := measured.point(c)) is not None and p.spec_step_ms and p.base_step_ms for c in concurrencies)


def _covers_from_comps(comps: Sequence[dict], name: str) -> bool:
    return any(row["name"] == name and row.get("cells") for c in comps for row in c["profiles"])


async def run_tune(session: Session, profile: Profile, baseline: Profile, preset: Preset, *,
                   budget_s: float, max_settings: int = MAX_SETTINGS, store=None,
                   on_event: Callable[[TuneEvent], None] | None = None, force: bool = False,
                   stop_after: bool = False,
                   reconnect: Callable[[Disconnected, str], Awaitable[Session]] | None = None,
                   session_of: Callable[[], Session] | None = None) -> TuneOutcome:
    """Tune ``profile`` against ``baseline`` on ``session``'s host within ``budget_s`` seconds.

    ``store`` (a :class:`~spectui.core.history.HistoryStore`) is read for earlier measurements and
    receives every run and comparison. ``reconnect`` follows a run on after a dropped connection
    (as :func:`run_comparison` does); ``session_of`` gives the session to go on with afterwards
    (default: ``session``)."""
    if profile.algorithm is None:
        raise TuneError(f"{profile.name} has no speculative algorithm: tune a speculative profile")
    emit = on_event or (lambda ev: None)
    current = session_of or (lambda: session)
    t0 = time.monotonic()
    budget_s = max(0.0, float(budget_s))
    concs = list(preset.concurrency)
    comps: list[dict] = []
    report: dict[str, Any] = {"schema": SCHEMA, "profile": profile.name, "baseline": baseline.name,
                              "preset": preset.name, "concurrencies": concs, "budget_s": budget_s, "notes": []}

    async def compare(profiles: list[Profile], variants: list[Variant]) -> dict:
        index = len(comps) + 1
        emit(TuneEvent("compare_started", index=index, names=tuple(p.name for p in profiles),
                       variants={v.server_name: v.display_name for v in variants}))
        comp = await run_comparison(current(), profiles, preset, baseline=baseline.name, store=store,
                                    on_event=lambda ev: emit(TuneEvent("compare", index=index, compare=ev)),
                                    force=force, stop_after=stop_after, reconnect=reconnect,
                                    variants=variant_meta(variants))
        comps.append(comp)
        emit(TuneEvent("compared", index=index, comparison=comp))
        return comp

    emit(TuneEvent("stage", "checking the profiles with the host's SGLang parser"))
    problems = await problems_on_host(session, [baseline, profile])
    if problems:
        raise TuneProblems(problems, "nothing was tuned: fix the profile first.")
    host = host_label(session)
    report["host"] = host
    emit(TuneEvent("stage", "running the verify-cost probe"))
    probe, why = await probe_for(session, profile)
    if probe is None:
        raise TuneError(why)
    runs = store.runs() if store is not None else []
    measured = history_measured(runs, profile.name, host=host, baseline=baseline.name)
    per_profile = None
    if not _covers(measured, concs):
        emit(TuneEvent("stage", f"measuring {profile.name} and {baseline.name} first ({preset.describe()})"))
        started = time.monotonic()
        await compare([baseline, profile], [])
        per_profile = (time.monotonic() - started) / 2
        measured = history_measured(store.runs() if store is not None else [], profile.name, host=host,
                                    baseline=baseline.name)
        if measured is None:
            raise TuneError(f"the runs of {profile.name} kept no correct-drafts histogram: nothing to predict from")
    report["measured_from"] = measured.source
    emit(TuneEvent("stage", "predicting every setting"))
    table = predict_table(measured, probe, concurrencies=concs)
    report["predictions"] = table.to_dict()
    if per_profile is None:
        per_profile = SWITCH_S + len(concs) * preset.repeats * RUN_S
    left = budget_s - (time.monotonic() - t0) - per_profile  # the baseline is measured again beside them
    fits = max(0, math.floor(left / per_profile)) if per_profile > 0 else 0
    count = min(max(0, max_settings), fits)
    variants: list[Variant] = []
    for s in promising_settings(table, count):
        v = variant_for_setting(profile, s)
        if v.problems:
            report["notes"].append(f"{v.display_name}: " + "; ".join(v.problems))
            continue
        variants.append(v)
    report["estimate_per_setting_s"] = per_profile
    preds = predict_variants(measured, probe, [(profile.name, profile)] + [(v.display_name, v.profile)
                                                                            for v in variants], concs)
    report["chosen"] = [vp.to_dict() for vp in preds]
    emit(TuneEvent("predicted", table=table, predictions=preds))
    if not variants:
        report["notes"].append(f"the budget of {budget_s / 60:g} min left no time to measure other settings "
                               f"(about {per_profile:.0f} s each)" if count == 0 else
                               "no other setting could be measured")
    else:
        problems = await problems_on_host(current(), [v.profile for v in variants])
        if problems:
            closing = "the predicted settings were not run."
            report["notes"].append(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} with the predicted "
                                   f"settings on this host: {problems[0]}")
            emit(TuneEvent("problems", closing, problems=tuple(problems)))
        else:
            emit(TuneEvent("stage", f"comparing {len(variants)} predicted setting{'s' if len(variants) != 1 else ''} "
                                    f"with {baseline.name}"))
            if _covers_from_comps(comps, profile.name):
                await compare([baseline, *[v.profile for v in variants]], variants)
            else:
                await compare([baseline, profile, *[v.profile for v in variants]], variants)
    names = {v.server_name: v.display_name for v in variants}
    beside: list[dict] = []
    for comp in comps:
        beside += predicted_vs_measured(comp, [vp for vp in preds if any(
            row["name"] == vp.server for row in comp["profiles"])])
    rec = recommend(comps, concs, names)
    report.update(comparisons=[c.get("id") for c in comps], predicted_vs_measured=beside,
                  recommendation=rec.to_dict(), elapsed_s=time.monotonic() - t0)
    outcome = TuneOutcome(report=report, measured=measured, table=table, predictions=preds, comparisons=tuple(comps),
                          beside=tuple(beside), recommendation=rec, variants=tuple(variants))
    return outcome


__all__ = ["DEFAULT_BUDGET_MIN", "MAX_SETTINGS", "SCHEMA", "TUNE_PRESET", "TuneEvent", "TuneOutcome", "TuneProblems",
           "lookup_baseline", "probe_for", "problems_on_host", "run_tune", "swept_axis", "swept_value",
           "variant_meta"]
