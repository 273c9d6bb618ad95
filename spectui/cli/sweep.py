"""``spectui bench PROFILE --sweep FLAG=V1,V2 [--concurrency 1,8]``: variants compared with the baseline.

The variants (``spectui.core.tune.variants``) are checked by the host's own parser as any profile
is before a switch, then compared with the baseline exactly as ``--profiles`` compares (switch,
warm up, repeat, noise marks, history, following the run on after a dropped connection), each
row keeping the variant's name. Before running, the table the prediction model gives from the
last run of PROFILE in the history; after, predicted beside measured.
"""

from __future__ import annotations

import argparse
import json
import sys

from spectui.cli.hostopts import demo_profiles
from spectui.cli.benchshared import CompareProgress, Reconnector, preset_for
from spectui.cli.tune import (TUNE_PRESET, beside_text, checked, lookup_baseline, predictions_text,
                              probe_for, variant_meta)
from spectui.core.bench import BenchError, render_comparison, run_comparison
from spectui.core.bench.runs import host_label
from spectui.core.history import HistoryStore
from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget, open_session
from spectui.core.tune import build_variants, parse_sweep
from spectui.core.tune.sweep import history_measured, predict_variants, predicted_vs_measured


async def sweep(args: argparse.Namespace, target: HostTarget) -> int:
    lib = demo_profiles(args, load_profiles(args.profile_paths))
    prof = lib.get(args.sweep_profile)
    variants = build_variants(prof, parse_sweep(args.sweep))
    base = lookup_baseline(lib, prof, args.baseline)
    preset = preset_for(args.preset or TUNE_PRESET, args.concurrency)
    if args.repeat is not None and args.repeat < 1:
        raise BenchError("--repeat must be at least 1")
    preset = preset.with_repeats(args.repeat)
    for v in variants:
        for problem in v.problems:
            print(f"note: {v.display_name}: {problem}", file=sys.stderr)
    store = HistoryStore()
    stop_after = args.stop_after if args.stop_after is not None else target.kind == "demo"
    session = await open_session(target)
    reconnect = Reconnector(args, target, session)
    try:
        if not await checked(session, [base, *(v.profile for v in variants)],
                             "nothing was benchmarked: fix the sweep first."):
            return 1
        named = [(v.display_name, v.profile) for v in variants]
        measured = history_measured(store.runs(), prof.name, host=host_label(session), baseline=base.name)
        preds, note = (), None
        if measured is None:
            note = (f"no finished run of {prof.name} on this host in the history, so nothing to predict from: "
                    f"compare it once (spectui bench --profiles {base.name},{prof.name} ...)")
        else:
            probe, note = await probe_for(session, prof)
            if probe is not None:
                preds = predict_variants(measured, probe, named, preset.concurrency)
        if args.format == "text":
            if preds:
                print(f"predicted from {measured.source} of {prof.name} ({measured.setting.label}, accept length "
                      f"{measured.accept_length:.2f}) and the verify-cost probe:")
                print(predictions_text(preds))
            else:
                print(f"note: {note}")
        progress = CompareProgress()
        try:
            comp = await run_comparison(session, [base, *(v.profile for v in variants)], preset, baseline=base.name,
                                        engine=args.engine, store=store, on_event=progress, force=args.force,
                                        stop_after=stop_after, allow_overlap=args.allow_overlap,
                                        reconnect=reconnect, variants=variant_meta(list(variants)))
        finally:
            progress.out.done()
        beside = predicted_vs_measured(comp, preds)
        if args.format == "json":
            print(json.dumps({"schema": "spectui.sweep/1", "comparison": comp,
                              "predictions": [p.to_dict() for p in preds], "predicted_vs_measured": beside,
                              "note": note}, indent=2, default=str))
        else:
            print(render_comparison(comp, args.format), end="")
            if beside and args.format == "text":
                print("\npredicted beside measured (per stream):")
                print(beside_text(beside), end="")
            if args.format == "text":
                print(f"\nsaved as {comp.get('id')} in {store.path} (spectui history show {comp.get('id')})")
        return 1 if any(row.get("failed") for row in comp["profiles"]) else 0
    finally:
        await reconnect.session.close()
