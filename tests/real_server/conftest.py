"""The real SGLang 0.5.23 server on this CPU, driven by spectui: one server for the tier, started from a profile
with ``spectui servers start PROFILE --host local --python VENV_PYTHON`` and stopped the same way at the end.

Every test of the tier runs on one pytest worker (the ``real_server`` group): two real servers at once would load
a 2-core machine past what the timings in these tests allow. A test that needs a server of its own (another
profile, one started by hand) stops the shared one's traffic, never the shared one.
"""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List

import pytest

from tests.support import real_sglang as rs
from tests.support.procs import pid_alive
from tests.support.sshd import free_port

ROOT = Path(__file__).resolve().parents[2]
NAME = "real-cpu"


def pytest_collection_modifyitems(config, items):
    """A real server's start on a busy 2-core machine takes up to minutes: the tier's tests (the first of them
    starts the shared server) get 10 minutes each instead of the suite's default."""
    for item in items:
        if "/tests/real_server/" in str(item.fspath).replace(os.sep, "/") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(600))
    # the server started by hand: found while fresh, then compared with the simulator and stopped, one after the
    # other (it is a second real server beside the shared one only for as long as those take); the tests that
    # compare timings last, after ``quiet`` (below)
    order = {"test_found_server.py": 1, "test_sim_vs_real.py": 2, "test_live_frames.py": 3,
             "test_bench_vs_bench_serving.py": 4}
    items.sort(key=lambda item: order.get(os.path.basename(str(item.fspath)), 0))


#: scripts/test runs this tier beside the rest of the suite. The tests that compare timings wait until the file named
#: by ``SPECTUI_TIER_QUIET_FILE`` exists (the script writes it once its other runs have ended) or, without that file,
#: until the process ``SPECTUI_TIER_BESIDE_PID`` has ended (the script itself: a script that died writes nothing), so
#: that they share the machine with nothing of the suite's.
QUIET_ENV = "SPECTUI_TIER_QUIET_FILE"
BESIDE_ENV = "SPECTUI_TIER_BESIDE_PID"


def wait_until_quiet() -> None:
    """Until the suite's other runs have ended (see :data:`QUIET_ENV`); at once when the tier runs alone. Then
    the tier's own processes leave the low priority they ran at beside the suite (:func:`unnice`)."""
    flag = os.environ.get(QUIET_ENV)
    pid = int(os.environ.get(BESIDE_ENV) or 0)
    while pid > 0 and pid_alive(pid) and not (flag and os.path.exists(flag)):
        time.sleep(0.5)
    if pid > 0:
        unnice()


def unnice() -> None:
    """The tier's own processes back to the normal priority (nice 0) once the suite's other runs have ended: this
    test thread (the clients and sessions it starts next inherit it) and the servers the tier started (their
    records' process groups, in the tier's state folder). Niced, they would get a tenth of a core against any
    other program on the machine, and the timing comparisons would follow that program's bursts. Nothing else
    is touched; without the right to lower a priority (not root) they stay as they are."""
    try:
        if os.getpriority(os.PRIO_PROCESS, 0) > 0:
            os.setpriority(os.PRIO_PROCESS, 0, 0)
    except OSError:
        return
    if DRIVER_PID:
        try:
            os.setpriority(os.PRIO_PROCESS, DRIVER_PID, 0)
        except OSError:
            pass  # it ended
    for rec in TIER_STATE.glob("servers/*.json") if TIER_STATE else ():
        try:
            pgid = int(json.loads(rec.read_text()).get("pgid") or 0)
            if pgid > 1 and os.getpriority(os.PRIO_PGRP, pgid) > 0:
                os.setpriority(os.PRIO_PGRP, pgid, 0)  # every thread of every process in the group
        except (OSError, ValueError, AttributeError):
            pass  # ended meanwhile, or a record being written


@contextlib.contextmanager
def normal_priority():
    """The processes started inside run at the normal priority (nice 0), then this thread's returns. For the tier's
    one-shot commands that import SGLang (and torch) and end: niced beside a main pass that keeps both cores busy, such
    an import gets a few percent of a core and takes minutes; the servers the tier keeps running stay niced."""
    before = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        if before > 0:
            os.setpriority(os.PRIO_PROCESS, 0, 0)
    except OSError:
        before = 0  # not allowed to raise a priority (not root): it stays as it is
    try:
        yield
    finally:
        if before > 0:
            os.setpriority(os.PRIO_PROCESS, 0, before)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """A test that needs the machine quiet waits before its time limit starts (pytest-timeout's starts inside this
    wrapper): the wait is as long as the rest of the suite, and the limit is the test's own."""
    if "quiet" in getattr(item, "fixturenames", ()):
        wait_until_quiet()
    yield


@pytest.fixture(scope="session")
def quiet():
    """Asked for by the tests that compare timings: they start once the suite's other runs have ended."""
    wait_until_quiet()


#: The tier's host state folder (its servers' records), once the ``tier`` fixture made it.
TIER_STATE: Path | None = None
#: The process of the tier's ``BenchServing``, once started.
DRIVER_PID = 0


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
    bench_serving: "BenchServing | None" = None  # SGLang's own benchmark, one interpreter for the tier

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
    global TIER_STATE
    TIER_STATE = root / "state"
    return Tier(python=rs.venv_python(), model=rs.tiny_model(), root=root, profiles=root / "profiles",
                state=root / "state", home=root / "home")


@pytest.fixture(scope="session")
def real_server(tier):
    """The tier's shared real server, ``real-cpu``, started by spectui from its profile; stopped by spectui at the
    end of the session (a stop ends its whole process tree, then frees the port: tests/real_server/test_switch.py)."""
    port = free_port()
    tier.profile(NAME, port)
    t0 = time.monotonic()
    try:
        r = tier.cli("servers", "start", NAME, "--json", timeout=rs.READY_TIMEOUT_S + 60)
        assert r.returncode == 0, "the real server did not start: " + r.stdout[-3000:] + r.stderr[-3000:]
        tier.started = dict(json.loads(r.stdout), wall_s=time.monotonic() - t0, port=port)
        tier.bench_serving = BenchServing(tier.python, tier.root)
        yield tier
    finally:  # also when its start failed or timed out: nothing of the tier is left running
        if tier.bench_serving is not None:
            tier.bench_serving.close()
        tier.cli("servers", "stop", "--yes", timeout=180)


#: ``python -m sglang.bench_serving`` run again and again in one interpreter: its own ``cli_main`` (the module's
#: ``__main__``, sglang 0.5.23 wheel, sglang/bench_serving.py:23-24) on each argv read from stdin, so that the
#: torch import (a minute on a busy 2-core machine) is paid once and the two tools' runs follow each other closely.
DRIVER = """
import json, sys, warnings
warnings.simplefilter("ignore")
from sglang.bench_serving import cli_main
for line in sys.stdin:
    sys.argv = ["sglang.bench_serving"] + json.loads(line)
    try:
        cli_main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except Exception as exc:
        print("bench_serving failed: %r" % (exc,), flush=True)
        code = 1
    print("@@done %d" % code, flush=True)
"""


class BenchServing:
    """SGLang's benchmark in the real-SGLang venv, one run per :meth:`run`."""

    def __init__(self, python: str, cwd):
        """Started with the tier's server and left to import (niced, beside the suite) while the tier's other tests
        run: its first :meth:`run` comes after the quiet, which then holds only the runs themselves."""
        self.proc = subprocess.Popen([python, "-u", "-c", DRIVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, cwd=str(cwd),
                                     env=dict(os.environ, **rs.CPU_ENV))
        global DRIVER_PID
        DRIVER_PID = self.proc.pid

    def run(self, argv: list[str]) -> str:
        """Run it with ``argv``; its output. Raises AssertionError with that output when it fails."""
        self.proc.stdin.write(json.dumps(argv) + "\n")
        self.proc.stdin.flush()
        out = []
        for line in self.proc.stdout:
            if line.startswith("@@done "):
                assert line.split()[1] == "0", "".join(out)[-3000:]
                return "".join(out)
            out.append(line)
        raise AssertionError("bench_serving's interpreter ended: " + "".join(out)[-3000:])

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)



@dataclass
class HandStarted:
    """A real server started by hand (``nohup ... &``), and what its ``/health`` answered from its start until the
    first 200, read every 0.2 s by a thread started with it."""

    server: rs.RealServer
    loading: List = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)
    watcher: threading.Thread = None

    def watch(self) -> None:
        deadline = time.monotonic() + rs.READY_TIMEOUT_S
        while time.monotonic() < deadline and self.server.proc.poll() is None:
            code = rs.status(self.server.port, "/health", timeout=5.0)
            if code == 200:
                self.ready.set()
                return
            self.loading.append(code)
            time.sleep(0.2)

    def wait_loaded(self) -> List:
        """The codes ``/health`` gave while the server loaded; fails with its log's end if it never got ready."""
        self.watcher.join(rs.READY_TIMEOUT_S + 30)
        assert self.ready.is_set(), "the server started by hand was not ready: " + rs.tail(self.server.log)
        return self.loading


@pytest.fixture(scope="session")
def hand_started(tier, tmp_path_factory):
    server = rs.RealServer(tier.model, free_port(), tmp_path_factory.mktemp("hand-started") / "server.log")
    started = HandStarted(server)
    started.watcher = threading.Thread(target=started.watch, daemon=True)
    started.watcher.start()
    try:
        yield started
    finally:
        server.stop()
    assert not rs.group_alive(server.proc.pid), "the server started by hand outlived its stop"
