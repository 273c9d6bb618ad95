"""The tune loop: measure a profile and its baseline, predict, run the most promising, recommend.

One loop for every front end: ``spectui tune`` prints it, the console's tune screen draws it.

1. check the profile and its baseline with the host's own parser (problems raise
   :class:`TuneProblems`, nothing runs);
2. the plan (:func:`~spectui.core.tune.plan.plan_tune`): what runs within the budget, from the
   history's measurements and timings on this host;
3. the verify-cost probe (instant on the simulated host);
4. the latest measurement of the profile in the history, else a comparison of the profile with its
   baseline first (then the plan is made again with the time it took);
5. every candidate setting predicted (:func:`~spectui.core.tune.predict_table`), the most promising
   chosen as the plan allows (:func:`~spectui.core.tune.sweep.promising_settings`);
6. those settings compared with the baseline (and the profile, when this tune has not measured it);
7. predicted beside measured and one recommendation (:func:`~spectui.core.tune.sweep.recommend`),
   which says where it rests on predictions only.

Each step is reported to ``on_event`` as a :class:`TuneEvent` (the comparisons' own
:class:`~spectui.core.bench.CompareEvent` inside ``compare`` events); :func:`run_tune` returns a
:class:`TuneOutcome` holding everything the report says (``outcome.report`` is the
``spectui.tune/1`` JSON object).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from spectui.core.bench import CompareEvent, run_comparison
from spectui.core.bench.runs import host_label
from spectui.core.errors import AgentCallError, Disconnected, SpectuiError
from spectui.core.flagcheck import check_on_host
from spectui.core.probe import ProbeOptions, probe_params, run_probe
from spectui.core.profiles import Profile
from spectui.core.session import Session
from spectui.core.tune.errors import TuneError
from spectui.core.tune.plan import (DEFAULT_BUDGET_MIN, MAX_SETTINGS, TUNE_PRESET, TuneInputs, TunePlan, plan_tune)
from spectui.core.tune.predict import MeasuredRun, PredictionTable, predict_table
from spectui.core.tune.sweep import (Recommendation, VariantPrediction, baseline_for, history_measured,
                                     predict_variants, predicted_vs_measured, promising_settings, recommend,
                                     variant_for_setting)
from spectui.core.tune.variants import Variant
from spectui.core.tune.why import why_no_histogram

SCHEMA = "spectui.tune/1"


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
    (``problems`` the host's parser found in the chosen settings; ``text`` closes them), ``note``,
    ``planned`` (``plan``: the :class:`~spectui.core.tune.plan.TunePlan`, ``text`` it in one line).
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
    plan: TunePlan | None = None


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
    plan: TunePlan | None = None

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


async def run_tune(session: Session, inputs: TuneInputs, *, store=None,
                   on_event: Callable[[TuneEvent], None] | None = None, force: bool = False,
                   stop_after: bool = False,
                   reconnect: Callable[[Disconnected, str], Awaitable[Session]] | None = None,
                   session_of: Callable[[], Session] | None = None) -> TuneOutcome:
    """Tune ``inputs.profile`` against ``inputs.baseline`` on ``session``'s host within ``inputs.budget_s``.

    What runs is :func:`~spectui.core.tune.plan.plan_tune`'s plan, made from the history before anything
    runs and again after a first measurement (with the time it took). ``store`` (a
    :class:`~spectui.core.history.HistoryStore`) is read for earlier measurements and timings and
    receives every run and comparison. ``reconnect`` follows a run on after a dropped connection
    (as :func:`run_comparison` does); ``session_of`` gives the session to go on with afterwards
    (default: ``session``)."""
    profile, baseline, preset, budget_s = inputs.profile, inputs.baseline, inputs.preset, inputs.budget_s
    if profile.algorithm is None:
        raise TuneError(f"{profile.name} has no speculative algorithm: tune a speculative profile")
    emit = on_event or (lambda ev: None)
    current = session_of or (lambda: session)
    t0 = time.monotonic()
    concs = list(preset.concurrency)
    comps: list[dict] = []
    report: dict[str, Any] = {"schema": SCHEMA, "profile": profile.name, "baseline": baseline.name,
                              "preset": preset.name, "concurrencies": concs, "budget_s": budget_s, "notes": []}

    def history() -> list:
        return store.runs() if store is not None else []

    async def compare(profiles: list[Profile], variants: list[Variant]) -> tuple[dict, list, dict]:
        index = len(comps) + 1
        results: list = []
        failed: dict[str, str] = {}

        def relay(ev: CompareEvent) -> None:
            if ev.kind == "run_finished" and ev.result is not None:
                results.append(ev.result)
            elif ev.kind == "switch_failed":
                failed[ev.profile] = str(ev.detail)
            emit(TuneEvent("compare", index=index, compare=ev))

        emit(TuneEvent("compare_started", index=index, names=tuple(p.name for p in profiles),
                       variants={v.server_name: v.display_name for v in variants}))
        comp = await run_comparison(current(), profiles, preset, baseline=baseline.name, store=store, on_event=relay,
                                    force=force, stop_after=stop_after, reconnect=reconnect,
                                    variants=variant_meta(variants))
        comps.append(comp)
        emit(TuneEvent("compared", index=index, comparison=comp))
        return comp, results, failed

    emit(TuneEvent("stage", "checking the profiles with the host's SGLang parser"))
    problems = await problems_on_host(session, [baseline, profile])
    if problems:
        raise TuneProblems(problems, "nothing was tuned: fix the profile first.")
    host = host_label(session)
    report["host"] = host
    plan = plan_tune(inputs, history(), host)
    report["plan"] = plan.to_dict()
    emit(TuneEvent("planned", plan_text(plan), plan=plan))
    emit(TuneEvent("stage", "running the verify-cost probe"))
    probe, why = await probe_for(session, profile)
    if probe is None:
        raise TuneError(why)
    measured = history_measured(history(), profile.name, host=host, baseline=baseline.name)
    if plan.measure_first:
        emit(TuneEvent("stage", f"measuring {profile.name} and {baseline.name} first ({preset.describe()})"))
        _, results, failed = await compare([baseline, profile], [])
        measured = history_measured(history(), profile.name, host=host, baseline=baseline.name)
        if measured is None:
            raise TuneError(why_no_histogram(profile.name, [r for r in results if r.profile == profile.name],
                                             switch_failure=failed.get(profile.name)))
        plan = plan_tune(inputs, history(), host, spent_s=time.monotonic() - t0, first_done=True)
        report["plan"] = plan.to_dict()
        emit(TuneEvent("planned", plan_text(plan), plan=plan))
    report["measured_from"] = measured.source
    emit(TuneEvent("stage", "predicting every setting"))
    table = predict_table(measured, probe, concurrencies=concs)
    report["predictions"] = table.to_dict()
    variants: list[Variant] = []
    for s in promising_settings(table, plan.settings):
        v = variant_for_setting(profile, s)
        if v.problems:
            report["notes"].append(f"{v.display_name}: " + "; ".join(v.problems))
            continue
        variants.append(v)
    report["estimate_per_setting_s"] = plan.per_profile_s
    preds = predict_variants(measured, probe, [(profile.name, profile)] + [(v.display_name, v.profile)
                                                                            for v in variants], concs)
    report["chosen"] = [vp.to_dict() for vp in preds]
    emit(TuneEvent("predicted", table=table, predictions=preds, plan=plan))
    if plan.note():
        report["notes"].append(plan.note())
    elif not variants:
        report["notes"].append("no other setting could be measured")
    others = [baseline] + ([profile] if plan.compare_profile else [])
    if variants:
        problems = await problems_on_host(current(), [v.profile for v in variants])
        if problems:
            closing = "the predicted settings were not run."
            report["notes"].append(f"{len(problems)} problem{'s' if len(problems) != 1 else ''} with the predicted "
                                   f"settings on this host: {problems[0]}")
            emit(TuneEvent("problems", closing, problems=tuple(problems)))
            variants = []
    if variants or (plan.compare_profile and plan.measures_anything):
        what = (f"{len(variants)} predicted setting{'s' if len(variants) != 1 else ''}" if variants else profile.name)
        emit(TuneEvent("stage", f"comparing {what} with {baseline.name}"))
        await compare([*others, *[v.profile for v in variants]], variants)
    names = {v.server_name: v.display_name for v in variants}
    beside: list[dict] = []
    for comp in comps:
        beside += predicted_vs_measured(comp, [vp for vp in preds if any(
            row["name"] == vp.server for row in comp["profiles"])])
    rec = recommend(comps, concs, names, table=table)
    report.update(comparisons=[c.get("id") for c in comps], predicted_vs_measured=beside,
                  recommendation=rec.to_dict(), elapsed_s=time.monotonic() - t0)
    outcome = TuneOutcome(report=report, measured=measured, table=table, predictions=preds, comparisons=tuple(comps),
                          beside=tuple(beside), recommendation=rec, variants=tuple(variants), plan=plan)
    return outcome


def plan_text(plan: TunePlan) -> str:
    """The plan in one line, as both front ends show it."""
    first = "measure the profile and its baseline first, then " if plan.measure_first else ""
    if plan.settings:
        then = f"compare {plan.settings} predicted setting{'s' if plan.settings != 1 else ''} with the baseline"
    elif plan.compare_profile and plan.runs:
        then = "compare the profile with its baseline (no time for other settings)"
    elif plan.compare_profile:
        then = "measure nothing (no time): predictions only"
    else:
        then = "measure no other setting (no time left)"
    runs = (f"{len(plan.runs)} run{'s' if len(plan.runs) != 1 else ''} of about {plan.run_s:.0f} s"
            if plan.runs else f"no more runs (about {plan.run_s:.0f} s each)")
    return (f"plan: {first}{then}; {runs} ({plan.run_basis}), switches about {plan.switch_s:.0f} s, "
            f"about {plan.total_s / 60:.1f} of {plan.budget_s / 60:g} min")


__all__ = ["DEFAULT_BUDGET_MIN", "MAX_SETTINGS", "SCHEMA", "TUNE_PRESET", "TuneEvent", "TuneInputs", "plan_text",
           "TuneOutcome", "TuneProblems",
           "lookup_baseline", "probe_for", "problems_on_host", "run_tune", "swept_axis", "swept_value",
           "variant_meta"]
