"""A simulated SGLang server started by hand, as an operator starts one outside spectui:
``python -m spectui.sim.server ... > server.log 2>&1 &`` in its own session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.procs import group_pids
from tests.support.sshd import free_port


# Starts the command in a session of its own with its output in a file, prints its pid and exits, so
# the server is not the test's child (as one started with nohup from a shell that has since ended).
_DETACH = ("import subprocess, sys\n"
           "with open(sys.argv[1], 'ab') as out:\n"
           "    p = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,\n"
           "                         start_new_session=True)\n"
           "print(p.pid)\n")


@dataclass
class HandStarted:
    pid: int
    port: int
    argv: list[str]
    log: Path

    @property
    def name(self) -> str:
        return f"ext-{self.port}"

    def alive(self) -> bool:
        return bool(group_pids(self.pid))


def wait_ready(port: int, pid: int, log: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not group_pids(pid):
            raise AssertionError(f"the hand-started server exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"the hand-started server was not ready in {timeout} s: {log.read_text()[-2000:]}")


@contextmanager
def hand_started_server(state_dir: Path, log_dir: Path, *, port: int | None = None, extra: tuple = (),
                        metrics: bool = True, tp: int = 2, visible_gpus: str | None = None):
    """A ready simulated server in a session of its own, its output in ``log_dir/server.log``
    (``visible_gpus``: its CUDA_VISIBLE_DEVICES); its process group is killed on exit whatever happened."""
    port = port or free_port()
    argv = [sys.executable, "-m", "spectui.sim.server", "--model-path", "sim/handmade", "--port", str(port),
            "--tp-size", str(tp), "--sim-load-time", "0.3", *(["--enable-metrics"] if metrics else []), *extra]
    log = log_dir / "server.log"
    env = dict(os.environ, SPECTUI_STATE_DIR=str(state_dir))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    if visible_gpus is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible_gpus
    started = subprocess.run([sys.executable, "-c", _DETACH, str(log), *argv], env=env, capture_output=True,
                             text=True, timeout=30, check=True)
    pid = int(started.stdout.strip())
    try:
        wait_ready(port, pid, log)
        yield HandStarted(pid=pid, port=port, argv=argv, log=log)
    finally:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
