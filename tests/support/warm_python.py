"""Short runs of the real-SGLang venv's Python from one warm interpreter per test process.

Each check of spectui against the real SGLang parser is a ``python -c SOURCE`` or ``python -m MODULE`` run in the
real-SGLang venv whose first step is importing SGLang's server arguments: seconds of CPU (torch on the way), paid
again by every run. :class:`WarmPython` starts the venv's interpreter once, imports those modules, and then forks
it for each run: the fork executes the run's source or module as ``__main__`` with the run's arguments, standard
input, environment and working folder, its standard output and error captured, and ends with the run's exit
status, as a fresh interpreter would (its exit functions run). The parser, its actions and its verdicts are the
real wheel's; only the import is shared, and a run changes nothing the next one sees (each is a fork of the
untouched interpreter).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import tempfile
import time
from typing import Dict, List, Optional, Sequence

#: What the warm interpreter runs: imports the modules named in its arguments, then serves one run per line of its
#: standard input (``{"args", "input", "env", "cwd"}``) with one line on its standard output
#: (``{"returncode", "stdout", "stderr"}``).
ZYGOTE = r'''
import atexit, json, os, runpy, sys, tempfile, traceback
for _name in sys.argv[1:]:
    __import__(_name)
_requests, _replies = sys.stdin, sys.stdout


def _child(req, folder):
    fin = os.open(os.path.join(folder, "in"), os.O_RDONLY)
    fout = os.open(os.path.join(folder, "out"), os.O_WRONLY | os.O_CREAT, 0o600)
    ferr = os.open(os.path.join(folder, "err"), os.O_WRONLY | os.O_CREAT, 0o600)
    for fd, target in ((fin, 0), (fout, 1), (ferr, 2)):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False)
    if req.get("env") is not None:
        os.environ.clear()
        os.environ.update(req["env"])
    if req.get("cwd"):
        os.chdir(req["cwd"])
    args = req["args"]
    code = 0
    try:
        if args[0] == "-c":
            sys.argv = ["-c"] + args[2:]
            sys.path[0] = ""
            exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        elif args[0] == "-m":
            sys.argv = [args[1]] + args[2:]
            sys.path[0] = os.getcwd()
            runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(args)
            sys.path[0] = os.path.dirname(os.path.abspath(args[0]))
            runpy.run_path(args[0], run_name="__main__")
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code & 0xFF)


for _line in _requests:
    _req = json.loads(_line)
    _folder = tempfile.mkdtemp(prefix="warm-python-")
    with open(os.path.join(_folder, "in"), "w") as _fh:
        _fh.write(_req.get("input") or "")
    _pid = os.fork()
    if _pid == 0:
        _child(_req, _folder)
    _, _status = os.waitpid(_pid, 0)
    _rc = os.waitstatus_to_exitcode(_status)
    _out = {}
    for _k in ("out", "err"):
        with open(os.path.join(_folder, _k), "rb") as _fh:
            _out[_k] = _fh.read().decode("utf-8", "replace")
        os.unlink(os.path.join(_folder, _k))
    os.unlink(os.path.join(_folder, "in"))
    os.rmdir(_folder)
    _replies.write(json.dumps({"returncode": _rc, "stdout": _out["out"], "stderr": _out["err"]}) + "\n")
    _replies.flush()
'''


class WarmPython:
    """``python`` started once with ``preload`` imported; :meth:`run` is ``subprocess.run([python, *args], ...)``
    with text output captured, answered by a fork of it."""

    def __init__(self, python: str, preload: Sequence[str], env: Optional[Dict[str, str]] = None) -> None:
        self.python = python
        self.preload = list(preload)
        self.env = env
        self.proc: Optional[subprocess.Popen] = None
        self._errors = None

    def _start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            self._errors = tempfile.TemporaryFile()
            self.proc = subprocess.Popen([self.python, "-u", "-c", ZYGOTE, *self.preload], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self._errors, text=True, env=self.env,
                                         start_new_session=True)
        return self.proc

    def run(self, args: List[str], *, input: Optional[str] = None, env: Optional[Dict[str, str]] = None,
            cwd: Optional[str] = None, timeout: float = 600) -> subprocess.CompletedProcess:
        proc = self._start()
        proc.stdin.write(json.dumps({"args": list(args), "input": input, "env": env, "cwd": cwd}) + "\n")
        proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close(kill=True)
                raise subprocess.TimeoutExpired([self.python, *args], timeout)
            if select.select([proc.stdout], [], [], min(left, 1.0))[0]:
                break
        line = proc.stdout.readline()
        if not line:
            self._errors.seek(0)
            tail = self._errors.read().decode("utf-8", "replace")[-3000:]
            self.close(kill=True)
            raise RuntimeError(f"the warm interpreter {self.python} ended: {tail}")
        reply = json.loads(line)
        return subprocess.CompletedProcess([self.python, *args], reply["returncode"], reply["stdout"],
                                           reply["stderr"])

    def close(self, kill: bool = False) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if kill:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            proc.stdin.close()  # the end of its requests: it exits
        except OSError:
            pass  # it was killed with a request unread
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        proc.stdout.close()
        if self._errors is not None:
            self._errors.close()
