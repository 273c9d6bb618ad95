"""spectui installed as a tool, as a user does: ``pipx install`` and ``uv tool install`` of the wheel built
from this tree, each into its own fresh folders and HOME, its dependencies resolved from the package index
(pip's and uv's caches keep a second run short). ``spectui --version`` names the version and the shipped data
inside the tool's environment; ``spectui demo --help`` loads a command."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.core.test_packaging import TAG  # the version of the wheel fixture (tests/install/conftest.py)

pytestmark = pytest.mark.tool_install
ROOT = Path(__file__).resolve().parents[2]
NO_INDEX = "{tool} could not install spectui's dependencies from the package index; this test needs the index"


@pytest.fixture(scope="session")
def tools(tmp_path_factory) -> Path:
    """A venv holding pipx and uv, installed from the package index."""
    venv = tmp_path_factory.mktemp("tools")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    r = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "pipx", "uv"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, f"pipx and uv could not be installed from the package index: {r.stderr[-1500:]}"
    return venv / "bin"


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    """A fresh HOME; pip's and uv's caches stay the user's, so a second run downloads nothing."""
    real_home = Path(os.path.expanduser("~"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "SPECTUI_", "VIRTUAL_ENV"))}
    env.update(HOME=str(tmp / "home"), PIP_CACHE_DIR=os.environ.get("PIP_CACHE_DIR", str(real_home / ".cache" / "pip")),
               UV_CACHE_DIR=os.environ.get("UV_CACHE_DIR", str(real_home / ".cache" / "uv")), **extra)
    (tmp / "home").mkdir(exist_ok=True)
    return env


def _run_spectui(bin_dir: Path, env: dict[str, str]) -> None:
    version = subprocess.run([str(bin_dir / "spectui"), "--version"], capture_output=True, text=True, env=env,
                             cwd=env["HOME"], timeout=120)
    assert version.returncode == 0, version.stderr
    first, data = version.stdout.splitlines()[:2]
    assert first == f"spectui {TAG}", version.stdout
    folder = Path(data.split(": ", 1)[1].split(" (", 1)[0])
    assert (folder / "profiles").is_dir() and (folder / "grafana").is_dir(), version.stdout
    assert not folder.is_relative_to(ROOT), f"the tool runs this source tree, not its install: {folder}"
    demo = subprocess.run([str(bin_dir / "spectui"), "demo", "--help"], capture_output=True, text=True, env=env,
                          cwd=env["HOME"], timeout=120)
    assert demo.returncode == 0 and demo.stdout.startswith("usage: spectui demo"), demo.stderr


def _install(tool: str, cmd: list[str], env: dict[str, str]) -> None:
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    print(f"{tool} install: {time.monotonic() - start:.1f} s")
    if r.returncode != 0:
        pytest.fail(f"{NO_INDEX.format(tool=tool)}: {(r.stderr or r.stdout)[-1500:]}")


def test_pipx_install(wheel, tools, tmp_path):
    env = _env(tmp_path, PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(tmp_path / "bin"))
    _install("pipx", [str(tools / "pipx"), "install", "--python", sys.executable, str(wheel)], env)
    _run_spectui(tmp_path / "bin", env)


def test_uv_tool_install(wheel, tools, tmp_path):
    env = _env(tmp_path, UV_TOOL_DIR=str(tmp_path / "uv-tools"), UV_TOOL_BIN_DIR=str(tmp_path / "bin"))
    _install("uv", [str(tools / "uv"), "tool", "install", "--python", sys.executable, str(wheel)], env)
    _run_spectui(tmp_path / "bin", env)
