"""What every GPU telemetry source provides.

A sample is a list of per-GPU dicts with these keys (a value the source cannot read is
``None``, never an exception): ``index``, ``name``, ``uuid``, ``util_pct``,
``mem_used_mib``, ``mem_total_mib``, ``power_w``, ``power_limit_w``, ``temp_c``,
``sm_clock_mhz``, ``processes`` (a list of ``{"pid", "used_mib"}``, or ``None`` when the
source cannot list them). The stream adds ``user``, ``command`` and ``pgid`` to each process
(:mod:`.procinfo`).
"""

from __future__ import annotations

FIELDS = (
    "index", "name", "uuid", "util_pct", "mem_used_mib", "mem_total_mib", "power_w",
    "power_limit_w", "temp_c", "sm_clock_mhz", "processes",
)

SLOW_FIELDS_PERIOD_S = 5.0


class SourceUnavailable(Exception):
    """This source cannot be used on this host; the message says why in a few words."""


class GpuSource(object):
    name = "base"

    def inventory(self):
        """``{"driver_version": str|None, "gpus": [{"index", "name", "uuid", "mem_total_mib"}]}``"""
        raise NotImplementedError

    def sample(self):
        raise NotImplementedError

    def missing(self):
        """Names of fields this source could not read (for the client to show as missing)."""
        return []

    def close(self):
        pass


def empty_gpu(index):
    d = dict.fromkeys(FIELDS)
    d["index"] = index
    return d
