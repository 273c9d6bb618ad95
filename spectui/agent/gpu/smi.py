"""GPU telemetry from one long-running ``nvidia-smi --query-gpu ... -lms N`` process.

One process for the whole stream, never one per sample. It prints one CSV line per GPU
every N ms; a reader thread keeps the latest line per GPU. nvidia-smi cannot list
processes in the same query, so ``processes`` is reported missing.
"""

from __future__ import annotations

import shutil
import subprocess
import threading

from .base import GpuSource, SourceUnavailable, empty_gpu

QUERY = ("index", "uuid", "name", "utilization.gpu", "memory.used", "memory.total",
         "power.draw", "power.limit", "temperature.gpu", "clocks.sm", "driver_version")
KEYS = ("index", "uuid", "name", "util_pct", "mem_used_mib", "mem_total_mib",
        "power_w", "power_limit_w", "temp_c", "sm_clock_mhz", "driver_version")
TEXT_KEYS = ("uuid", "name", "driver_version")


def parse_csv_line(line):
    """One line of ``--format=csv,noheader,nounits`` output -> dict (``None`` for N/A)."""
    parts = [p.strip() for p in line.split(",")]
    if len(parts) != len(KEYS):
        return None
    d = {}
    for key, raw in zip(KEYS, parts):
        if raw.startswith("[") or raw in ("N/A", ""):
            d[key] = None
        elif key in TEXT_KEYS:
            d[key] = raw
        else:
            try:
                d[key] = float(raw)
            except ValueError:
                d[key] = None
    if d["index"] is None:
        return None
    d["index"] = int(d["index"])
    return d


class NvidiaSmiSource(GpuSource):
    name = "nvidia-smi"

    def __init__(self, interval_s=1.0, executable=None):
        self.exe = executable or shutil.which("nvidia-smi")
        if not self.exe:
            raise SourceUnavailable("nvidia-smi is not on PATH")
        self._latest = {}
        self._lock = threading.Lock()
        self._first = threading.Event()
        self._proc = None
        self._interval = None
        self.set_interval(interval_s)
        if not self._first.wait(max(5.0, 3 * interval_s)):
            err = self._stderr_text()
            self.close()
            raise SourceUnavailable("nvidia-smi printed no GPU line%s" % (": " + err if err else ""))

    def _stderr_text(self):
        p = self._proc
        if p is not None and p.poll() is not None and p.stderr is not None:
            try:
                return p.stderr.read().decode("utf-8", "replace").strip().splitlines()[-1]
            except (OSError, IndexError):
                return ""
        return ""

    def set_interval(self, interval_s):
        ms = max(100, int(round(interval_s * 1000)))
        if self._interval == ms and self._proc is not None and self._proc.poll() is None:
            return
        self._stop_proc()
        self._interval = ms
        argv = [self.exe, "--query-gpu=" + ",".join(QUERY), "--format=csv,noheader,nounits", "-lms", str(ms)]
        try:
            self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE)
        except OSError as exc:
            raise SourceUnavailable("nvidia-smi could not start: %s" % exc)
        t = threading.Thread(target=self._reader, args=(self._proc,), name="nvidia-smi-reader")
        t.daemon = True
        t.start()

    def _reader(self, proc):
        for raw in proc.stdout:
            d = parse_csv_line(raw.decode("utf-8", "replace"))
            if d is None:
                continue
            with self._lock:
                self._latest[d["index"]] = d
            self._first.set()

    def inventory(self):
        with self._lock:
            rows = [self._latest[k] for k in sorted(self._latest)]
        return {"driver_version": rows[0].get("driver_version") if rows else None,
                "gpus": [{"index": r["index"], "name": r["name"], "uuid": r["uuid"],
                          "mem_total_mib": r["mem_total_mib"]} for r in rows]}

    def sample(self):
        with self._lock:
            rows = [self._latest[k] for k in sorted(self._latest)]
        out = []
        for r in rows:
            d = empty_gpu(r["index"])
            for k in d:
                if k in r:
                    d[k] = r[k]
            out.append(d)
        return out

    def missing(self):
        return ["processes"]

    def _stop_proc(self):
        p = self._proc
        self._proc = None
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(2)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def close(self):
        self._stop_proc()
