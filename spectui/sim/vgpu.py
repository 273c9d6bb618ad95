"""Virtual GPUs of the simulated host: their state lives in files under ``<state>/sim/``.

This module is the *writer* side. The agent reads the same files with its own code (the
format below is the contract between the two; they share no code).

Layout of ``<state>/sim/``:

``host.json``
    ``{"driver_version": str, "cuda_version": str, "release_delay_s": float,
    "gpus": [{"index", "name", "uuid", "memory_total_mib", "power_limit_w",
    "power_idle_w", "sm_clock_idle_mhz", "sm_clock_max_mhz", "temp_idle_c",
    "temp_max_c"}]}``
``procs/<pid>.json``
    One per process that holds memory on a virtual GPU (one per TP rank; a leader that keeps its
    ranks itself, ``SPECTUI_SIM_RANKS=inline``, writes ``procs/<pid>-rank<R>.json``, one per rank):
    ``{"pid", "start_ticks", "gpu", "name", "memory_mib", "util", "heartbeat"}``.
    ``util`` is the busy fraction (0..1) of the process's decode loop over its last
    window, ``heartbeat`` the writer's ``time.time()`` at its last update,
    ``start_ticks`` field 22 of ``/proc/<pid>/stat`` (guards against pid reuse).
    A process that exited keeps its memory until ``heartbeat + release_delay_s``, like a
    driver that frees a dead context a moment later.

Writes are atomic (temporary file, then rename).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

GPU_NAME = "NVIDIA RTX PRO 6000 Blackwell"
GPU_MEMORY_MIB = 96 * 1024
DEFAULT_GPU_COUNT = 8
RELEASE_DELAY_S = 0.6


def sim_dir(state_dir: str | os.PathLike) -> Path:
    return Path(os.path.expanduser(str(state_dir))) / "sim"


def _atomic_write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=str(path.parent), prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def default_host(count: int = DEFAULT_GPU_COUNT) -> dict:
    return {
        "driver_version": "580.95.05",
        "cuda_version": "13.0",
        "release_delay_s": RELEASE_DELAY_S,
        "gpus": [
            {
                "index": i,
                "name": GPU_NAME,
                "uuid": "GPU-5e1a0000-0000-4000-8000-%012d" % i,
                "memory_total_mib": GPU_MEMORY_MIB,
                "power_limit_w": 600.0,
                "power_idle_w": 32.0,
                "sm_clock_idle_mhz": 180,
                "sm_clock_max_mhz": 2430,
                "temp_idle_c": 31.0,
                "temp_max_c": 78.0,
            }
            for i in range(count)
        ],
    }


def init_host(state_dir: str | os.PathLike, count: int = DEFAULT_GPU_COUNT, *, force: bool = False) -> Path:
    """Create the simulated host's GPUs (idempotent unless ``force``)."""
    d = sim_dir(state_dir)
    host = d / "host.json"
    if force or not host.exists():
        _atomic_write_json(host, default_host(count))
    (d / "procs").mkdir(parents=True, exist_ok=True)
    return host


def load_host(state_dir: str | os.PathLike) -> dict:
    with open(sim_dir(state_dir) / "host.json") as fh:
        return json.load(fh)


def _start_ticks(pid: int) -> int | None:
    try:
        with open("/proc/%d/stat" % pid) as fh:
            stat = fh.read()
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int, start_ticks) -> bool:
    """The process runs (not a zombie) and is the one that wrote the claim."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            rest = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    if rest[0] == "Z":
        return False
    return start_ticks is None or int(rest[19]) == start_ticks


class GpuClaim:
    """A process's hold on one virtual GPU. Call :meth:`update` periodically (heartbeat)."""

    def __init__(self, state_dir: str | os.PathLike, gpu: int, name: str, pid: int | None = None,
                 key: str | None = None):
        self.pid = pid if pid is not None else os.getpid()
        self.gpu = gpu
        self.name = name
        # one file per claim: ``<pid>.json``, or ``<key>.json`` for one of several claims of one process
        self.path = sim_dir(state_dir) / "procs" / ("%s.json" % (key if key is not None else self.pid))
        self.memory_mib = 0.0
        self.util = 0.0
        self._ticks = _start_ticks(self.pid)

    def update(self, memory_mib: float | None = None, util: float | None = None) -> None:
        if memory_mib is not None:
            self.memory_mib = float(memory_mib)
        if util is not None:
            self.util = max(0.0, min(1.0, float(util)))
        _atomic_write_json(
            self.path,
            {
                "pid": self.pid,
                "start_ticks": self._ticks,
                "gpu": self.gpu,
                "name": self.name,
                "memory_mib": round(self.memory_mib, 1),
                "util": round(self.util, 4),
                "heartbeat": time.time(),
            },
        )

    def release(self) -> None:
        """Free the memory at once (a clean exit); a killed process never gets here."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


def _claims(state_dir: str | os.PathLike, now: float | None):
    """(path, claim, pid, held) for every readable claim file; ``held``: its memory still counts."""
    d = sim_dir(state_dir) / "procs"
    now = time.time() if now is None else now
    try:
        delay = float(load_host(state_dir).get("release_delay_s", RELEASE_DELAY_S))
    except (OSError, ValueError):
        delay = RELEASE_DELAY_S
    try:
        names = os.listdir(d)
    except OSError:
        return
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        path = d / name
        try:
            with open(path) as fh:
                c = json.load(fh)
            pid = int(c["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        held = _alive(pid, c.get("start_ticks")) or now < float(c.get("heartbeat", 0)) + delay
        yield path, c, pid, held


def memory_in_use(state_dir: str | os.PathLike, gpu: int, exclude_pids=(), now: float | None = None) -> float:
    """MiB held on virtual GPU ``gpu`` by other processes (live, or dead but not yet released)."""
    total = 0.0
    for _, c, pid, held in _claims(state_dir, now):
        try:
            on_gpu = int(c["gpu"]) == gpu
        except (KeyError, TypeError, ValueError):
            continue
        if held and on_gpu and pid not in exclude_pids:
            total += float(c.get("memory_mib", 0.0))
    return total


def remove_stale_claims(state_dir: str | os.PathLike, now: float | None = None) -> int:
    """Delete claim files of processes that are gone and whose memory is already released."""
    removed = 0
    for path, _, _, held in _claims(state_dir, now):
        if not held:
            try:
                path.unlink()
                removed += 1
            except OSError:
                pass
    return removed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m spectui.sim.vgpu", description="Manage the simulated host's virtual GPUs.")
    sub = p.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("init", help="create the virtual GPUs (idempotent)")
    i.add_argument("--state", default="~/.cache/spectui", help="host state folder")
    i.add_argument("--count", type=int, default=DEFAULT_GPU_COUNT)
    i.add_argument("--force", action="store_true", help="recreate host.json")
    args = p.parse_args(argv)
    if args.cmd == "init":
        print(init_host(args.state, args.count, force=args.force))
    return 0


if __name__ == "__main__":
    sys.exit(main())
