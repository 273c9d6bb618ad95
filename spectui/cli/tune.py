"""``spectui tune PROFILE``: predict every nearby setting, run the few most promising, recommend one.

1. Measure the profile and its baseline (the nearest ancestor without speculation) with the
   ``tune`` preset, unless the history already holds both at its concurrencies;
2. run the verify-cost probe (instant on the simulated host) and predict every step count or
   draft-token budget of the same drafter (``spectui.core.tune``);
3. compare the most promising settings with the baseline, as many as the budget allows
   (``spectui bench PROFILE --sweep`` does the same for settings you name);
4. print the predictions beside the measurements, and one recommendation with its evidence: the
   best setting per concurrency with its speedup and noise, or why none beats the baseline.

The helpers shared with ``spectui bench --sweep`` (the probe, the prediction tables, rendering)
live here too.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import replace

from spectui.cli.hostopts import (add_host_options, demo_profiles, explain_connect_error, has_host, refuse_on_problems,
                                  run_with_passphrase_prompt, target_from_args)
from spectui.core.bench import BenchError, PresetError, load_presets, render_comparison, run_comparison
from spectui.core.bench.presets import Preset
from spectui.core.bench.runs import host_label
from spectui.core.errors import AgentCallError, SpectuiError
from spectui.core.flagcheck import check_on_host
from spectui.core.history import HistoryStore
from spectui.core.probe import ProbeOptions, probe_params, run_probe
from spectui.core.profiles import Profile, ProfileError, load_profiles
from spectui.core.session import HostTarget, Session, open_session
from spectui.core.tune import TuneError, predict_table
from spectui.core.tune.sweep import (VariantPrediction, baseline_for, history_measured, predict_variants,
                                     predicted_vs_measured, promising_settings, recommend, variant_for_setting)
from spectui.core.tune.variants import Variant

SCHEMA = "spectui.tune/1"
TUNE_PRESET = "tune"
DEFAULT_BUDGET_MIN = 8.0
MAX_SETTINGS = 3
SWITCH_S = 10.0   # a guess at one switch when no comparison has been timed yet


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune", help="find the best speculative setting of a profile: predict, measure the best few, recommend",
        description=("Predict accept length, step time and tok/s of every step count or draft-token budget of "
                     "PROFILE's drafter from one measured run and the verify-cost probe, benchmark the most "
                     "promising within the budget against the baseline, and recommend one setting per "
                     "concurrency with its evidence (docs/tune.md)."))
    p.add_argument("profile", metavar="PROFILE", help="a speculative profile")
    add_host_options(p, required=False)
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET_MIN, metavar="MINUTES",
                   help=f"time for the whole tune, measurements included (default {DEFAULT_BUDGET_MIN:g})")
    p.add_argument("--preset", metavar="NAME", default=TUNE_PRESET,
                   help=f"benchmark preset (default {TUNE_PRESET}: short runs at concurrency 1 and 8)")
    p.add_argument("--concurrency", type=concurrency_list, metavar="1,8", help="concurrencies instead of the preset's")
    p.add_argument("--repeat", type=int, metavar="N", help="runs per setting (default: the preset's repeats)")
    p.add_argument("--baseline", metavar="PROFILE", help="the plain profile to beat (default: the nearest "
                   "profile PROFILE extends that has no speculation)")
    p.add_argument("--max-settings", type=int, default=MAX_SETTINGS, metavar="N",
                   help=f"measure at most this many predicted settings (default {MAX_SETTINGS})")
    p.add_argument("--profile-path", metavar="PATH", action="append", dest="profile_paths",
                   help="extra profile file or folder (repeatable)")
    p.add_argument("--reconnect-for", type=float, default=120.0, metavar="S",
                   help="after a dropped connection, keep reconnecting this long (default 120 s)")
    p.add_argument("--force", action="store_true", help="start servers even if GPUs are used by other processes")
    p.add_argument("--json", action="store_true", help=f"print one JSON object (schema {SCHEMA})")
    p.set_defaults(func=run)


# -- shared with spectui bench --sweep ---------------------------------------------------------

def concurrency_list(text: str) -> tuple[int, ...]:
    """``1,8`` -> ``(1, 8)`` (an argparse type)."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give whole numbers such as 1,8") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: give concurrencies of 1 or more, such as 1,8")
    return values


def preset_for(name: str, concurrency: tuple[int, ...] | None) -> Preset:
    preset = load_presets().get(name)
    return replace(preset, concurrency=tuple(concurrency)) if concurrency else preset


def lookup_baseline(lib, profile: Profile, given: str | None) -> Profile:
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


def _fmt(v, spec: str, none: str = "-") -> str:
    return none if v is None else format(v, spec)


def table_text(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n" for r in [header, *rows])


def predictions_text(preds: tuple[VariantPrediction, ...]) -> str:
    rows = []
    for vp in preds:
        if vp.reason:
            rows.append([vp.name, "-", vp.reason, "", "", "", "", ""])
        for p in vp.rows:
            rows.append([vp.name, str(p.concurrency), f"{p.accept_length:.2f} {p.accept_basis}",
                         f"{_fmt(p.step_ms, '.1f')} {p.step_basis or ''}".strip(), _fmt(p.tok_s, ".1f"),
                         _fmt(p.speedup_vs_baseline, ".2f") + ("x" if p.speedup_vs_baseline else ""),
                         _fmt(p.lstar, ".2f"), "" if p.can_win is not False else "cannot win"])
    return table_text(["SETTING", "C", "ACCEPT LEN", "STEP MS", "TOK/S/STREAM", "SPEEDUP", "L*", ""], rows)


def beside_text(rows: list[dict]) -> str:
    body = [[r["name"], str(r["concurrency"]), _fmt(r["predicted_tok_s"], ".1f"), _fmt(r["measured_tok_s"], ".1f"),
             _fmt(r["ratio"], ".2f"), _fmt(r["predicted_accept_length"], ".2f"),
             _fmt(r["measured_accept_length"], ".2f"), _fmt(r["predicted_speedup"], ".2f"),
             _fmt(r["measured_speedup"], ".2f")] for r in rows]
    return table_text(["SETTING", "C", "PRED TOK/S/STREAM", "MEASURED", "PRED/MEAS", "PRED ACCEPT", "MEASURED",
                       "PRED SPEEDUP", "MEASURED"], body)


def variant_meta(variants: list[Variant]) -> dict[str, dict]:
    return {v.server_name: {"display_name": v.display_name, "base": v.base,
                            "changes": [[f, val] for f, val in v.changes]} for v in variants}


async def checked(session: Session, profiles: list[Profile], closing: str) -> bool:
    """Each profile checked by the host's own parser, as before a switch; False (and said) on a problem."""
    for prof in profiles:
        if refuse_on_problems(await check_on_host(session, prof), closing):
            return False
    return True


def say(text: str) -> None:
    print(f"tune: {text}", file=sys.stderr)


# -- spectui tune ------------------------------------------------------------------------------

def _covers(measured, concurrencies) -> bool:
    return measured is not None and all(
        (p := measured.point(c)) is not None and p.spec_step_ms and p.base_step_ms for c in concurrencies)


async def _tune(args: argparse.Namespace, target: HostTarget) -> int:
    from spectui.cli.bench import CompareProgress, Reconnector

    t0 = time.monotonic()
    budget_s = max(0.0, args.budget) * 60.0
    lib = demo_profiles(args, load_profiles(args.profile_paths))
    prof = lib.get(args.profile)
    if prof.algorithm is None:
        raise TuneError(f"{prof.name} has no speculative algorithm: tune a speculative profile")
    base = lookup_baseline(lib, prof, args.baseline)
    preset = preset_for(args.preset, args.concurrency).with_repeats(args.repeat)
    concs = list(preset.concurrency)
    store = HistoryStore()
    session = await open_session(target)
    reconnect = Reconnector(args, target, session)
    comps: list[dict] = []
    report: dict = {"schema": SCHEMA, "profile": prof.name, "baseline": base.name, "preset": preset.name,
                    "concurrencies": concs, "budget_s": budget_s, "notes": []}

    async def compare(profiles: list[Profile], variants: list[Variant]) -> dict:
        progress = CompareProgress()
        try:
            comp = await run_comparison(reconnect.session, profiles, preset, baseline=base.name, store=store,
                                        on_event=progress, force=args.force, stop_after=target.kind == "demo",
                                        reconnect=reconnect, variants=variant_meta(variants))
        finally:
            progress.out.done()
        comps.append(comp)
        return comp

    try:
        if not await checked(session, [base, prof], "nothing was tuned: fix the profile first."):
            return 1
        host = host_label(session)
        report["host"] = host
        probe, why = await probe_for(session, prof)
        if probe is None:
            raise TuneError(why)
        measured = history_measured(store.runs(), prof.name, host=host, baseline=base.name)
        per_profile = None
        if not _covers(measured, concs):
            say(f"measuring {prof.name} and {base.name} first ({preset.describe()})")
            started = time.monotonic()
            comp = await compare([base, prof], [])
            per_profile = (time.monotonic() - started) / 2
            measured = history_measured(store.runs(), prof.name, host=host, baseline=base.name)
            if measured is None:
                raise TuneError(f"the runs of {prof.name} kept no correct-drafts histogram: nothing to predict from")
        report["measured_from"] = measured.source
        table = predict_table(measured, probe, concurrencies=concs)
        report["predictions"] = table.to_dict()
        if per_profile is None:
            per_profile = SWITCH_S + len(concs) * preset.repeats * 30.0
        left = budget_s - (time.monotonic() - t0) - per_profile  # the baseline is measured again beside them
        fits = max(0, math.floor(left / per_profile)) if per_profile > 0 else 0
        count = min(max(0, args.max_settings), fits)
        chosen = promising_settings(table, count)
        variants = []
        for s in chosen:
            v = variant_for_setting(prof, s)
            if v.problems:
                report["notes"].append(f"{v.display_name}: " + "; ".join(v.problems))
                continue
            variants.append(v)
        report["estimate_per_setting_s"] = per_profile
        preds = predict_variants(measured, probe, [(prof.name, prof)] + [(v.display_name, v.profile)
                                                                          for v in variants], concs)
        report["chosen"] = [vp.to_dict() for vp in preds]
        if not args.json:
            print(f"predicted from {measured.source} of {prof.name} ({measured.setting.label}, accept length "
                  f"{measured.accept_length:.2f}) and the verify-cost probe:")
            print(predictions_text(preds))
        if not variants:
            report["notes"].append(f"the budget of {args.budget:g} min left no time to measure other settings "
                                   f"(about {per_profile:.0f} s each)" if count == 0 else
                                   "no other setting could be measured")
        elif await checked(reconnect.session, [v.profile for v in variants], "the predicted settings were not run."):
            if _covers_from_comps(comps, prof.name):
                await compare([base, *[v.profile for v in variants]], variants)
            else:
                await compare([base, prof, *[v.profile for v in variants]], variants)
        names = {v.server_name: v.display_name for v in variants}
        beside = []
        for comp in comps:
            beside += predicted_vs_measured(comp, [vp for vp in preds if any(
                row["name"] == vp.server for row in comp["profiles"])])
        rec = recommend(comps, concs, names)
        report.update(comparisons=[c.get("id") for c in comps], predicted_vs_measured=beside,
                      recommendation=rec.to_dict(), elapsed_s=time.monotonic() - t0)
        if args.json:
            print(json.dumps(report, indent=2, default=str))
            return 0
        for comp in comps:
            print(render_comparison(comp, "text"), end="")
        print("\npredicted beside measured (per stream):")
        print(beside_text(beside))
        for note in report["notes"]:
            print(f"note: {note}")
        print("recommendation: " + rec.summary)
        for pick in rec.picks:
            print("  " + pick.sentence())
        print(f"(tune took {report['elapsed_s'] / 60:.1f} min; comparisons "
              f"{', '.join(str(c.get('id')) for c in comps)} in {store.path})")
        return 0
    finally:
        await reconnect.session.close()


def _covers_from_comps(comps: list[dict], name: str) -> bool:
    return any(row["name"] == name and row.get("cells") for c in comps for row in c["profiles"])


def run(args: argparse.Namespace) -> int:
    try:
        if not has_host(args):
            print("spectui: say where to tune: --host DEST or --demo", file=sys.stderr)
            return 2
        target = target_from_args(args)
        return run_with_passphrase_prompt(target, lambda t: _tune(args, t))
    except (ProfileError, PresetError, TuneError, BenchError) as exc:
        return _fail(args, exc, str(exc))
    except SpectuiError as exc:
        return _fail(args, exc, explain_connect_error(exc, args.argv))


def _fail(args: argparse.Namespace, exc: Exception, text: str) -> int:
    if args.json:
        print(json.dumps({"schema": SCHEMA, "error": {"kind": type(exc).__name__, "message": text}}, indent=2))
    print(f"spectui: {text}", file=sys.stderr)
    return 1
