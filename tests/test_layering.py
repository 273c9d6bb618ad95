"""The walls of the design, checked with import-linter (contracts in pyproject.toml)."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_hold():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    r = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout and "KEPT" in r.stdout


def test_agent_modules_are_python38_syntax():
    """The agent runs on the host's Python, 3.8 or newer: compile each module for 3.8's grammar."""
    import ast

    for f in sorted((ROOT / "spectui" / "agent").glob("*.py")):
        ast.parse(f.read_text(), filename=str(f), feature_version=(3, 8))
