"""How well `spectui tune` predicts, and what it saves, on the simulated host.

For a chain drafter (EAGLE-3, `nvlink-eagle3`) and n-gram (`kimi-ngram`), at concurrency 1 and 8:

1. `spectui tune PROFILE --demo` runs (it measures the profile and its baseline, predicts every
   nearby setting, measures the few most promising); its wall time is timed;
2. the anchor, measured in the same run: `spectui bench PROFILE --demo --sweep ...` runs the
   settings listed below against the baseline, with the table predicted beforehand from the
   profile's run in the history; its time per profile, times every setting tune predicted (and
   the baseline), is what running them all would take.

Printed per swept setting and concurrency: predicted / measured tok/s per stream; then tune's
time against running every setting it predicted.

    python bench/tune_accuracy.py [--only chain|ngram] [--budget 8]

Floors: predicted within 10% of measured for the chain, 20% for n-gram (every setting, both
concurrencies). Exit status 1 when one misses.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spectui.cli.main import main  # noqa: E402

CASES = {
    # name: (profile, sweep, floor)
    "chain": ("nvlink-eagle3", ["num-steps=1,2,4,5"], 0.10),
    "ngram": ("kimi-ngram", ["num-draft-tokens=2,4,12,16"], 0.20),
}


def cli_json(*argv: str) -> tuple[dict, float]:
    """Run ``spectui ARGV --json`` in this process; its JSON and wall time."""
    out = io.StringIO()
    t0 = time.monotonic()
    with contextlib.redirect_stdout(out):
        code = main(list(argv) + ["--json"])
    elapsed = time.monotonic() - t0
    if code != 0:
        raise SystemExit(f"spectui {' '.join(argv)} failed ({code}):\n{out.getvalue()}")
    return json.loads(out.getvalue()), elapsed


def one(name: str, budget: float) -> bool:
    profile, sweep, floor = CASES[name]
    with tempfile.TemporaryDirectory() as data:
        os.environ["SPECTUI_DATA_DIR"] = data
        tune, tune_s = cli_json("tune", profile, "--demo", "--budget", str(budget))
        flags = [w for s in sweep for w in ("--sweep", s)]
        swept, sweep_s = cli_json("bench", profile, "--demo", *flags)
    print(f"\n{name}: {profile}, measured from {tune['measured_from']}; swept {' '.join(sweep)} (floor {floor:.0%})")
    print(f"{'SETTING':<42} {'C':>2} {'PRED TOK/S':>10} {'MEASURED':>9} {'PRED/MEAS':>9}")
    ok = True
    for row in swept["predicted_vs_measured"]:
        ratio = row["ratio"]
        miss = ratio is None or abs(ratio - 1.0) > floor
        ok = ok and not miss
        print(f"{row['name']:<42} {row['concurrency']:>2} {row['predicted_tok_s'] or 0:>10.1f} "
              f"{row['measured_tok_s'] or 0:>9.1f} {ratio or 0:>9.2f}{'  MISS' if miss else ''}")
    swept_n = len(swept["comparison"]["profiles"])  # the variants and the baseline
    per_setting = sweep_s / swept_n
    candidates = {json.dumps(r["setting"], sort_keys=True) for r in tune["predictions"]["rows"]}
    every = per_setting * (len(candidates) + 1)  # every candidate tune predicted, and the baseline
    print(f"tune took {tune_s:.0f} s (comparisons {', '.join(map(str, tune['comparisons']))}); the sweep of "
          f"{swept_n - 1} settings took {sweep_s:.0f} s ({per_setting:.0f} s a profile), so running all "
          f"{len(candidates)} settings tune predicted would take about {every:.0f} s: tune took {tune_s / every:.2f}x")
    print("tune recommends: " + tune["recommendation"]["summary"])
    return ok


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(CASES))
    parser.add_argument("--budget", type=float, default=8.0, help="tune's budget in minutes")
    args = parser.parse_args()
    names = [args.only] if args.only else list(CASES)
    results = [one(n, args.budget) for n in names]
    print("\nfloors " + ("met" if all(results) else "MISSED"))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(run())
