"""Commands that open no SSH connection start without loading asyncssh (a fifth of a command's start-up CPU),
and commands that show no console without Textual: ``spectui --help`` loads no command's module, and
``spectui profiles list`` only its own.

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


def own_folders(tmp_path: Path) -> dict[str, str]:
    """An environment whose profiles (one: ``tiny``), config, data and cache are this test's own."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "tiny.yaml").write_text(PROFILE)
    return dict(os.environ, SPECTUI_PROFILES_PATH=str(profiles), SPECTUI_CONFIG_DIR=str(tmp_path / "config"),
                SPECTUI_DATA_DIR=str(tmp_path / "data"), SPECTUI_CACHE_DIR=str(tmp_path / "cache"))


def loaded(modules: set[str], *packages: str) -> list[str]:
    """The modules of ``packages`` (top-level names, or dotted prefixes) among ``modules``."""
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def test_profiles_list_runs_without_asyncssh(tmp_path):
    env = own_folders(tmp_path)
    r = python(["-X", "importtime", "-m", "spectui", "profiles", "list"], env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "tiny" in r.stdout, r.stdout
    modules = imported_modules(r.stderr)
    assert "spectui.cli.main" in modules and "spectui.core.profiles" in modules, sorted(modules)[:20]
    loaded = sorted(m for m in modules if m.split(".")[0] == "asyncssh")
    assert not loaded, f"spectui profiles list loaded {loaded[:3]}"


def test_help_lists_every_command_and_loads_no_command(tmp_path):
    r = python(["-X", "importtime", "-m", "spectui", "--help"], own_folders(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    modules = imported_modules(r.stderr)
    heavy = loaded(modules, "asyncssh", "textual", "rich", "msgspec", "yaml", "asyncio", "sqlite3")
    assert not heavy, f"spectui --help loaded {heavy[:5]}"
    commands = [m for m in loaded(modules, "spectui.cli") if m not in ("spectui.cli", "spectui.cli.main",
                                                                        "spectui.cli.output")]
    assert not commands, f"spectui --help loaded the command modules {commands}"
    assert "spectui.cli.main" in modules, sorted(modules)[:20]
    from spectui.cli.main import COMMANDS

    listed = " ".join(r.stdout.split())
    for name, (_, help_line) in COMMANDS.items():
        assert f"{name} {help_line}" in listed, f"spectui --help does not list {name}: {r.stdout}"


def test_profiles_list_loads_no_other_command_nor_the_console(tmp_path):
    r = python(["-X", "importtime", "-m", "spectui", "profiles", "list"], own_folders(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "tiny" in r.stdout, r.stdout
    modules = imported_modules(r.stderr)
    heavy = loaded(modules, "asyncssh", "textual", "rich", "sqlite3", "spectui.ui", "spectui.core.session",
                   "spectui.core.history", "spectui.core.bench")
    assert not heavy, f"spectui profiles list loaded {heavy[:5]}"
    others = loaded(modules, *(f"spectui.cli.{m}" for m in ("status", "servers", "source", "logs", "probe", "console",
                                                            "bench", "tune", "history", "recording")))
    assert not others, f"spectui profiles list loaded other commands' modules {others}"
    assert "spectui.cli.profiles" in modules, sorted(modules)[:20]


def test_a_command_help_shows_the_options_its_module_registers(tmp_path):
    r = python(["-m", "spectui", "demo", "--help"], own_folders(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("usage: spectui demo"), r.stdout[:200]
    for option in ("--port-base", "--debug", "--log-file"):
        assert option in r.stdout, f"spectui demo --help lacks {option}: {r.stdout}"


def test_the_help_lines_are_those_the_command_modules_register():
    import argparse
    import importlib

    from spectui.cli.main import COMMAND_MODULES, COMMANDS

    registered = {}
    for module in COMMAND_MODULES:
        scratch = argparse.ArgumentParser().add_subparsers()
        importlib.import_module("spectui.cli." + module).register(scratch)
        registered.update({a.dest: (module, a.help) for a in scratch._choices_actions})
    assert registered == COMMANDS
