"""End to end: the installed ``spectui demo`` in a real tmux, driven with send-keys, read with capture-pane."""

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest
from tests.support.procs import group_pids, pid_alive

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


def demo_command(tmp_path):
    """The state folder and the shell command that runs ``spectui demo`` on it, isolated."""
    state = tmp_path / "demo-state"
    env = {
        "SPECTUI_CONFIG_DIR": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "TERM": "xterm-256color",
    }
    # COLUMNS/LINES from the test runner's environment would override the pane's size
    cmd = " ".join(["env", "-u", "COLUMNS", "-u", "LINES", *[f"{k}={shlex.quote(v)}" for k, v in env.items()],
                    shlex.quote(SPECTUI), "demo", "--state-dir", shlex.quote(str(state))])
    return state, cmd


def kill_leftovers(state):
    for p in (state / "servers").glob("*.json") if state.exists() else []:
        try:
            os.killpg(int(json.loads(p.read_text())["pgid"]), 9)
        except (ProcessLookupError, KeyError, ValueError, TypeError, PermissionError):
            pass


@pytest.mark.timeout(240)
def test_demo_switches_profiles_in_tmux_and_quitting_stops_the_servers(tmp_path):
    assert SPECTUI and TMUX, "needs the installed spectui and tmux (.ci/run installs tmux)"
    state, cmd = demo_command(tmp_path)
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
        kill_leftovers(state)


PER_STREAM = re.compile(r"per stream\s+(\d+\.\d) tok/s")
# The story (Kimi-K2.5, TP 8, eight PCIe GPUs, one request at a time), with 15% either side
# "warm": seconds of this server's traffic before reading (n-gram's trie fills from its own
# answers: the story's figures hold after about a minute of traffic)
STORY = {
    "kimi-baseline": {"key": "1", "tok_s": (82 * 0.85, 82 * 1.15), "accept": None, "warm": 10},
    "kimi-eagle3": {"key": "2", "tok_s": (60 * 0.85, 60 * 1.15), "accept": (2.0 * 0.85, 2.0 * 1.15), "warm": 10},
    "kimi-ngram": {"key": "4", "tok_s": (41 * 0.85, 41 * 1.15), "accept": (1.3 * 0.85, 1.5 * 1.15), "warm": 35},
}


def readings(tmux: Tmux, seconds: float) -> tuple[list[float], list[float]]:
    """Per-stream tok/s and accept length as the screen shows them, read every half second."""
    speeds, accepts = [], []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        screen = tmux.screen()
        m = PER_STREAM.search(screen)
        if m:
            speeds.append(float(m.group(1)))
        a = ACCEPT.search(screen)
        if a:
            accepts.append(float(a.group(1)))
        time.sleep(0.5)
    return speeds, accepts


@pytest.mark.timeout(480)
def test_demo_tells_the_story_live_on_screen(tmp_path):
    """The live panels, read off the real terminal, show the story's figures for each profile."""
    assert SPECTUI and TMUX, "needs the installed spectui and tmux (.ci/run installs tmux)"
    state, cmd = demo_command(tmp_path)
    tmux = Tmux()
    seen = {}
    try:
        tmux.start(cmd)
        tmux.wait(lambda t: "connected" in t and "kimi-ngram" in t and "°C" in t, 60, "the dashboard")
        for name, story in STORY.items():
            tmux.keys(story["key"])
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                screen = tmux.screen()
                if f"Switch to {name}?" in screen:
                    tmux.keys("y")
                    break
                if "● ready" in row(screen, name) or "◐" in row(screen, name):
                    break
                time.sleep(0.3)
            screen = tmux.wait(lambda t, n=name: "● ready" in row(t, n) and PER_STREAM.search(t), 120,
                               f"{name} ready with a per-stream speed")
            assert "traffic on ×1" in screen
            time.sleep(story["warm"])  # let the windows fill with this server's traffic only
            speeds, accepts = readings(tmux, 25)
            assert len(speeds) >= 20, f"{name}: per-stream speed shown on {len(speeds)} readings"
            speed = sorted(speeds)[len(speeds) // 2]
            lo, hi = story["tok_s"]
            seen[name] = (speed, sorted(accepts)[len(accepts) // 2] if accepts else None)
            assert lo <= speed <= hi, f"{name}: {speed} tok/s per stream, the story says {lo:.0f}-{hi:.0f}; {seen}"
            assert min(speeds) > 0, f"{name}: a zero per-stream speed while requests ran: {speeds}"
            if story["accept"] is not None:
                assert len(accepts) >= 20, f"{name}: accept length shown on {len(accepts)} readings"
                alo, ahi = story["accept"]
                assert alo <= seen[name][1] <= ahi, f"{name}: accept length {seen[name][1]}, story {alo}-{ahi}; {seen}"
        tmux.keys("q")
        deadline = time.monotonic() + 60
        while not tmux.dead() and time.monotonic() < deadline:
            time.sleep(0.3)
    finally:
        tmux.kill()
        kill_leftovers(state)


DEMO_PORT = 30000  # the shipped kimi profiles' port


def port_free(port: int) -> bool:
    """Whether a server could listen on ``port`` now (as servers do, connections in TIME_WAIT do not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@pytest.mark.timeout(300)
def test_demo_shows_a_server_started_by_hand_as_external_and_a_switch_onto_its_port_stops_it(tmp_path):
    """A simulated server already holds port 30000 and GPUs 0-7 when the demo starts (started by hand, its
    output in a file): the screen shows it as external with an accept length; switching to kimi-baseline
    (port 30000) names it in the confirmation and stops it."""

    assert SPECTUI and TMUX, "needs the installed spectui and tmux (.ci/run installs tmux)"
    assert port_free(DEMO_PORT), (f"port {DEMO_PORT} is in use on this machine; this test needs it free (the demo's "
                                  "kimi profiles use it): stop what listens there and run it again")
    state, cmd = demo_command(tmp_path)
    state.mkdir(parents=True)
    argv = [sys.executable, "-m", "spectui.sim.server", "--model-path", "moonshotai/Kimi-K2.5", "--port",
            str(DEMO_PORT), "--tp-size", "8", "--enable-metrics", "--sim-hardware", "pcie-8gpu", "--sim-load-time",
            "1", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
            "lightseekorg/kimi-k2.5-eagle3", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
            "--speculative-num-draft-tokens", "4"]
    env = dict(os.environ, SPECTUI_STATE_DIR=str(state))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    with open(tmp_path / "server.log", "ab") as out:
        server = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True)
    tmux = Tmux()
    try:
        tmux.start(cmd)
        name = f"ext-{DEMO_PORT}"
        screen = tmux.wait(lambda t: "connected" in t and "● ready" in row(t, name) and ACCEPT.search(t), 90,
                           f"{name} ready with an accept length")
        assert "external" in row(screen, name) and "EAGLE3" in row(screen, name)
        assert f"Server · {name}" in screen and "spectui did not start it" in screen
        assert 1.0 <= float(ACCEPT.search(screen).group(1)) <= 4.0  # EAGLE3, 3 steps: at most 4 per step
        tmux.keys("1")  # kimi-baseline: port 30000 and GPUs 0-7, both held by the hand-started server
        screen = tmux.wait(lambda t: "Switch to kimi-baseline?" in t, 20, "the confirmation")
        assert f"{name} will be stopped" in screen and f"pid {server.pid}" in screen, screen
        tmux.keys("y")
        screen = tmux.wait(lambda t: "● ready" in row(t, "kimi-baseline"), 120, "kimi-baseline ready")
        assert server.wait(timeout=30) is not None and group_pids(server.pid) == []
        tmux.keys("q")
        deadline = time.monotonic() + 60
        while not tmux.dead() and time.monotonic() < deadline:
            time.sleep(0.3)
        assert "stopped the simulated servers (kimi-baseline)" in tmux.screen(history=200)
    finally:
        tmux.kill()
        try:
            os.killpg(server.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        server.wait(timeout=10)
        kill_leftovers(state)
