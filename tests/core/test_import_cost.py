"""Commands that open no SSH connection start without loading asyncssh (a fifth of a command's start-up CPU).

Each check runs a fresh interpreter, since this test process may have loaded asyncssh already; the
positive control shows that the same check sees asyncssh once an SSH transport is made.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "name: tiny\nmodel: sim/tiny\ngpus: []\nargs:\n  device: cpu\n"
LOADED_SSH = "print(sorted(m for m in sys.modules if m.split('.')[0] == 'asyncssh')[:3])"


def python(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = dict(env or os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def imported_modules(importtime_stderr: str) -> set[str]:
    """The modules that ``python -X importtime`` reports as imported (the last column of its lines)."""
    return {line.rsplit("|", 1)[1].strip() for line in importtime_stderr.splitlines()
            if line.startswith("import time:") and line.count("|") == 2}


def test_importing_the_cli_does_not_load_asyncssh():
    r = python(["-c", f"import sys, spectui.cli.main; {LOADED_SSH}"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", f"importing spectui.cli.main loaded {r.stdout.strip()}"


def test_making_an_ssh_transport_loads_asyncssh():
    code = ("import sys\nfrom spectui.core.session import HostTarget\n"
            f"{LOADED_SSH}\n"
            "t = HostTarget(kind='ssh', destination='user@gpu-box:2222').make_transport()\n"
            "print(type(t).__name__, t.destination)\n"
            "print('asyncssh' in sys.modules)")
    r = python(["-c", code])
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:3] == ["[]", "SshTransport user@gpu-box:2222", "True"], r.stdout


def test_profiles_list_runs_without_asyncssh(tmp_path):
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "tiny.yaml").write_text(PROFILE)
    env = dict(os.environ, SPECTUI_PROFILES_PATH=str(profiles), SPECTUI_CONFIG_DIR=str(tmp_path / "config"),
               SPECTUI_DATA_DIR=str(tmp_path / "data"), SPECTUI_CACHE_DIR=str(tmp_path / "cache"))
    r = python(["-X", "importtime", "-m", "spectui", "profiles", "list"], env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "tiny" in r.stdout, r.stdout
    modules = imported_modules(r.stderr)
    assert "spectui.cli.main" in modules and "spectui.core.profiles" in modules, sorted(modules)[:20]
    loaded = sorted(m for m in modules if m.split(".")[0] == "asyncssh")
    assert not loaded, f"spectui profiles list loaded {loaded[:3]}"
