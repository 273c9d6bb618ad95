#!/usr/bin/env python3
"""The lint, ruff run once on the whole tree: the rules of pyproject.toml's [tool.ruff.lint] must find nothing, and
functions over the complexity limit (C901, [tool.ruff.lint.mccabe]) may not grow in number past the ceiling
recorded in pyproject.toml ([tool.spectui.lint] c901-ceiling). Then vermin holds the agent to Python 3.8's
standard library.

    python3 scripts/lint.py          (from the repository root; exit status 1 when something is found)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATHS = ("spectui", "tests", "scripts", "bench")
RATCHETED = "C901"


def tool(name: str) -> str:
    exe = shutil.which(name) or str(Path(sys.executable).parent / name)
    if not Path(exe).exists():
        sys.exit(f"scripts/lint.py: {name} is not installed: pip install -e '.[lint]'")
    return exe


def ceiling(pyproject: Path = ROOT / "pyproject.toml") -> int:
    """How many C901 findings the tree may hold (pyproject.toml's [tool.spectui.lint] c901-ceiling)."""
    return int(tomllib.loads(pyproject.read_text())["tool"]["spectui"]["lint"]["c901-ceiling"])


def judge(findings: list[dict], most: int) -> tuple[list[str], list[str]]:
    """(failures, notes) for ruff's JSON findings: any finding of the selected rules fails, and so do more C901
    findings than ``most``; fewer say the ceiling can come down."""
    def line(f: dict) -> str:
        return "%s:%s:%s: %s %s" % (f["filename"], f["location"]["row"], f["location"]["column"], f["code"],
                                    f["message"])
    failures = [line(f) for f in findings if f.get("code") != RATCHETED]
    complex_ = [f for f in findings if f.get("code") == RATCHETED]
    notes = []
    if len(complex_) > most:
        failures += [line(f) for f in complex_]
        failures.append("%d functions are too complex (C901), more than the ceiling of %d in pyproject.toml "
                        "[tool.spectui.lint]: split the new or grown ones" % (len(complex_), most))
    elif len(complex_) < most:
        notes.append("%d functions are too complex (C901), under the ceiling of %d: lower c901-ceiling in "
                     "pyproject.toml to %d" % (len(complex_), most, len(complex_)))
    return failures, notes


def ruff(paths=PATHS, cwd: Path = ROOT) -> list[dict]:
    r = subprocess.run([tool("ruff"), "check", "--extend-select", RATCHETED, "--output-format", "json",
                        "--exit-zero", *paths], cwd=cwd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit("scripts/lint.py: ruff failed: " + (r.stderr.strip() or r.stdout.strip()))
    return json.loads(r.stdout or "[]")


def main() -> int:
    failures, notes = judge(ruff(), ceiling())
    for text in notes + failures:
        print(text, file=sys.stderr)
    r = subprocess.run([tool("vermin"), "-q", "-t=3.8-", "--no-tips", "--violations", "spectui/agent"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        failures.append("vermin: the agent uses more than Python 3.8's standard library")
        print(r.stdout + r.stderr, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
