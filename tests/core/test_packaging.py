"""The wheel as a user installs it: built from this tree (version from a git tag), installed with
``pip install --user`` and with ``--prefix``, and the shipped profiles and presets found from there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TAG = "9.8.7"
SHIPPED_PROFILES = sorted(p.stem for p in (ROOT / "spectui" / "data" / "profiles").glob("*.yaml"))
SHIPPED_PRESETS = sorted(p.stem for p in (ROOT / "spectui" / "data" / "presets").glob("*.yaml"))


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
                   cwd=cwd, check=True, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of this tree's files (tracked and new, as git lists them), committed and tagged v9.8.7
    in a scratch repository."""
    src = tmp_path_factory.mktemp("src")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True, timeout=60).stdout.decode().split("\0")
    for rel in filter(None, listed):
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    _git(src, "init", "-q")
    _git(src, "add", "-A")
    _git(src, "commit", "-q", "-m", "snapshot")
    _git(src, "tag", f"v{TAG}")
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out),
                        str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    [built] = out.glob("spectui-*.whl")
    return built


def test_the_wheel_carries_the_data_and_the_tagged_version(wheel):
    assert wheel.name.startswith(f"spectui-{TAG}-")
    names = zipfile.ZipFile(wheel).namelist()
    assert sorted(Path(n).stem for n in names if n.startswith("spectui/data/profiles/")) == SHIPPED_PROFILES
    assert sorted(Path(n).stem for n in names if n.startswith("spectui/data/presets/")) == SHIPPED_PRESETS
    assert not [n for n in names if ".data/data/" in n]  # nothing installed outside the package


def _spectui(bin_dir: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(bin_dir / "spectui"), *args], capture_output=True, text=True, timeout=120, env=env,
                          cwd=env["HOME"])


def _check_install(bin_dir: Path, site: Path, env: dict) -> None:
    version = _spectui(bin_dir, env, "--version")
    assert version.stdout.splitlines()[0].split() == ["spectui", TAG], version.stderr
    assert "shipped data:" in version.stdout and "profiles" in version.stdout, version.stdout
    listed = _spectui(bin_dir, env, "profiles", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)["profiles"]
    assert sorted(r["name"] for r in rows) == SHIPPED_PROFILES
    assert all(Path(r["source"]).is_relative_to(site) for r in rows), [r["source"] for r in rows]
    presets = _spectui(bin_dir, env, "bench", "--list-presets", "--json")
    assert presets.returncode == 0, presets.stderr
    rows = json.loads(presets.stdout)["presets"]
    assert sorted(r["name"] for r in rows) == SHIPPED_PRESETS
    assert all(Path(r["source"]).is_relative_to(site) for r in rows)


def _env(home: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "SPECTUI_"))}
    return {**env, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), **extra}


def _install(*args: str, env: dict) -> None:
    # --ignore-installed: pip never uninstalls the spectui this interpreter already has (with --prefix it would)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
                        "--no-warn-script-location", *args], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr


def test_installed_with_user(wheel, tmp_path):
    """``pip install --user``: the package lands in the user's site folder, away from ``sys.prefix``."""
    env = _env(tmp_path, PYTHONUSERBASE=str(tmp_path / "userbase"))
    _install("--user", str(wheel), env=env)
    site = Path(subprocess.run([sys.executable, "-c", "import site; print(site.getusersitepackages())"], env=env,
                               capture_output=True, text=True, check=True).stdout.strip())
    assert (site / "spectui" / "data" / "profiles").is_dir()
    _check_install(tmp_path / "userbase" / "bin", site, env)


def test_installed_with_prefix(wheel, tmp_path):
    """``pip install --prefix DIR``: found through ``PYTHONPATH``, its data inside the package."""
    prefix = tmp_path / "prefix"
    _install("--prefix", str(prefix), str(wheel), env=_env(tmp_path))
    purelib = sysconfig.get_path("purelib", vars={"base": str(prefix), "platbase": str(prefix)})
    site = Path(purelib)
    assert (site / "spectui" / "data" / "presets").is_dir()
    _check_install(prefix / "bin", site, _env(tmp_path, PYTHONPATH=str(site)))
