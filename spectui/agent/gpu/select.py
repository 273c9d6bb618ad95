"""Choosing the GPU telemetry source: NVML, then nvidia-smi, then the simulator's GPUs."""

from __future__ import annotations

from ..protocol import GPU_SOURCES as SOURCES
from .base import SourceUnavailable


class NoGpuTelemetry(object):
    """The state when no source works: says what was tried and why each failed."""

    name = "none"

    def __init__(self, tried):
        self.tried = tried  # list of (source, reason)
        self.message = "no GPU telemetry: " + "; ".join("%s: %s" % t for t in tried) if tried else \
            "no GPU telemetry: disabled"

    def inventory(self):
        return {"driver_version": None, "gpus": []}

    def sample(self):
        return []

    def missing(self):
        return []

    def close(self):
        pass


def open_source(choice, state_dir, simulated=False, interval_s=1.0, python=None):
    """Return a working source, or a :class:`NoGpuTelemetry` naming every source tried.

    ``choice`` is one of SOURCES. On a simulated host ``auto`` means ``sim``.
    """
    if choice not in SOURCES:
        return NoGpuTelemetry([(choice, "unknown source (choose from %s)" % ", ".join(SOURCES))])
    if choice == "none":
        return NoGpuTelemetry([])
    if choice == "auto":
        order = ["sim"] if simulated else ["nvml", "nvidia-smi", "sim"]
    else:
        order = [choice]
    tried = []
    for name in order:
        try:
            if name == "nvml":
                from .nvml import NvmlSource
                return NvmlSource()
            if name == "nvidia-smi":
                from .smi import NvidiaSmiSource
                return NvidiaSmiSource(interval_s=interval_s)
            if name == "sim":
                from .sim import SimSource
                return SimSource(state_dir, create=simulated, python=python)
        except SourceUnavailable as exc:
            tried.append((name, str(exc)))
    return NoGpuTelemetry(tried)
