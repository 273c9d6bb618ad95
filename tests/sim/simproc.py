"""A simulated server run as a subprocess: free port, own state folder, own process group."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pid_alive(pid: int) -> bool:
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class SimProcess:
    def __init__(self, args: List[str], state: Path, log: Path, env: Optional[dict] = None):
        self.port = free_port()
        self.state = state
        self.log_path = log
        argv = [sys.executable, "-m", "spectui.sim.server", "--host", "127.0.0.1", "--port", str(self.port),
                "--sim-state", str(state)] + list(args)
        full_env = dict(os.environ)
        full_env["PYTHONPATH"] = str(ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
        full_env.pop("CUDA_VISIBLE_DEVICES", None)
        # /health answers at once, as SGLang's does with this setting (by default it generates
        # a token and answers after about a second); tests of that behaviour set it to true
        full_env["SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION"] = "false"
        full_env.update(env or {})
        self._log = open(log, "wb")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=str(ROOT), env=full_env, start_new_session=True)
        self.pgid = self.proc.pid

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d" % self.port

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def get(self, path: str, timeout: float = 10.0):
        """(status, body bytes) of a GET; HTTP errors are returned, not raised."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def get_json(self, path: str):
        status, body = self.get(path)
        assert status == 200, (path, status, body[:300])
        return json.loads(body)

    def post(self, path: str, body, timeout: float = 60.0):
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def post_json(self, path: str, body, timeout: float = 60.0):
        status, raw = self.post(path, body, timeout)
        assert status == 200, (path, status, raw[:300])
        return json.loads(raw)

    def stream(self, path: str, body, timeout: float = 60.0):
        """The SSE ``data:`` payloads of a streaming POST, in order, with arrival times."""
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        events = []
        with urllib.request.urlopen(req, timeout=timeout) as r:
            assert r.status == 200
            assert r.headers.get("Content-Type", "").startswith("text/event-stream")
            for raw in r:
                line = raw.decode().strip()
                if line.startswith("data: "):
                    events.append((time.monotonic(), line[6:]))
        return events

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("server exited with %s:\n%s" % (self.proc.returncode, self.log()[-3000:]))
            try:  # a generating /health answers after about 1 s (see SimProcess)
                if self.get("/health", timeout=5.0)[0] == 200:
                    return
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.05)
        raise AssertionError("server not ready after %ss:\n%s" % (timeout, self.log()[-3000:]))

    def rank_pids(self) -> List[int]:
        pids = []
        for f in (self.state / "sim" / "procs").glob("*.json"):
            try:
                c = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
            pids.append(int(c["pid"]))
        return pids

    def group_pids(self) -> List[int]:
        out = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % d) as fh:
                    rest = fh.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if rest[0] != "Z" and int(rest[2]) == self.pgid:
                out.append(int(d))
        return out

    def kill_group(self) -> None:
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        deadline = time.monotonic() + 5
        while self.group_pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        self._log.close()


def start_ready(args: List[str], workdir: Path, name: str, env: Optional[dict] = None, timeout: float = 30.0) -> SimProcess:
    """Start a server in ``workdir/name-state`` and wait until /health answers 200."""
    state = workdir / (name + "-state")
    state.mkdir(parents=True, exist_ok=True)
    sp = SimProcess(list(args), state, workdir / (name + ".log"), env)
    try:
        sp.wait_ready(timeout)
    except BaseException:
        sp.kill_group()
        raise
    return sp


def claims(state):
    out = {}
    for f in (state / "sim" / "procs").glob("*.json"):
        try:
            c = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        out[int(c["pid"])] = c
    return out


def live_claims(state):
    """Claims a GPU reader would still count: live process, or dead but within the release delay."""
    host = json.loads((state / "sim" / "host.json").read_text())
    now = time.time()
    return {pid: c for pid, c in claims(state).items()
            if pid_alive(pid) or now < c["heartbeat"] + host["release_delay_s"]}


def wait_for(pred, timeout=10.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def start_all(names, args_of, tmp_path, env_of=lambda name: None, timeout=60):
    """One ready simulated server per name (``args_of(name)`` its flags, ``env_of(name)`` extra
    environment), started at once; ``{name: server}``. If any fails, the others are killed and the
    first failure is raised."""
    import threading

    started, errors = {}, []

    def one(name):
        try:
            started[name] = start_ready(args_of(name), tmp_path, name, env=env_of(name), timeout=timeout)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        for sp in started.values():
            sp.kill_group()
        raise errors[0]
    return started


def at_once(names, args_of, tmp_path, work, join_s=120.0):
    """Start one simulated server per name at once (:func:`start_all`), run ``work(server)`` on
    each in its own thread, kill them all; ``{name: result}``. A failure in any of them is raised
    as an AssertionError listing every one."""
    import threading

    servers = start_all(names, args_of, tmp_path)
    results, errors = {}, []

    def run(name):
        try:
            results[name] = work(servers[name])
        except BaseException as exc:  # reported below
            errors.append((name, exc))

    threads = [threading.Thread(target=run, args=(n,)) for n in names]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(join_s)
    finally:
        for sp in servers.values():
            sp.kill_group()
    assert not errors, errors
    return results
