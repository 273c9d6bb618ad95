"""CPU that a simulated TP rank costs to start, as the simulator starts it, against the anchor: the same
rank started by a plain ``python -m`` (site scan, ``.pth`` files, the installed metadata).

Each rank is started with its stdin closed and ``--orphan-timeout 0``: it claims its virtual GPU,
sees its leader gone and exits, so a start is measured whole (interpreter, imports, claim file).
The CPU is this process's children's (user + system), over ``--ranks`` starts each way, interleaved
so that both see the same machine.

    python bench/sim_start_cost.py [--ranks 40] [--json]

Exit status 0 when the simulator's way costs no more than the anchor, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spectui.sim.ranks import RANK_PYTHON_FLAGS, rank_argv, rank_env  # noqa: E402


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def start_one(argv: list, env) -> float:
    before = children_cpu()
    subprocess.run(argv, stdin=subprocess.DEVNULL, env=env, check=True, timeout=60)
    return children_cpu() - before


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=40, help="rank starts measured each way (default 40)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as state:
        ours = rank_argv(state, 0, 0, "sglang::scheduler", 0.0)
        plain = [a for a in ours if a not in RANK_PYTHON_FLAGS]
        sim_cpu = anchor_cpu = 0.0
        for _ in range(args.ranks):
            anchor_cpu += start_one(plain, None)
            sim_cpu += start_one(ours, rank_env())
    per_sim, per_anchor = sim_cpu / args.ranks, anchor_cpu / args.ranks
    ratio = per_sim / per_anchor if per_anchor else float("nan")
    ok = per_sim <= per_anchor
    if args.json:
        print(json.dumps({"ranks": args.ranks, "sim_cpu_s": per_sim, "anchor_cpu_s": per_anchor, "ratio": ratio,
                          "pass": ok}))
    else:
        print(f"rank start, as the simulator starts it: {per_sim * 1000:.0f} ms CPU")
        print(f"rank start, plain python -m (anchor):   {per_anchor * 1000:.0f} ms CPU")
        print(f"ratio: {ratio:.2f} of the anchor; a TP-8 server's ranks save "
              f"{8 * (per_anchor - per_sim) * 1000:.0f} ms CPU a start")
        print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
