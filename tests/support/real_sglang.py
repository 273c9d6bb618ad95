"""The real-SGLang venv for the tests that hold spectui and the simulator to SGLang itself: the real
sglang 0.5.23 wheel (CPU torch), never skipped; and the real server on this CPU with a tiny local model.

``.ci/run`` builds it with scripts/real_sglang_venv.sh and exports its interpreter as
SPECTUI_REAL_SGLANG_PYTHON. Without that variable (a developer machine) the script is run here
(slow once, then cached); with it set but broken, the tier fails and says how to rebuild.
"""

from __future__ import annotations

import atexit
import fcntl
import functools
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional

import pytest

if TYPE_CHECKING:
    from tests.support.warm_python import WarmPython

ROOT = Path(__file__).resolve().parents[2]  # the repository
PYTHON_ENV = "SPECTUI_REAL_SGLANG_PYTHON"
REAL_VERSION = "0.5.23"


def _probe(python: str) -> str | None:
    """Why ``python`` cannot serve as the real-SGLang interpreter, or None. Importing SGLang's server arguments takes
    seconds of CPU (torch on the way): a venv found good is stamped, and each test process (every pytest worker,
    the real tier) reads the stamp while the wheel's files are those it was made for (:func:`_stamp_key`)."""
    venv = Path(python).parent.parent
    key = _stamp_key(venv)
    stamp = venv / ".spectui-probed.json"
    try:
        lock = open(venv / ".spectui-probe.lock", "a")
    except OSError:  # a venv this user cannot write to: probed each time
        return _import_probe(python)
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the processes that start together wait for the first one's probe
        try:
            if key is not None and json.loads(stamp.read_text()) == {"python": python, "key": key}:
                return None
        except (OSError, ValueError):
            pass
        problem = _import_probe(python)
        if problem is None and key is not None:
            stamp.write_text(json.dumps({"python": python, "key": key}))
        return problem


def _stamp_key(venv: Path) -> list | None:
    """What a probe's verdict holds for: the size and time of the wheel's server-arguments module and of its
    metadata folder (a reinstall or another version changes them); None when the venv has no such files."""
    found = sorted(venv.glob("lib/python*/site-packages/sglang/srt/server_args.py")) + sorted(
        venv.glob(f"lib/python*/site-packages/sglang-{REAL_VERSION}.dist-info/RECORD"))
    if len(found) != 2:
        return None
    return [[str(f), f.stat().st_size, f.stat().st_mtime_ns] for f in found]


def _import_probe(python: str) -> str | None:
    try:
        r = subprocess.run([python, "-c", "import importlib.metadata as m, sglang.srt.server_args; "
                            "print(m.version('sglang'))"], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{python} could not run: {exc}"
    if r.returncode != 0:
        return f"{python} cannot import sglang.srt.server_args: {(r.stderr.strip().splitlines() or ['?'])[-1]}"
    if r.stdout.strip() != REAL_VERSION:
        return f"{python} has sglang {r.stdout.strip()}, not {REAL_VERSION}"
    return None


def find_python() -> str:
    """The real-SGLang interpreter: ``SPECTUI_REAL_SGLANG_PYTHON``, else the venv scripts/real_sglang_venv.sh builds
    (minutes, once) or finds. Raises RuntimeError saying what is wrong with it."""
    python = os.environ.get(PYTHON_ENV)
    if not python:
        r = subprocess.run([str(ROOT / "scripts" / "real_sglang_venv.sh"), REAL_VERSION], capture_output=True,
                           text=True, timeout=3600)
        if r.returncode != 0:
            raise RuntimeError(f"scripts/real_sglang_venv.sh failed: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
        python = str(Path(r.stdout.strip().splitlines()[-1]) / "bin" / "python")
    problem = _probe(python)
    if problem:
        raise RuntimeError(f"{PYTHON_ENV}={python} is not a working real-SGLang venv ({problem}); rebuild it with "
                           f"scripts/real_sglang_venv.sh {REAL_VERSION}, or unset {PYTHON_ENV} to build it here")
    return python


@pytest.fixture(scope="session")
def real_sglang_python() -> str:
    try:
        return venv_python()
    except RuntimeError as exc:
        pytest.fail(str(exc))


#: The warm interpreters of this process (tests/support/warm_python.py), by the venv's Python.
_WARM: Dict[str, "WarmPython"] = {}


def run_real(python: str, args: List[str], *, input: Optional[str] = None, env: Optional[Dict[str, str]] = None,
             cwd: Optional[str] = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """``subprocess.run([python, *args], capture_output=True, text=True, ...)`` in the real-SGLang venv, answered by
    a fork of one interpreter of this process that has imported SGLang's server arguments (``WarmPython``): the
    same run, without the seconds of CPU each fresh import of SGLang and torch costs. ``env`` None: this process's
    environment, as for ``subprocess.run``."""
    from tests.support.warm_python import WarmPython

    warm = _WARM.get(python)
    if warm is None:
        base = {k: v for k, v in os.environ.items() if not k.startswith("SGLANG_")}
        warm = _WARM[python] = WarmPython(python, ["sglang.srt.server_args"], env=base)
        atexit.register(warm.close)
    return warm.run(args, input=input, env=dict(os.environ) if env is None else env, cwd=cwd, timeout=timeout)


# --- the real server on this CPU -------------------------------------------------------------------------
#: What real SGLang needs to serve on a CPU: the CPU engine, and the KV-cache moves in torch instead of
#: sgl-kernel's CUDA ops (sglang 0.5.23 wheel: sglang/srt/environ.py reads both).
CPU_ENV: Dict[str, str] = {"SGLANG_USE_CPU_ENGINE": "1", "SGLANG_NATIVE_MOVE_KV_CACHE": "1",
                           "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
#: Seconds a real server gets to be ready on a busy 2-core machine (20 to 50 s seen; generous).
READY_TIMEOUT_S = 240.0


@functools.lru_cache(maxsize=None)
def venv_python() -> str:
    """:func:`find_python`, once per process (a failure is asked again: lru_cache keeps no exception)."""
    return find_python()


@functools.lru_cache(maxsize=None)
def tiny_model() -> str:
    """The folder of the tiny local model (scripts/tiny_model.py with the venv's Python; cached, and asked once
    per process)."""
    out = subprocess.run([venv_python(), str(ROOT / "scripts" / "tiny_model.py")], capture_output=True, text=True,
                         timeout=600, check=True)
    return out.stdout.strip().splitlines()[-1]


def cpu_args(max_total_tokens: int = 65536, **extra) -> Dict[str, object]:
    """SGLang flags (without dashes, as a profile's ``args``) for serving on a CPU, plus ``extra``."""
    # --sleep-on-idle: an idle scheduler waits on its sockets instead of spinning a core at 100% (sglang 0.5.23 wheel,
    # sglang/srt/arg_groups/fields/device.py:74, sglang/srt/managers/scheduler_components/idle_sleeper.py:36-37, called
    # from the scheduler's on_idle, sglang/srt/managers/scheduler.py:5328): a request wakes it at once, and on a
    # 2-core machine a spinning idle server would take half of it from the tier's clients and other server.
    args: Dict[str, object] = {"device": "cpu", "attention-backend": "torch_native", "disable-cuda-graph": True,
                               "skip-server-warmup": True, "mem-fraction-static": 0.3,
                               "max-total-tokens": max_total_tokens, "sleep-on-idle": True}
    args.update(extra)
    return args


def launch_argv(model: str, port: int, **extra) -> List[str]:
    """The real server's command line, as an operator types it (``--enable-metrics`` on)."""
    argv = [venv_python(), "-m", "sglang.launch_server", "--model-path", model, "--host", "127.0.0.1",
            "--port", str(port), "--enable-metrics"]
    for key, value in cpu_args(**extra).items():
        if value is True:
            argv.append("--" + key)
        elif value is not False and value is not None:
            argv += ["--" + key, str(value)]
    return argv


def write_profile(folder: Path, name: str, port: int, model: str, python: Optional[str] = None, **extra) -> Path:
    """A profile ``name`` for the real server on this machine (no GPUs: ``gpus: []``; ``python``: its interpreter,
    else the one ``--python`` gives); ``extra`` more flags."""
    doc = {"name": name, "description": "the real sglang %s server on this CPU, tiny local model" % REAL_VERSION,
           "model": model, "host": "127.0.0.1", "port": port, "gpus": [],
           "env": dict(CPU_ENV), "args": cpu_args(**extra), "tags": ["real", "cpu"]}
    if python:
        doc["python"] = python
    path = Path(folder) / (name + ".yaml")
    path.write_text(json.dumps(doc, indent=1) + "\n")  # JSON is YAML
    return path


def get(port: int, path: str, timeout: float = 5.0):
    """``(status, body bytes)`` of a GET on the server (an HTTP error's status too)."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def status(port: int, path: str, method: str = "GET", timeout: float = 30.0) -> Optional[int]:
    """The status code of a GET (or a body-less POST) on the server, or None when nothing answers."""
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method,
                                 data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def post_json(port: int, path: str, body: dict, timeout: float = 120.0) -> dict:
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def wait_ready(port: int, proc: Optional[subprocess.Popen] = None, log: Optional[Path] = None,
               timeout: float = READY_TIMEOUT_S) -> float:
    """Seconds until ``/health`` answers 200; fails with the log's end if ``proc`` ends or time runs out."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            raise AssertionError("the real server exited (%s): %s" % (proc.returncode, tail(log)))
        try:
            if get(port, "/health", timeout=2.0)[0] == 200:
                return time.monotonic() - t0
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError("the real server was not ready within %.0f s: %s" % (timeout, tail(log)))


def tail(log: Optional[Path], chars: int = 3000) -> str:
    try:
        return Path(log).read_text(errors="replace")[-chars:] if log else ""
    except OSError:
        return ""


class RealServer:
    """A real server started by hand in a session of its own (as ``nohup ... &`` leaves it), its output in ``log``."""

    def __init__(self, model: str, port: int, log: Path, **extra):
        self.port, self.log = port, Path(log)
        self.argv = launch_argv(model, port, **extra)
        env = dict(os.environ, **CPU_ENV)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         env=env, start_new_session=True, cwd=str(self.log.parent))

    def wait_ready(self, timeout: float = READY_TIMEOUT_S) -> float:
        return wait_ready(self.port, self.proc, self.log, timeout)

    def stop(self) -> None:
        """End its whole process group (SGLang's scheduler and detokenizer are its children)."""
        for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(wait)
                deadline = time.monotonic() + wait
                while group_alive(self.proc.pid) and time.monotonic() < deadline:
                    time.sleep(0.1)
                if not group_alive(self.proc.pid):
                    break
            except subprocess.TimeoutExpired:
                continue


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
