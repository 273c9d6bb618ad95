"""``spectui tune PROFILE``: predict every nearby setting, run the few most promising, recommend one.

1. Measure the profile and its baseline (the nearest ancestor without speculation) with the
   ``tune`` preset, unless the history already holds both at its concurrencies;
2. run the verify-cost probe (instant on the simulated host) and predict every step count or
   draft-token budget of the same drafter (``spectui.core.tune``);
3. compare the most promising settings with the baseline, as many as the budget allows
   (``spectui bench PROFILE --sweep`` does the same for settings you name);
4. print the predictions beside the measurements, and one recommendation with its evidence: the
   best setting per concurrency with its speedup and noise, or why none beats the baseline.

The loop itself is ``spectui.core.tune.run`` (the console's tune screen runs the same one); this
module prints it. The helpers shared with ``spectui bench --sweep`` (the prediction tables,
rendering) live here too.
"""

from __future__ import annotations

import argparse
import json
import sys

from spectui.cli.benchshared import CompareProgress, Reconnector, concurrency_list
from spectui.cli.hostopts import (add_host_options, explain_connect_error, has_host, refuse_on_problems,
                                  run_with_passphrase_prompt, target_from_args)
from spectui.core.bench import BenchError, PresetError, render_comparison
from spectui.core.cells import columns
from spectui.core.errors import SpectuiError
from spectui.core.flagcheck import check_on_host
from spectui.core.history import HistoryStore
from spectui.core.profiles import Profile, ProfileError, load_profiles
from spectui.core.session import HostTarget, Session, open_session
from spectui.core.tune import TuneError
from spectui.core.tune.plan import TuneInputs, tune_inputs
from spectui.core.tune.run import (DEFAULT_BUDGET_MIN, MAX_SETTINGS, SCHEMA, TUNE_PRESET, TuneEvent, TuneProblems,
                                   lookup_baseline, probe_for, run_tune, variant_meta)
from spectui.core.tune.sweep import VariantPrediction

__all__ = ["SCHEMA", "TUNE_PRESET", "beside_text", "checked", "inputs_from_args", "lookup_baseline",
           "predictions_text", "probe_for", "register", "run", "table_text", "variant_meta"]


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

def _fmt(v, spec: str, none: str = "-") -> str:
    return none if v is None else format(v, spec)


def table_text(header: list[str], rows: list[list[str]]) -> str:
    return "".join(line + "\n" for line in columns([header, *rows]))


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


async def checked(session: Session, profiles: list[Profile], closing: str) -> bool:
    """Each profile checked by the host's own parser, as before a switch; False (and said) on a problem."""
    for prof in profiles:
        if refuse_on_problems(await check_on_host(session, prof), closing):
            return False
    return True


def say(text: str) -> None:
    print(f"tune: {text}", file=sys.stderr)


# -- spectui tune ------------------------------------------------------------------------------

def inputs_from_args(args: argparse.Namespace, lib=None) -> TuneInputs:
    """The tune's inputs from the command line: the planner the console's tune uses gets the same ones."""
    lib = lib if lib is not None else load_profiles(args.profile_paths)
    return tune_inputs(lib, args.profile, args.budget, baseline=args.baseline, preset=args.preset,
                       concurrency=args.concurrency, repeats=args.repeat, max_settings=args.max_settings)


async def _tune(args: argparse.Namespace, target: HostTarget) -> int:
    inputs = inputs_from_args(args)
    prof = inputs.profile
    store = HistoryStore()
    session = await open_session(target)
    reconnect = Reconnector(args, target, session)
    progress: list[CompareProgress] = []

    def on_event(ev: TuneEvent) -> None:
        if ev.kind == "stage" and ev.text.startswith("measuring ") or ev.kind == "planned":
            say(ev.text)
        elif ev.kind == "compare_started":
            progress.append(CompareProgress())
        elif ev.kind == "compare" and progress:
            progress[-1](ev.compare)
        elif ev.kind == "compared" and progress:
            progress[-1].out.done()
        elif ev.kind == "problems":
            refuse_on_problems(list(ev.problems), ev.text)
        elif ev.kind == "predicted" and not args.json:
            m = ev.table.measured
            print(f"predicted from {m.source} of {prof.name} ({m.setting.label}, accept length "
                  f"{m.accept_length:.2f}) and the verify-cost probe:")
            print(predictions_text(ev.predictions))

    try:
        try:
            outcome = await run_tune(session, inputs, store=store, on_event=on_event,
                                     force=args.force, stop_after=target.kind == "demo", reconnect=reconnect,
                                     session_of=lambda: reconnect.session)
        except TuneProblems as exc:
            refuse_on_problems(exc.problems, exc.closing)
            return 1
        finally:
            for p in progress:
                p.out.done()
        report = outcome.report
        if args.json:
            print(json.dumps(report, indent=2, default=str))
            return 0
        for comp in outcome.comparisons:
            print(render_comparison(comp, "text"), end="")
        print("\npredicted beside measured (per stream):")
        print(beside_text(list(outcome.beside)))
        for note in report["notes"]:
            print(f"note: {note}")
        rec = outcome.recommendation
        print("recommendation: " + rec.summary)
        for pick in rec.picks:
            print("  " + pick.sentence())
        print(f"(tune took {report['elapsed_s'] / 60:.1f} min; comparisons "
              f"{', '.join(str(c.get('id')) for c in outcome.comparisons)} in {store.path})")
        return 0
    finally:
        await reconnect.session.close()


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
