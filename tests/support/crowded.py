"""A crowded GPU host on loopback: processes that look like SGLang servers to spectui's discovery but
misbehave, and a load generator that is not spectui's.

Each stand-in runs ``<python> -m sglang.launch_server --model-path stub-model --port P --host 127.0.0.1
--stub-kind KIND`` from a tiny ``sglang`` package written to a temporary folder on PYTHONPATH, so its
command line is the one discovery reads (spectui/agent/servers/discover.py: ``-m sglang.launch_server``
run by a process named ``python...``). Its listening socket is bound here on a port the kernel chose and
handed to it open (no other process can take the port in between); it listens under its own pid, as a
real server does. Kinds:

* ``silent``: accepts TCP connections and never answers;
* ``trickling``: answers any HTTP request with a valid-looking 200 response, one byte a second, forever;
* ``foreign_user``: a plausible server answering ``/server_info``, ``/health`` and ``/metrics`` with 200,
  run as user ``nobody`` (``setpriv``; only as root, otherwise left out, with the reason in ``.skipped``);
* ``answering``: the same plausible server, run as this user.

The load generator sends streaming ``POST /generate`` requests (SGLang's native API) back to back from
threads of this process, with ``http.client`` only, and counts the requests and tokens it got.

Every stand-in runs in a process group of its own, created here; :meth:`CrowdedHost.stop` (also on
an exception in the ``with`` block, and at interpreter exit) kills those groups and nothing else. A
stand-in also exits by itself within a second when the process that started it is gone.
"""

from __future__ import annotations

import atexit
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from tests.support.procs import group_pids, wait_gone

KINDS = ("silent", "trickling", "foreign_user", "answering")
FD_VARIABLE = "CROWDED_LISTEN_FD"
PARENT_VARIABLE = "CROWDED_PARENT_PID"

STUB_MAIN = r'''"""A stand-in for SGLang's launcher that misbehaves on purpose (see tests/support/crowded.py)."""
import json
import os
import selectors
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def flag(name, default=None):
    argv = sys.argv[1:]
    for i, word in enumerate(argv):
        if word == name and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return default


PARENT = int(os.environ["CROWDED_PARENT_PID"])


def orphaned():
    return os.getppid() != PARENT


def serve(sock, on_data=None, on_close=None, tick=None):
    """Accept connections forever (until orphaned); ``on_data(conn)`` after each read that got bytes,
    ``on_close(conn)`` when a peer goes, ``tick()`` about once a second (it returns the next wait)."""
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ)
    wait = 1.0
    while not orphaned():
        for key, _ in sel.select(wait):
            s = key.fileobj
            if s is sock:
                conn, _ = sock.accept()
                sel.register(conn, selectors.EVENT_READ)
                continue
            try:
                data = s.recv(65536)  # read and dropped
            except OSError:
                data = b""
            if data and on_data:
                on_data(s)
            elif not data:
                sel.unregister(s)
                if on_close:
                    on_close(s)
                s.close()
        wait = tick() if tick else 1.0


def silent(sock):
    serve(sock)  # the peer never gets a byte back


HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n"
        b'{"model_path": "stub-model", "padding": "')


def trickle_byte(offset):
    return HEAD[offset:offset + 1] if offset < len(HEAD) else b"x"


def trickling(sock):
    sent = {}  # connection -> bytes sent so far, from its first request on
    due = [time.monotonic() + 1.0]

    def tick():
        if time.monotonic() >= due[0]:
            due[0] = time.monotonic() + 1.0  # late ticks are not made up: never faster than a byte a second
            for s in list(sent):
                try:
                    s.send(trickle_byte(sent[s]))
                    sent[s] += 1
                except OSError:
                    del sent[s]
                    try:
                        s.shutdown(socket.SHUT_RDWR)  # read as a close by serve()
                    except OSError:
                        pass
        return max(0.0, due[0] - time.monotonic())

    serve(sock, on_data=lambda s: sent.setdefault(s, 0), on_close=lambda s: sent.pop(s, None), tick=tick)


def foreign(sock, port):
    info = {"model_path": "stub-model", "served_model_name": "stub-model", "host": "127.0.0.1", "port": port,
            "tp_size": 1, "dp_size": 1, "speculative_algorithm": None, "version": "0.5.23",
            "internal_states": [{"last_gen_throughput": 0.0, "avg_spec_accept_length": None}]}
    metrics = ("# HELP sglang:num_running_reqs The number of running requests.\n"
               "# TYPE sglang:num_running_reqs gauge\n"
               'sglang:num_running_reqs{model_name="stub-model"} 0.0\n'
               "# HELP sglang:gen_throughput The generation throughput (token/s).\n"
               "# TYPE sglang:gen_throughput gauge\n"
               'sglang:gen_throughput{model_name="stub-model"} 0.0\n')
    model = {"model_path": "stub-model", "tokenizer_path": "stub-model", "is_generation": True}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def answer(self, status, body, ctype):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            path = self.path.split("?", 1)[0]
            if path in ("/server_info", "/get_server_info"):
                self.answer(200, json.dumps(info), "application/json")
            elif path in ("/health", "/health_generate"):
                self.answer(200, "", "text/plain")
            elif path == "/metrics":
                self.answer(200, metrics, "text/plain; version=0.0.4")
            elif path in ("/model_info", "/get_model_info"):
                self.answer(200, json.dumps(model), "application/json")
            else:
                self.answer(404, json.dumps({"detail": "Not Found"}), "application/json")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(sock.getsockname(), Handler, bind_and_activate=False)
    server.socket.close()
    server.socket = sock
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    while not orphaned():
        time.sleep(1.0)


def main():
    sock = socket.socket(fileno=int(os.environ.pop("CROWDED_LISTEN_FD")))
    kind = flag("--stub-kind")
    print("ready %s %s" % (kind, sock.getsockname()[1]), flush=True)
    if kind == "silent":
        silent(sock)
    elif kind == "trickling":
        trickling(sock)
    elif kind in ("foreign_user", "answering"):
        foreign(sock, int(flag("--port")))
    else:
        sys.exit("unknown --stub-kind %r" % kind)


if __name__ == "__main__":
    main()
'''


@dataclass
class Stub:
    kind: str
    port: int
    proc: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid


class Unavailable(RuntimeError):
    """A kind of stand-in this machine cannot run (the reason is the message)."""


def foreign_user_reason() -> Optional[str]:
    """Why a server cannot be run as user nobody here, or None when it can."""
    if os.geteuid() != 0:
        return f"running a server as user nobody needs root (setpriv --reuid); this runs as uid {os.geteuid()}"
    if not shutil.which("setpriv"):
        return "running a server as user nobody needs setpriv (util-linux), which is not installed"
    return None


class LoadGenerator:
    """Streaming ``POST /generate`` requests back to back at one server from ``concurrency`` threads,
    with SGLang's native API (``stream``: ``data: {...}`` events whose ``meta_info.completion_tokens``
    counts the tokens so far, then ``data: [DONE]``)."""

    def __init__(self, host: str, port: int, concurrency: int = 1, max_new_tokens: int = 64):
        self.host, self.port, self.max_new_tokens = host, port, max_new_tokens
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._stats = {"requests": 0, "tokens": 0, "errors": 0}
        self._conns: Dict[int, http.client.HTTPConnection] = {}
        self._threads = [threading.Thread(target=self._loop, args=(i,), daemon=True, name=f"foreign-load-{i}")
                         for i in range(concurrency)]
        for t in self._threads:
            t.start()

    def stats(self) -> dict:
        with self._lock:
            return dict(self._stats)

    def _add(self, key: str, n: int = 1) -> None:
        with self._lock:
            self._stats[key] += n

    def _loop(self, i: int) -> None:
        body = json.dumps({"text": "A crowded host serves other people's requests too. " * 4,
                           "sampling_params": {"max_new_tokens": self.max_new_tokens, "ignore_eos": True,
                                               "temperature": 0.0},
                           "stream": True})
        while not self._stop.is_set():
            conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
            self._conns[i] = conn
            try:
                conn.request("POST", "/generate", body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                if resp.status != 200:
                    resp.read()
                    raise http.client.HTTPException(f"status {resp.status}")
                seen, done = 0, False
                while not self._stop.is_set():
                    line = resp.readline()
                    if not line:
                        break
                    line = line.strip()
                    if line == b"data: [DONE]":
                        done = True
                        break
                    if line.startswith(b"data: "):
                        n = int(json.loads(line[6:])["meta_info"]["completion_tokens"])
                        self._add("tokens", n - seen)
                        seen = n
                if done:
                    self._add("requests")
            except (OSError, ValueError, KeyError, TypeError, http.client.HTTPException):
                if not self._stop.is_set():
                    self._add("errors")
                    self._stop.wait(0.5)
            finally:
                conn.close()

    def stop(self, timeout: float = 15.0) -> dict:
        self._stop.set()
        for conn in list(self._conns.values()):
            if conn.sock is not None:
                try:
                    conn.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        for t in self._threads:
            t.join(timeout)
        return self.stats()


class CrowdedHost:
    """``silent``, ``trickling`` and ``answering`` stand-ins, a ``foreign_user`` one, and a load generator
    aimed at ``load_at`` ((host, port)), on loopback; a context manager (or :meth:`start` / :meth:`stop`)."""

    def __init__(self, silent: int = 6, trickling: int = 2, foreign_user: bool = False,
                 load_at: Optional[Tuple[str, int]] = None, tmpdir=None, answering: int = 0,
                 ready_timeout: float = 30.0):
        self.counts = {"silent": silent, "trickling": trickling, "foreign_user": 1 if foreign_user else 0,
                       "answering": answering}
        self.load_at = load_at
        self.ready_timeout = ready_timeout
        self.skipped: Dict[str, str] = {}
        self.stubs: List[Stub] = []
        self._given_tmp = Path(tmpdir) if tmpdir is not None else None
        self._pkg: Optional[Path] = None
        self._logs: Optional[Path] = None
        self._load: Optional[LoadGenerator] = None
        self._done_load = {"requests": 0, "tokens": 0, "errors": 0}
        self._lock = threading.Lock()

    # --- what it started ---------------------------------------------------------------------
    @property
    def pids(self) -> List[int]:
        return [s.pid for s in self.stubs]

    @property
    def ports(self) -> Dict[str, List[int]]:
        out: Dict[str, List[int]] = {k: [] for k in KINDS}
        for s in self.stubs:
            out[s.kind].append(s.port)
        return out

    # --- life ------------------------------------------------------------------------------
    def __enter__(self) -> "CrowdedHost":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> "CrowdedHost":
        atexit.register(self.stop)
        try:
            self._write_package()
            if self.counts["foreign_user"]:
                reason = foreign_user_reason()
                if reason:
                    self.skipped["foreign_user"] = reason
            for kind in KINDS:
                if kind not in self.skipped:
                    for _ in range(self.counts[kind]):
                        self.spawn(kind, wait=False)
            for stub in list(self.stubs):
                self._wait_ready(stub)
            if self.load_at is not None:
                self.aim_load(*self.load_at)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        self.stop_load()
        for stub in list(self.stubs):
            self.kill(stub)
        if self._pkg is not None:
            shutil.rmtree(self._pkg, ignore_errors=True)
            self._pkg = None
        atexit.unregister(self.stop)

    # --- stand-ins -----------------------------------------------------------------------------
    def _write_package(self) -> None:
        # a folder of its own that user nobody can read (a test's tmp_path is not)
        self._pkg = Path(tempfile.mkdtemp(prefix="crowded-sglang-"))
        (self._pkg / "sglang").mkdir()
        (self._pkg / "sglang" / "__init__.py").write_text('"""A stand-in for SGLang (tests/support/crowded.py)."""\n')
        (self._pkg / "sglang" / "launch_server.py").write_text(STUB_MAIN)
        for p in [self._pkg, *self._pkg.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        self._logs = self._given_tmp or self._pkg
        self._logs.mkdir(parents=True, exist_ok=True)

    def spawn(self, kind: str, wait: bool = True) -> Stub:
        """Start one more stand-in of ``kind``; ready (its process listening) unless ``wait`` is False."""
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}: one of {', '.join(KINDS)}")
        if kind == "foreign_user" and foreign_user_reason():
            raise Unavailable(foreign_user_reason())
        if self._pkg is None:
            self._write_package()
        sock = socket.socket()
        try:
            sock.bind(("127.0.0.1", 0))
            sock.listen(128)
            port = sock.getsockname()[1]
            argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", "stub-model", "--port", str(port),
                    "--host", "127.0.0.1", "--stub-kind", kind]
            if kind == "foreign_user":
                argv = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", *argv]
            env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
            env.update({"PYTHONPATH": str(self._pkg), "PYTHONDONTWRITEBYTECODE": "1",
                        FD_VARIABLE: str(sock.fileno()), PARENT_VARIABLE: str(os.getpid())})
            log = self._logs / f"{kind}-{port}.log"
            with open(log, "wb") as out:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                        cwd=str(self._pkg), env=env, pass_fds=(sock.fileno(),),
                                        start_new_session=True)
        finally:
            sock.close()  # the stand-in holds the only copy now
        stub = Stub(kind, port, proc, log)
        with self._lock:
            self.stubs.append(stub)
        if wait:
            self._wait_ready(stub)
        return stub

    def _wait_ready(self, stub: Stub) -> None:
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if stub.proc.poll() is not None:
                text = stub.log.read_text(errors="replace")[-2000:]
                self.kill(stub)
                raise AssertionError(f"the {stub.kind} stand-in on port {stub.port} exited: {text}")
            if stub.log.read_bytes().startswith(b"ready"):
                return
            time.sleep(0.05)
        self.kill(stub)
        raise AssertionError(f"the {stub.kind} stand-in on port {stub.port} did not start in {self.ready_timeout} s")

    def kill(self, stub) -> None:
        """Kill one stand-in's process group (``stub``: a :class:`Stub` or its pid) and reap it."""
        if not isinstance(stub, Stub):
            stub = next(s for s in self.stubs if s.pid == stub)
        try:
            os.killpg(stub.pid, signal.SIGKILL)  # its own group: start_new_session made pgid == pid
        except ProcessLookupError:
            pass
        try:
            stub.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        for pid in group_pids(stub.pid):  # anything it started in its group
            wait_gone(pid)
        with self._lock:
            if stub in self.stubs:
                self.stubs.remove(stub)

    # --- the foreign load ----------------------------------------------------------------------
    def aim_load(self, host: str, port: int, concurrency: int = 1, max_new_tokens: int = 64) -> None:
        """Send streaming /generate requests back to back at ``host:port`` (instead of any earlier aim)."""
        self.stop_load()
        self._load = LoadGenerator(host, port, concurrency, max_new_tokens)

    def stop_load(self) -> dict:
        if self._load is not None:
            got = self._load.stop()
            self._load = None
            for k in self._done_load:
                self._done_load[k] += got[k]
        return self.foreign_stats()

    def foreign_stats(self) -> dict:
        """Requests finished, tokens received and failed requests of the load generator, all aims together."""
        now = self._load.stats() if self._load is not None else {}
        return {k: v + now.get(k, 0) for k, v in self._done_load.items()}
