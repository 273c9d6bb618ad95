"""End to end: the installed ``spectui demo`` in a real tmux, driven with send-keys, read with capture-pane."""

import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest
from tests.sim.simproc import start_ready
from tests.support import ports
from tests.support.ports import port_free  # noqa: F401 (the tmux tests and bench/crowded_host.py import it from here)
from tests.support.crowded import CrowdedHost
from tests.support.procs import group_pids, pid_alive

SPECTUI = shutil.which("spectui")
TMUX = shutil.which("tmux")
ACCEPT = re.compile(r"accept length (\d+\.\d\d)")
GLANCE = re.compile(r"kimi-eagle3 ready\s+accept (\d+\.\d\d)")   # the glance row (80x24, 100x30)
# the glance row wraps where its line is longer than the terminal (an accept length from the decode log line names
# that source, "(Decode log line)", and pushes L*'s words onto the next line): any run of spaces may be a line break
GLANCE_L_STAR = re.compile(r"[<≥]\s+L\*\s+\d+\.\d\d\s+(measured|predicted)"
                           r"|L\*\s+–\s+\(a\s+baseline\s+run\s+or\s+the\s+probe")
GLANCE_TOK_S = re.compile(r"tok/s\s+\d+\.\d\s+per\s+stream\s+\(\d+\s+s\)")


class Tmux:
    def __init__(self):
        self.socket = f"spectui-e2e-{os.getpid()}-{time.monotonic_ns()}"
        self.session = "demo"

    def run(self, *args, check=True) -> str:
        r = subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True, timeout=20)
        if check and r.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def start(self, command: str, size: tuple[int, int] = (160, 50)) -> None:
        self.run("new-session", "-d", "-s", self.session, "-x", str(size[0]), "-y", str(size[1]), command)
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
    """The first line below the header that names ``name`` with a state mark (the header has its own marks,
    ``● connected``, and may name a server: ``traffic paused: kimi-baseline stopped``)."""
    for line in text.splitlines()[1:]:
        if re.search(rf"\b{re.escape(name)}\b", line) and ("○" in line or "●" in line or "◐" in line or "◌" in line
                                                            or "✗" in line):
            return line
    return ""


def free_port_base(count: int = 4) -> int:
    """The first of ``count`` free ports for ``--port-base``, from a range of this test worker's own (so that
    tests in parallel never pick the same one), away from the shipped profiles' 30000 and the ports a taken
    30000 moves to."""
    return ports.free_port_base(count, start=31000, span=1000)


def numbered_row(text: str, number: int, name: str) -> str:
    """Profile row ``number`` when it shows ``name``, or the start of it where the column is narrow
    (``2 kimi-ea…``)."""
    for line in text.splitlines():
        m = re.search(rf"\b{number} ({re.escape(name[:7])}\S*)", line)
        if m and name.startswith(m.group(1).rstrip("…")) and any(mark in line for mark in "○●◐◌✗"):
            return line
    return ""


def quit_demo(tmux: Tmux) -> str:
    """Press q, wait for spectui to exit, and return the pane with its history (the exit note)."""
    tmux.keys("q")
    deadline = time.monotonic() + 60
    while not tmux.dead() and time.monotonic() < deadline:
        time.sleep(0.3)
    assert tmux.dead(), "spectui did not exit after q:\n" + tmux.screen()
    return tmux.screen(history=200)


def demo_command(tmp_path, *extra: str):
    """The state folder and the shell command that runs ``spectui demo`` on it, isolated (``extra``: more
    arguments, such as ``--port-base N``)."""
    state = tmp_path / "demo-state"
    env = {
        "SPECTUI_CONFIG_DIR": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "TERM": "xterm-256color",
        # the shipped profiles load in 3 s; a quarter of that here (docs/simulator.md), their figures unchanged
        "SPECTUI_SIM_TIME_SCALE": "0.25",
    }
    # COLUMNS/LINES from the test runner's environment would override the pane's size
    cmd = " ".join(["env", "-u", "COLUMNS", "-u", "LINES", *[f"{k}={shlex.quote(v)}" for k, v in env.items()],
                    shlex.quote(SPECTUI), "demo", "--state-dir", shlex.quote(str(state)),
                    *map(shlex.quote, extra)])
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
    state, cmd = demo_command(tmp_path, "--port-base", str(free_port_base()))
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
        assert "stopped the simulated servers (kimi-eagle3)" in quit_demo(tmux)
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
# "at": the accept length the story's speed was told at; a speculative server's speed per stream is proportional
# to its accept length (each verify step costs the same), and the demo's sampling is not seeded, so an n-gram trie
# grown from other answers accepts a little more or less from run to run: the speed is judged at the accept length
# the same screen shows, which has its own story range
STORY = {
    "kimi-baseline": {"key": "1", "tok_s": (82 * 0.85, 82 * 1.15), "accept": None, "at": None, "warm": 10},
    "kimi-eagle3": {"key": "2", "tok_s": (60 * 0.85, 60 * 1.15), "accept": (2.0 * 0.85, 2.0 * 1.15), "at": 2.0,
                    "warm": 10},
    "kimi-ngram": {"key": "4", "tok_s": (41 * 0.85, 41 * 1.15), "accept": (1.3 * 0.85, 1.5 * 1.15), "at": 1.4,
                   "warm": 50},
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


def sim_timing(state, name: str) -> dict:
    """The simulated server's own step times so far (``/sim/stats`` ``timing``: modelled and actual seconds)."""
    port = json.loads((state / "servers" / f"{name}.json").read_text())["port"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/sim/stats", timeout=10) as r:
        return json.loads(r.read())["timing"]


def lateness(before: dict, after: dict) -> float:
    """How much slower than its cost model the simulated server stepped between two readings (1: on time). On a
    machine whose cores other work takes, its steps wake late, and every speed it serves falls by as much."""
    model = after["model_s"] - before["model_s"]
    return max(1.0, (after["actual_s"] - before["actual_s"]) / model) if model > 0 else 1.0


# another user's demo-like server beside the demo: its own simulated host, two GPUs, metrics on
OTHER_SERVER = ["--model-path", "Qwen/Qwen3-8B", "--tp-size", "2", "--enable-metrics", "--sim-hardware",
                "nvlink-8gpu", "--sim-load-time", "0.3"]


@pytest.fixture
def crowded_host(tmp_path):
    """The machine the demo runs on is crowded: six processes that look like SGLang servers but never answer,
    two that answer a byte a second, and another simulated server under a streaming load spectui did not send."""
    other = start_ready(OTHER_SERVER, tmp_path, "other-server")
    try:
        with CrowdedHost(silent=6, trickling=2, load_at=("127.0.0.1", other.port), tmpdir=tmp_path / "crowd") as host:
            yield host
            assert host.foreign_stats()["tokens"] > 0, host.foreign_stats()  # the foreign load ran all along
    finally:
        other.kill_group()


@pytest.mark.timeout(480)
def test_demo_tells_the_story_live_on_screen(tmp_path, crowded_host):
    """The live panels, read off the real terminal, show the story's figures for each profile, on a machine
    crowded with servers that never answer and another server's load."""
    assert SPECTUI and TMUX, "needs the installed spectui and tmux (.ci/run installs tmux)"
    state, cmd = demo_command(tmp_path, "--port-base", str(free_port_base()))
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
            # the header turns to "traffic on ×1" once the demo traffic follows the new server (while the one
            # it sent to stops, it says "traffic paused: NAME stopped")
            tmux.wait(lambda t, n=name: "● ready" in row(t, n) and PER_STREAM.search(t) and "traffic on ×1" in t,
                      120, f"{name} ready with a per-stream speed and the demo traffic on it")
            time.sleep(story["warm"])  # let the windows fill with this server's traffic only
            before = sim_timing(state, name)
            speeds, accepts = readings(tmux, 25)
            late = lateness(before, sim_timing(state, name))
            assert len(speeds) >= 20, f"{name}: per-stream speed shown on {len(speeds)} readings"
            speed = sorted(speeds)[len(speeds) // 2]
            lo, hi = story["tok_s"]
            accept = sorted(accepts)[len(accepts) // 2] if accepts else None
            seen[name] = (speed, accept, round(late, 3))
            scale = accept / story["at"] if story["at"] and accept else 1.0
            # the story's speed at the accept length shown, less only what the crowded machine took from the
            # simulator's own steps
            assert lo * min(1.0, scale) / late <= speed <= hi * max(1.0, scale), (
                f"{name}: {speed} tok/s per stream, the story says {lo:.0f}-{hi:.0f} at accept length {story['at']} "
                f"(shown: {accept}; steps {late:.2f}x their modelled time); {seen}")
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


@pytest.mark.timeout(300)
def test_demo_shows_a_server_started_by_hand_as_external_and_a_switch_onto_its_port_stops_it(tmp_path):
    """A simulated server started by hand (its output in a file) on the port and GPUs 0-7 of kimi-baseline (the
    demo's port base): it is listed as external; selected and chosen for the demo traffic (t), the panels show its
    accept length; switching to kimi-baseline names it in the confirmation and stops it."""

    assert SPECTUI and TMUX, "needs the installed spectui and tmux (.ci/run installs tmux)"
    port = free_port_base()  # kimi-baseline's port: the lowest of the shipped profiles' ports
    state, cmd = demo_command(tmp_path, "--port-base", str(port))
    state.mkdir(parents=True)
    argv = [sys.executable, "-m", "spectui.sim.server", "--model-path", "moonshotai/Kimi-K2.5", "--port",
            str(port), "--tp-size", "8", "--enable-metrics", "--sim-hardware", "pcie-8gpu", "--sim-load-time",
            "1", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
            "lightseekorg/kimi-k2.5-eagle3", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
            "--speculative-num-draft-tokens", "4"]
    env = dict(os.environ, SPECTUI_STATE_DIR=str(state))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    tmux = Tmux()
    server = None
    try:
        tmux.start(cmd)  # the port base is free now: the demo takes it, then the hand-started server holds it
        tmux.wait(lambda t: "connected" in t and "kimi-baseline" in t and "°C" in t, 60, "the dashboard")
        with open(tmp_path / "server.log", "ab") as out:
            server = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                      start_new_session=True)
        name = f"ext-{port}"
        tmux.wait(lambda t: "connected" in t and "● ready" in row(t, name), 90, f"{name} ready")
        # the panels stay where the operator put them: a found server is watched once it is selected (F finds it),
        # and the demo traffic goes to it once the operator chooses it with t
        tmux.keys("F")
        tmux.keys(name)
        tmux.keys("Enter")
        tmux.keys("Escape")
        tmux.wait(lambda t: f"Server · {name}" in t, 30, f"{name} watched")
        tmux.keys("t")
        screen = tmux.wait(lambda t: f"Server · {name}" in t and ACCEPT.search(t), 90,
                           f"{name} watched with an accept length")
        assert "external" in row(screen, name) and "EAGLE3" in row(screen, name)
        assert f"Server · {name}" in screen and "spectui did not start it" in screen
        assert 1.0 <= float(ACCEPT.search(screen).group(1)) <= 4.0  # EAGLE3, 3 steps: at most 4 per step
        tmux.keys("1")  # kimi-baseline: its port and GPUs 0-7, both held by the hand-started server
        screen = tmux.wait(lambda t: "Switch to kimi-baseline?" in t, 20, "the confirmation")
        assert f"{name} will be stopped" in screen and f"pid {server.pid}" in screen, screen
        tmux.keys("y")
        screen = tmux.wait(lambda t: "● ready" in row(t, "kimi-baseline"), 120, "kimi-baseline ready")
        assert server.wait(timeout=30) is not None and group_pids(server.pid) == []
        assert "stopped the simulated servers (kimi-baseline)" in quit_demo(tmux)
    finally:
        tmux.kill()
        if server is not None:
            try:
                os.killpg(server.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            server.wait(timeout=10)
        kill_leftovers(state)


HOLDER = ("import socket, sys\ns = socket.socket()\ns.bind(('127.0.0.1', 30000))\ns.listen()\n"
          "print('listening', flush=True)\nsys.stdin.read()\n")


@pytest.fixture
def port_30000_taken(tmp_path):
    """Port 30000 (the shipped kimi profiles') held by another process, a plain listening socket. Tests that
    take it run one at a time across parallel workers (a lock file), so that the free ports their demos move
    to are theirs alone."""
    with open(os.path.join(tempfile.gettempdir(), "spectui-e2e-port-30000.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        try:
            if holder.stdout.readline().strip() != "listening":  # something else holds it already: taken all the same
                assert not port_free(30000), holder.stderr.read()
            assert not port_free(30000)
            yield
        finally:
            holder.kill()
            holder.wait(timeout=10)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("size", [(80, 24), (160, 50)], ids=["80x24", "160x50"])
def test_demo_moves_off_a_taken_port_30000_and_serves_a_speculative_profile(tmp_path, port_30000_taken, size):
    """With 127.0.0.1:30000 taken, `spectui demo` (no port base) moves the kimi profiles to a free port, says so
    in the header where it fits, and kimi-eagle3 starts there and shows an accept length."""
    assert SPECTUI and TMUX, "needs the installed spectui and tmux (.ci/run installs tmux)"
    state, cmd = demo_command(tmp_path)
    tmux = Tmux()
    try:
        tmux.start(cmd, size)
        tmux.wait(lambda t: numbered_row(t, 2, "kimi-eagle3") and "°C" in t, 60, "the dashboard")
        tmux.keys("2")  # kimi-eagle3: nothing runs yet, so it starts at once
        tmux.wait(lambda t: "● ready" in numbered_row(t, 2, "kimi-eagle3"), 120, "kimi-eagle3 ready")
        # where the panels do not all fit, the glance row keeps the figures on the first screen: no scrolling
        figure = ACCEPT if size[0] >= 120 else GLANCE
        screen = tmux.wait(lambda t: figure.search(t) and numbered_row(t, 2, "kimi-eagle3"), 60, "an accept length")
        record = json.loads((state / "servers" / "kimi-eagle3.json").read_text())
        assert 1.0 <= float(figure.search(screen).group(1)) <= 4.0  # EAGLE3, 3 steps: at most 4 per step
        if figure is GLANCE:
            assert GLANCE_L_STAR.search(screen) and GLANCE_TOK_S.search(screen), screen  # L* (or why none) and tok/s
        assert record["state"] == "ready" and record["port"] != 30000
        if size[0] >= 160:
            assert f"demo: port 30000 taken, using {record['port']}" in screen.splitlines()[0], screen
        assert "port 30000" not in "\n".join(l for l in screen.splitlines() if "in use" in l)  # no refusal shown
        assert "stopped the simulated servers (kimi-eagle3)" in quit_demo(tmux)
    finally:
        tmux.kill()
        kill_leftovers(state)
