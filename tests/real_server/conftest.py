"""The real SGLang 0.5.23 server on this CPU, driven by spectui: one server for the tier, started from a profile
with ``spectui servers start PROFILE --host local --python VENV_PYTHON`` and stopped the same way at the end.

Every test of the tier runs on one pytest worker (the ``real_server`` group): two real servers at once would load
a 2-core machine past what the timings in these tests allow. A test that needs a server of its own (another
profile, one started by hand) stops the shared one's traffic, never the shared one.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List

import pytest

from tests.support import real_sglang as rs
from tests.support.sshd import free_port

ROOT = Path(__file__).resolve().parents[2]
NAME = "real-cpu"


def pytest_collection_modifyitems(config, items):
    """A real server's start on a busy 2-core machine takes up to minutes: the tier's tests (the first of them
    starts the shared server) get 10 minutes each instead of the suite's default."""
    for item in items:
        if "/tests/real_server/" in str(item.fspath).replace(os.sep, "/") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(600))



@dataclass
class Tier:
    """What the tier's tests share: the venv, the model, a profiles folder, a host state folder, a home."""

    python: str
    model: str
    root: Path
    profiles: Path
    state: Path
    home: Path
    started: dict = field(default_factory=dict)  # the shared server's ``servers start --json`` reply

    def env(self) -> dict:
        env = dict(os.environ, HOME=str(self.home), SPECTUI_PROFILES_PATH=str(self.profiles),
                   SPECTUI_CONFIG_DIR=str(self.home / "config"), SPECTUI_DATA_DIR=str(self.home / "data"),
                   XDG_CACHE_HOME=str(self.home / "cache"), PYTHONPATH=str(ROOT))
        return env

    def host(self) -> List[str]:
        return ["--host", "local", "--python", self.python, "--state-dir", str(self.state)]

    def cli(self, *argv: str, timeout: float = 300, host: bool = True) -> subprocess.CompletedProcess:
        """``spectui ARGV`` on this machine as the tier's host (``--host local --python VENV --state-dir``)."""
        return subprocess.run([sys.executable, "-m", "spectui", *argv, *(self.host() if host else [])],
                              capture_output=True, text=True, timeout=timeout, env=self.env(), cwd=str(ROOT))

    def cli_json(self, *argv: str, timeout: float = 300) -> dict:
        r = self.cli(*argv, "--json", timeout=timeout)
        assert r.returncode == 0, r.stdout + r.stderr
        return json.loads(r.stdout)

    def record(self, name: str = NAME) -> dict:
        return json.loads((self.state / "servers" / (name + ".json")).read_text())

    def profile(self, name: str, port: int, **extra) -> Path:
        return rs.write_profile(self.profiles, name, port, self.model, **extra)


@pytest.fixture(scope="session")
def tier(tmp_path_factory) -> Tier:
    root = tmp_path_factory.mktemp("real-server")
    for sub in ("profiles", "state", "home"):
        (root / sub).mkdir()
    return Tier(python=rs.venv_python(), model=rs.tiny_model(), root=root, profiles=root / "profiles",
                state=root / "state", home=root / "home")


@pytest.fixture(scope="session")
def real_server(tier):
    """The tier's shared real server, ``real-cpu``, started by spectui from its profile; stopped by spectui at the
    end of the session (its whole process tree, then the port free: tests/real_server/test_lifecycle.py)."""
    port = free_port()
    tier.profile(NAME, port)
    t0 = time.monotonic()
    try:
        r = tier.cli("servers", "start", NAME, "--json", timeout=rs.READY_TIMEOUT_S + 60)
        assert r.returncode == 0, "the real server did not start: " + r.stdout[-3000:] + r.stderr[-3000:]
        tier.started = dict(json.loads(r.stdout), wall_s=time.monotonic() - t0, port=port)
        yield tier
    finally:  # also when its start failed or timed out: nothing of the tier is left running
        tier.cli("servers", "stop", "--yes", timeout=180)
