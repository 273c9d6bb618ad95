"""End to end: the installed ``spectui demo`` in a real tmux, driven with send-keys, read with capture-pane."""

import json
import os
import re
import shlex
import shutil
import subprocess
import time

import pytest
from tests.support.procs import pid_alive

SPECTUI = shutil.which("spectui")
TMUX = shutil.which("tmux")
ACCEPT = re.compile(r"accept length (\d+\.\d\d)")


class Tmux:
    def __init__(self):
        self.socket = f"spectui-e2e-{os.getpid()}-{time.monotonic_ns()}"
        self.session = "demo"

    def run(self, *args, check=True) -> str:
        r = subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True, timeout=20)
        if check and r.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def start(self, command: str) -> None:
        self.run("new-session", "-d", "-s", self.session, "-x", "160", "-y", "50", command)
        self.run("set-option", "-t", self.session, "remain-on-exit", "on")

    def screen(self, history: int = 0) -> str:
        extra = ["-S", str(-history)] if history else []
        return self.run("capture-pane", "-p", *extra, "-t", self.session)

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.session, *keys)

    def dead(self) -> bool:
        out = self.run("list-panes", "-t", self.session, "-F", "#{pane_dead}", check=False)
        return out.strip() == "1"

    def wait(self, cond, timeout: float, what: str) -> str:
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.screen()
            if cond(text):
                return text
            time.sleep(0.3)
        raise AssertionError(f"timed out waiting for {what}; the screen was:\n{text}")

    def kill(self) -> None:
        subprocess.run([TMUX, "-L", self.socket, "kill-server"], capture_output=True, timeout=20)


def row(text: str, name: str) -> str:
    for line in text.splitlines():
        if re.search(rf"\b{re.escape(name)}\b", line) and ("○" in line or "●" in line or "◐" in line or "◌" in line
                                                            or "✗" in line):
            return line
    return ""


@pytest.mark.timeout(240)
def test_demo_switches_profiles_in_tmux_and_quitting_stops_the_servers(tmp_path):
    assert SPECTUI and TMUX, "needs the installed spectui and tmux (.ci/run installs tmux)"
    state = tmp_path / "demo-state"
    env = {
        "SPECTUI_CONFIG_DIR": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "TERM": "xterm-256color",
    }
    # COLUMNS/LINES from the test runner's environment would override the pane's size
    cmd = " ".join(["env", "-u", "COLUMNS", "-u", "LINES", *[f"{k}={shlex.quote(v)}" for k, v in env.items()],
                    shlex.quote(SPECTUI), "demo", "--state-dir", shlex.quote(str(state))])
    tmux = Tmux()
    try:
        tmux.start(cmd)
        tmux.wait(lambda t: "connected" in t and "kimi-eagle3" in t and "°C" in t, 60, "the dashboard")
        tmux.keys("1")  # nothing runs yet: starts kimi-baseline at once
        tmux.wait(lambda t: "● ready" in row(t, "kimi-baseline"), 90, "kimi-baseline ready")
        tmux.keys("2")  # kimi-baseline holds the GPUs: asks first, showing the command
        screen = tmux.wait(lambda t: "Switch to kimi-eagle3?" in t, 20, "the confirmation")
        assert "--speculative-algorithm EAGLE3" in screen and "This stops kimi-baseline" in screen
        tmux.keys("y")
        screen = tmux.wait(lambda t: "● ready" in row(t, "kimi-eagle3") and ACCEPT.search(t), 120,
                           "kimi-eagle3 ready with an accept length")
        assert "○ stopped" in row(screen, "kimi-baseline")
        value = float(ACCEPT.search(screen).group(1))
        assert 1.0 <= value <= 4.0  # EAGLE3, 3 steps: at most num_steps + 1 tokens per verify step
        assert "traffic on" in screen
        records = {p.stem: json.loads(p.read_text()) for p in (state / "servers").glob("*.json")}
        pids = [r["pid"] for r in records.values() if r.get("pid")]
        assert records["kimi-eagle3"]["state"] == "ready"
        tmux.keys("q")
        deadline = time.monotonic() + 60
        while not tmux.dead() and time.monotonic() < deadline:
            time.sleep(0.3)
        assert tmux.dead(), "spectui did not exit after q:\n" + tmux.screen()
        assert "stopped the simulated servers (kimi-eagle3)" in tmux.screen(history=200)
        records = {p.stem: json.loads(p.read_text()) for p in (state / "servers").glob("*.json")}
        assert all(r["state"] == "stopped" for r in records.values()), records
        assert not any(pid_alive(p) for p in pids)
    finally:
        tmux.kill()
        for p in (state / "servers").glob("*.json") if state.exists() else []:
            try:
                os.killpg(int(json.loads(p.read_text())["pgid"]), 9)
            except (ProcessLookupError, KeyError, ValueError, TypeError, PermissionError):
                pass
