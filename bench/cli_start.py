"""CPU that a ``spectui`` command costs to start and finish, against anchors measured in the same run.

Each command is run ``--runs`` times, the commands interleaved so that all see the same machine; the
figure for a command is the median CPU (user + system, this process's children's) of its runs. The
anchors are a bare interpreter (``python3 -c pass``) and one that imports what every console needs
(``python3 -c "import asyncio, textual"``); each command is printed as a ratio of both.

    python bench/cli_start.py [--runs 7] [--json]

The commands run with private config, data, cache, demo-state and profile folders (one simulated
profile), so the figures do not depend on what the user has saved.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ANCHORS = {
    "python3 -c pass": ["-c", "pass"],
    "python3 -c 'import asyncio, textual'": ["-c", "import asyncio, textual"],
}
COMMANDS = {
    "spectui --help": ["-m", "spectui", "--help"],
    "spectui profiles list": ["-m", "spectui", "profiles", "list"],
    "spectui servers list --demo": ["-m", "spectui", "servers", "list", "--demo"],
}
PROFILE = """\
name: tiny
model: sim/tiny
gpus: []
args:
  device: cpu
"""


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cpu_of(args: list[str], env: dict[str, str]) -> float:
    before = children_cpu()
    r = subprocess.run([sys.executable, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, env=env, cwd=ROOT, timeout=120)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed (exit {r.returncode}): {r.stderr.decode(errors='replace')[-400:]}")
    return children_cpu() - before


def private_env(base: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for var in ("SPECTUI_CONFIG_DIR", "SPECTUI_DATA_DIR", "SPECTUI_CACHE_DIR", "SPECTUI_DEMO_STATE",
                "SPECTUI_PROFILES_PATH"):
        (base / var).mkdir()
        env[var] = str(base / var)
    (base / "SPECTUI_PROFILES_PATH" / "tiny.yaml").write_text(PROFILE)
    return env


def measure(runs: int) -> dict[str, float]:
    every = {**ANCHORS, **COMMANDS}
    samples: dict[str, list[float]] = {name: [] for name in every}
    with tempfile.TemporaryDirectory() as tmp:
        env = private_env(Path(tmp))
        for args in every.values():  # one unmeasured run each: compiled files and page cache warm
            cpu_of(args, env)
        for _ in range(runs):
            for name, args in every.items():
                samples[name].append(cpu_of(args, env))
    return {name: statistics.median(values) for name, values in samples.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="runs of each command; the median counts (default 7)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    cpu = measure(args.runs)
    bare, console = (cpu[name] for name in ANCHORS)
    ratios = {name: {"cpu_s": cpu[name], "vs_bare": cpu[name] / bare, "vs_asyncio_textual": cpu[name] / console}
              for name in COMMANDS}
    if args.json:
        print(json.dumps({"runs": args.runs, "anchors_cpu_s": {n: cpu[n] for n in ANCHORS}, "commands": ratios}))
        return 0
    print(f"median CPU (user + system) of {args.runs} runs each")
    for name in ANCHORS:
        print(f"  {name:<40} {cpu[name] * 1000:6.0f} ms  (anchor)")
    for name, r in ratios.items():
        print(f"  {name:<40} {r['cpu_s'] * 1000:6.0f} ms  {r['vs_bare']:5.1f}x bare python, "
              f"{r['vs_asyncio_textual']:4.2f}x asyncio+textual")
    return 0


if __name__ == "__main__":
    sys.exit(main())
