"""Stand-ins for the servers of other people on a shared host: processes whose command line is
``python3 -m sglang.launch_server --port P ...`` (so discovery finds them) that accept a connection and
then never answer (``silent``) or answer one byte a second (``trickling``).

Each stub listens on a socket this helper bound to a port the kernel gave, handed over as an inherited
fd, so no port is guessed. Stubs end with the context, and on their own when the test process that
started them is gone.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STUB = r'''
import os, socket, sys, threading, time

def flag(name, default=None):
    argv = sys.argv[1:]
    return argv[argv.index(name) + 1] if name in argv else default

mode = flag("--stub-mode", "silent")
every = float(flag("--stub-every", "1.0"))
sock = socket.socket(fileno=int(flag("--stub-fd")))
seen = flag("--stub-seen")
parent = os.getppid()
ANSWER = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 32\r\n\r\n"
          b'{"version": "0.5.23", "x": "yz"}')

def serve(conn):
    try:
        if mode == "trickling":
            if not conn.recv(4096):  # the request's first bytes: the answer begins
                return
            for i in range(len(ANSWER)):
                conn.sendall(ANSWER[i:i + 1])
                time.sleep(every)
        while conn.recv(4096):  # silent: read, never answer
            pass
    except OSError:
        pass
    finally:
        conn.close()

def watchdog():
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)

threading.Thread(target=watchdog, daemon=True).start()
while True:
    conn, _ = sock.accept()
    with open(seen, "a") as fh:
        fh.write("1\n")
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
'''


def stub_tree(root: Path) -> Path:
    """A folder to put first on PYTHONPATH: ``sglang.launch_server`` and ``spectui.sim.server`` are the stub."""
    for pkg in ("sglang", "spectui", "spectui/sim"):
        (root / pkg).mkdir(parents=True, exist_ok=True)
        (root / pkg / "__init__.py").write_text("")
    (root / "sglang" / "launch_server.py").write_text(STUB)
    (root / "spectui" / "sim" / "server.py").write_text(STUB)
    return root


class Stub:
    def __init__(self, proc: subprocess.Popen, port: int, mode: str):
        self.proc, self.port, self.mode = proc, port, mode

    @property
    def pid(self) -> int:
        return self.proc.pid


class CrowdedHost:
    """``with CrowdedHost(silent=6, trickling=2) as host:`` ``host.ports`` are the stubs' ports.

    ``module``: the launcher the stubs' command lines name (``sglang.launch_server``, or
    ``spectui.sim.server`` for a simulated server); ``extra``: more words for their command lines;
    ``env``: more environment; ``user``: run them as this user (setpriv), so their environment is
    unreadable to other users."""

    def __init__(self, silent: int = 6, trickling: int = 2, *, module: str = "sglang.launch_server",
                 extra: tuple = (), env: dict | None = None, user: str | None = None):
        self.modes = ["silent"] * silent + ["trickling"] * trickling
        self.module, self.extra, self.env, self.user = module, list(extra), env or {}, user
        self.stubs: list[Stub] = []
        self._dir = None

    @property
    def ports(self) -> list[int]:
        return [s.port for s in self.stubs]

    def _seen(self, port: int) -> str:
        return os.path.join(self._dir.name, "seen-%d" % port)

    def asked(self) -> dict[int, int]:
        """{port: connections the stub accepted}."""
        out = {}
        for s in self.stubs:
            try:
                out[s.port] = len(Path(self._seen(s.port)).read_text().splitlines())
            except OSError:
                out[s.port] = 0
        return out

    def wait_asked(self, ports=None, timeout: float = 30.0) -> bool:
        """Whether a client other than this helper connected to each of ``ports`` (default: any stub) in time."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            asked = self.asked()
            if (any(asked.values()) if ports is None else all(asked[p] > 0 for p in ports)):
                return True
            time.sleep(0.05)
        return False

    def by_mode(self, mode: str) -> list[Stub]:
        return [s for s in self.stubs if s.mode == mode]

    def __enter__(self) -> "CrowdedHost":
        self._dir = tempfile.TemporaryDirectory(prefix="spectui-crowd-")
        root = stub_tree(Path(self._dir.name))
        os.chmod(self._dir.name, 0o755)
        env = dict(os.environ, PYTHONPATH=str(root), **self.env)
        prefix = []
        if self.user:
            prefix = ["setpriv", "--reuid=%s" % self.user, "--regid=nogroup", "--clear-groups"]
        try:
            for mode in self.modes:
                sock = socket.socket()
                sock.bind(("127.0.0.1", 0))
                sock.listen(64)
                port = sock.getsockname()[1]
                open(self._seen(port), "w").close()
                os.chmod(self._seen(port), 0o666)
                argv = prefix + [sys.executable if self.user is None else "/usr/bin/python3", "-m", self.module,
                                 "--port", str(port), "--model-path", "stub/%s" % mode, "--stub-mode", mode,
                                 "--stub-fd", str(sock.fileno()), "--stub-seen", self._seen(port)] + self.extra
                proc = subprocess.Popen(argv, env=env, pass_fds=(sock.fileno(),), stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                        start_new_session=True, cwd=self._dir.name)
                sock.close()
                self.stubs.append(Stub(proc, port, mode))
            self._wait_running()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_running(self, timeout: float = 30.0) -> None:
        """Every stub runs its module (its command line is the launcher's) and accepts connections."""
        deadline = time.monotonic() + timeout
        for s in self.stubs:
            while time.monotonic() < deadline:
                try:
                    argv = Path("/proc/%d/cmdline" % s.pid).read_bytes().split(b"\0")
                except OSError:
                    argv = []
                if self.module.encode() in argv and b"--stub-mode" in argv and not argv[0].endswith(b"setpriv"):
                    break
                if s.proc.poll() is not None:
                    raise RuntimeError("a stub server ended at once (status %s)" % s.proc.returncode)
                time.sleep(0.05)
            else:
                raise RuntimeError("stub server on port %d did not start within %g s" % (s.port, timeout))

    def __exit__(self, *exc) -> None:
        for s in self.stubs:
            try:
                os.killpg(s.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for s in self.stubs:
            s.proc.wait(10)
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

