"""GPU telemetry through NVML (pynvml from nvidia-ml-py), sampled the cheap way.

NVML is initialised once and device handles are cached. Each interval reads each fast
field once per GPU; slow fields (name, UUID, power limit, total memory) are read every
``SLOW_FIELDS_PERIOD_S``. A field the GPU does not support is reported missing, once.
"""

from __future__ import annotations

import logging
import time

from .base import SLOW_FIELDS_PERIOD_S, GpuSource, SourceUnavailable, empty_gpu

log = logging.getLogger(__name__)

MIB = 1024.0 * 1024.0


def _text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


class NvmlSource(GpuSource):
    name = "nvml"

    def __init__(self, pynvml_module=None, clock=time.monotonic):
        if pynvml_module is None:
            try:
                import pynvml as pynvml_module  # from nvidia-ml-py
            except ImportError:
                raise SourceUnavailable("pynvml is not installed (pip install nvidia-ml-py)")
        self.nv = pynvml_module
        self._clock = clock
        try:
            self.nv.nvmlInit()
        except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
            raise SourceUnavailable("NVML did not initialise: %s" % (exc,))
        try:
            count = self.nv.nvmlDeviceGetCount()
            self._handles = [self.nv.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except Exception as exc:
            self._shutdown()
            raise SourceUnavailable("NVML lists no GPU: %s" % (exc,))
        if not self._handles:
            self._shutdown()
            raise SourceUnavailable("NVML lists no GPU")
        self._unsupported = set()
        self._slow = [empty_gpu(i) for i in range(len(self._handles))]
        self._slow_at = None
        self._driver = self._call(None, "driver", self.nv.nvmlSystemGetDriverVersion)
        if self._driver is not None:
            self._driver = _text(self._driver)

    def _shutdown(self):
        try:
            self.nv.nvmlShutdown()
        except Exception:
            log.debug('NVML did not shut down cleanly', exc_info=True)

    def _call(self, index, field, fn, *args):
        key = (index, field)
        if key in self._unsupported:
            return None
        try:
            return fn(*args)
        except Exception as exc:
            if self._is_not_supported(exc):
                self._unsupported.add(key)
            return None

    def _is_not_supported(self, exc):
        names = ("NVML_ERROR_NOT_SUPPORTED", "NVML_ERROR_FUNCTION_NOT_FOUND")
        value = getattr(exc, "value", None)
        for n in names:
            if value is not None and value == getattr(self.nv, n, object()):
                return True
        return False

    def _read_slow(self):
        nv = self.nv
        for i, h in enumerate(self._handles):
            d = self._slow[i]
            name = self._call(i, "name", nv.nvmlDeviceGetName, h)
            d["name"] = _text(name) if name is not None else None
            uuid = self._call(i, "uuid", nv.nvmlDeviceGetUUID, h)
            d["uuid"] = _text(uuid) if uuid is not None else None
            limit = self._call(i, "power_limit_w", nv.nvmlDeviceGetEnforcedPowerLimit, h)
            d["power_limit_w"] = round(limit / 1000.0, 1) if limit is not None else None
        self._slow_at = self._clock()

    def inventory(self):
        if self._slow_at is None:
            self._read_slow()
        gpus = []
        for i, h in enumerate(self._handles):
            mem = self._call(i, "memory", self.nv.nvmlDeviceGetMemoryInfo, h)
            gpus.append({"index": i, "name": self._slow[i]["name"], "uuid": self._slow[i]["uuid"],
                         "mem_total_mib": round(mem.total / MIB) if mem is not None else None})
        return {"driver_version": self._driver, "gpus": gpus}

    def sample(self):
        nv = self.nv
        if self._slow_at is None or self._clock() - self._slow_at >= SLOW_FIELDS_PERIOD_S:
            self._read_slow()
        out = []
        for i, h in enumerate(self._handles):
            d = dict(self._slow[i])
            util = self._call(i, "util_pct", nv.nvmlDeviceGetUtilizationRates, h)
            d["util_pct"] = float(util.gpu) if util is not None else None
            mem = self._call(i, "memory", nv.nvmlDeviceGetMemoryInfo, h)
            if mem is not None:
                d["mem_used_mib"] = round(mem.used / MIB, 1)
                d["mem_total_mib"] = round(mem.total / MIB, 1)
            power = self._call(i, "power_w", nv.nvmlDeviceGetPowerUsage, h)
            d["power_w"] = round(power / 1000.0, 1) if power is not None else None
            temp = self._call(i, "temp_c", nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU)
            d["temp_c"] = float(temp) if temp is not None else None
            clock = self._call(i, "sm_clock_mhz", nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM)
            d["sm_clock_mhz"] = float(clock) if clock is not None else None
            procs = self._call(i, "processes", nv.nvmlDeviceGetComputeRunningProcesses, h)
            if procs is not None:
                d["processes"] = [
                    {"pid": int(p.pid),
                     "used_mib": (round(p.usedGpuMemory / MIB, 1)
                                  if isinstance(getattr(p, "usedGpuMemory", None), int) else None)}
                    for p in procs
                ]
            out.append(d)
        return out

    def missing(self):
        return sorted(set(field for _, field in self._unsupported))

    def close(self):
        self._shutdown()
