"""GPU telemetry of a simulated host: its virtual GPUs live in files under ``<state>/sim/``.

The simulator writes ``host.json`` and one ``procs/<pid>.json`` per process holding GPU
memory (format documented in ``spectui/sim/vgpu.py``). This reader shares no code with
that writer. A process that has exited keeps its memory until ``heartbeat +
release_delay_s``, as a driver frees a dead context a moment later.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from .base import SLOW_FIELDS_PERIOD_S, GpuSource, SourceUnavailable, empty_gpu

THERMAL_TIME_CONSTANT_S = 8.0


def _proc_state(pid):
    """(alive, start_ticks) from /proc; a zombie is not alive."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            rest = fh.read().rsplit(")", 1)[1].split()
        return rest[0] != "Z", int(rest[19])
    except (OSError, ValueError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False, None
    except PermissionError:
        return True, None
    except OSError:
        return False, None
    return True, None


def init_sim_host(state_dir, python=None):
    """Create the virtual GPUs with the simulator's own tool (it alone knows the hardware)."""
    argv = [python or sys.executable, "-m", "spectui.sim.vgpu", "init", "--state", state_dir]
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourceUnavailable("the simulator could not be started (%s)" % exc)
    if r.returncode != 0:
        last = (r.stderr.decode("utf-8", "replace").strip().splitlines() or ["exit %d" % r.returncode])[-1]
        raise SourceUnavailable("the simulator is not importable by %s (%s)" % (argv[0], last))


class SimSource(GpuSource):
    name = "sim"

    def __init__(self, state_dir, create=False, python=None, clock=time.time):
        self.dir = os.path.join(os.path.expanduser(state_dir), "sim")
        self.host_path = os.path.join(self.dir, "host.json")
        self.procs_dir = os.path.join(self.dir, "procs")
        self._clock = clock
        if not os.path.exists(self.host_path):
            if not create:
                raise SourceUnavailable("no simulated GPUs at %s" % self.dir)
            init_sim_host(os.path.expanduser(state_dir), python)
        self._host = None
        self._host_at = None
        self._temp = {}
        self._temp_at = None
        self._read_host()

    def _read_host(self):
        try:
            with open(self.host_path) as fh:
                self._host = json.load(fh)
        except (OSError, ValueError) as exc:
            if self._host is None:
                raise SourceUnavailable("simulated GPUs unreadable at %s (%s)" % (self.host_path, exc))
        self._host_at = time.monotonic()

    def inventory(self):
        return {"driver_version": self._host.get("driver_version"),
                "gpus": [{"index": g["index"], "name": g["name"], "uuid": g.get("uuid"),
                          "mem_total_mib": g["memory_total_mib"]} for g in self._host["gpus"]]}

    def _claims(self, now):
        delay = float(self._host.get("release_delay_s", 0.5))
        claims = []
        try:
            names = os.listdir(self.procs_dir)
        except OSError:
            return claims
        for name in names:
            if not name.endswith(".json") or name.startswith("."):
                continue
            try:
                with open(os.path.join(self.procs_dir, name)) as fh:
                    c = json.load(fh)
                pid = int(c["pid"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
            alive, ticks = _proc_state(pid)
            if alive and c.get("start_ticks") is not None and ticks is not None and ticks != c["start_ticks"]:
                alive = False  # the pid was reused by another process
            if not alive and now >= float(c.get("heartbeat", 0)) + delay:
                continue
            c["alive"] = alive
            claims.append(c)
        return claims

    def sample(self):
        if time.monotonic() - self._host_at >= SLOW_FIELDS_PERIOD_S:
            self._read_host()
        now = self._clock()
        by_gpu = {}
        for c in self._claims(now):
            by_gpu.setdefault(int(c.get("gpu", -1)), []).append(c)
        dt = 0.0 if self._temp_at is None else max(0.0, now - self._temp_at)
        self._temp_at = now
        out = []
        for g in self._host["gpus"]:
            i = g["index"]
            claims = by_gpu.get(i, [])
            util = min(1.0, sum(float(c.get("util", 0.0)) for c in claims if c["alive"]))
            d = empty_gpu(i)
            d["name"] = g["name"]
            d["uuid"] = g.get("uuid")
            d["mem_total_mib"] = float(g["memory_total_mib"])
            d["mem_used_mib"] = round(min(d["mem_total_mib"], sum(float(c.get("memory_mib", 0.0)) for c in claims)), 1)
            d["util_pct"] = round(100.0 * util, 1)
            idle_w, limit_w = float(g["power_idle_w"]), float(g["power_limit_w"])
            d["power_w"] = round(idle_w + (limit_w - idle_w) * (0.15 if claims else 0.0) + (limit_w - idle_w) * 0.75 * util, 1)
            d["power_limit_w"] = limit_w
            target = float(g["temp_idle_c"]) + (float(g["temp_max_c"]) - float(g["temp_idle_c"])) * util
            prev = self._temp.get(i, float(g["temp_idle_c"]))
            alpha = 1.0 if dt == 0.0 and i not in self._temp else min(1.0, dt / THERMAL_TIME_CONSTANT_S)
            self._temp[i] = prev + (target - prev) * alpha
            d["temp_c"] = round(self._temp[i], 1)
            d["sm_clock_mhz"] = float(g["sm_clock_max_mhz"] if util > 0.01 else g["sm_clock_idle_mhz"])
            d["processes"] = [{"pid": int(c["pid"]), "used_mib": float(c.get("memory_mib", 0.0))} for c in claims]
            out.append(d)
        return out
