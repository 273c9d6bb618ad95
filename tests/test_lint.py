"""The lint scripts/test runs, held in the suite too: ruff's rules (pyproject.toml) on the whole tree,
and the agent on Python 3.8's standard library (vermin)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def tool(name: str) -> str:
    exe = shutil.which(name) or str(Path(sys.executable).parent / name)
    if not Path(exe).exists():
        pytest.fail(f"{name} is not installed: pip install -e '.[lint]'", pytrace=False)
    return exe


def test_ruff_finds_nothing():
    r = subprocess.run([tool("ruff"), "check", "--output-format", "concise", "spectui", "tests", "scripts", "bench"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_holds_the_agent_to_python38_syntax(tmp_path):
    """The per-folder target: syntax newer than 3.8 is an error in the agent, not elsewhere."""
    (tmp_path / "spectui" / "agent").mkdir(parents=True)
    (tmp_path / "spectui" / "core").mkdir(parents=True)
    code = "def f(x):\n    match x:\n        case 1:\n            return 1\n    return 0\n"
    (tmp_path / "spectui" / "agent" / "new.py").write_text(code)
    (tmp_path / "spectui" / "core" / "new.py").write_text(code)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    r = subprocess.run([tool("ruff"), "check", "--output-format", "concise", "spectui"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert "spectui/agent/new.py" in r.stdout and "Python 3.8" in r.stdout, r.stdout
    assert "spectui/core/new.py" not in r.stdout


def test_vermin_finds_nothing_newer_than_python38_in_the_agent():
    r = subprocess.run([tool("vermin"), "-q", "-t=3.8-", "--no-tips", "--violations", "spectui/agent"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
