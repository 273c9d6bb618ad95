"""``spectui completion bash`` run in a real bash: the script is sourced, the completion function called
with COMP_WORDS/COMP_CWORD/COMP_LINE/COMP_POINT set as bash sets them, and COMPREPLY read back. The
``spectui`` the script calls is this source tree (a shim on PATH)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spectui.core.bench.result import RunResult
from spectui.core.history import HistoryStore

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "name: {name}\nmodel: sim/tiny\ngpus: []\nargs:\n  device: cpu\n"


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    """This test's own PATH shim, profiles, config, data and HOME."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "spectui"
    shim.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m spectui \"$@\"\n")
    shim.chmod(0o755)
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    for name in ("alpha-eagle", "beta-plain"):
        (profiles / f"{name}.yaml").write_text(PROFILE.format(name=name))
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    return dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=str(ROOT),
                HOME=str(home), SPECTUI_PROFILES_PATH=str(profiles), SPECTUI_CONFIG_DIR=str(tmp_path / "config"),
                SPECTUI_DATA_DIR=str(tmp_path / "data"), SPECTUI_CACHE_DIR=str(tmp_path / "cache"))


def script(shell: str, env: dict[str, str]) -> str:
    r = subprocess.run([sys.executable, "-m", "spectui", "completion", shell], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() and not r.stderr, r.stderr
    return r.stdout


def bash_complete(line: str, env: dict[str, str]) -> list[str]:
    """COMPREPLY for the command line ``line`` (the cursor at its end), as bash's TAB computes it."""
    words = line.split(" ")
    program = (f"source {shlex.quote(str(env['_SCRIPT']))}\n"
               f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})\n"
               f"COMP_CWORD={len(words) - 1}\nCOMP_LINE={shlex.quote(line)}\nCOMP_POINT={len(line)}\n"
               "_spectui_complete\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return [w for w in r.stdout.splitlines() if w]


@pytest.fixture
def bash(env, tmp_path):
    path = tmp_path / "spectui.bash"
    path.write_text(script("bash", env))
    env["_SCRIPT"] = str(path)
    return lambda line: bash_complete(line, env)


def test_subcommands_after_the_program(bash):
    got = bash("spectui ")
    for command in ("status", "servers", "bench", "demo", "config", "completion", "history"):
        assert command in got, got
    assert "__complete" not in got, got


def test_subcommands_by_prefix(bash):
    assert bash("spectui se") == ["servers"]


def test_flags_of_a_command(bash):
    got = bash("spectui bench --")
    assert "--demo" in got and "--host" in got and "--baseline" in got and "--profiles" in got, got
    assert all(flag.startswith("--") for flag in got), got
    assert "--debug" in got, got  # the log options are accepted after any command


def test_choices_of_a_flag(bash):
    assert bash("spectui status --gpu-source ") == ["auto", "none", "nvidia-smi", "nvml", "sim"]
    assert bash("spectui completion ") == ["bash", "fish", "zsh"]


def test_profile_names_after_servers_start(bash):
    assert bash("spectui servers start ") == ["alpha-eagle", "beta-plain"]
    assert bash("spectui servers start be") == ["beta-plain"]


def test_host_aliases_from_the_ssh_config_given_with_F(bash, tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text("Host gpu-a gpu-b\n  HostName 10.0.0.1\nHost *.internal !x\n  User me\n"
                      f"Include {tmp_path / 'more'}\n")
    (tmp_path / "more").write_text("Host login-node\n")
    assert bash(f"spectui connect -F {config} ") == ["gpu-a", "gpu-b", "login-node"]
    assert bash(f"spectui status -F {config} -H ") == ["gpu-a", "gpu-b", "login-node"]
    assert bash(f"spectui servers list -F {config} -H gpu-") == ["gpu-a", "gpu-b"]


def test_host_aliases_from_the_default_ssh_config_and_the_settings(bash, env):
    (Path(env["HOME"]) / ".ssh" / "config").write_text("Host home-box\n")
    Path(env["SPECTUI_CONFIG_DIR"]).mkdir()
    (Path(env["SPECTUI_CONFIG_DIR"]) / "config.yaml").write_text("default_host: settings-box\n")
    assert bash("spectui connect ") == ["home-box", "settings-box"]


def test_history_ids(bash, env, monkeypatch):
    monkeypatch.setenv("SPECTUI_DATA_DIR", env["SPECTUI_DATA_DIR"])
    store = HistoryStore()
    ids = [str(store.save_run(RunResult(run_id=f"r{i}", host="h1", state="done", profile="p", started_at=1.0 + i)))
           for i in range(3)]
    assert bash("spectui history show ") == sorted(ids)
    assert sorted(bash("spectui history export ")) == sorted(ids)


def test_no_candidates_and_no_noise_for_free_text(bash):
    assert bash("spectui bench --concurrency ") == []


@pytest.mark.parametrize("shell,check", [("zsh", ["zsh", "-n"]), ("fish", ["fish", "-n"])])
def test_zsh_and_fish_scripts_parse(shell, check, env, tmp_path):
    text = script(shell, env)
    assert "spectui __complete " + shell in text
    if shutil.which(check[0]) is None:
        pytest.fail(f"{check[0]} is not installed here: install it (apt-get install -y zsh fish) to check its script")
    path = tmp_path / f"spectui.{shell}"
    path.write_text(text)
    r = subprocess.run([*check, str(path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
