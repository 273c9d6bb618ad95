"""``SPECTUI_SIM_TIME_SCALE``: how long the simulated start-up takes, relative to ``--sim-load-time``.

A factor below 1 shortens the start-up sequence (distributed init, weight shards, KV pool, CUDA
graphs: ``startup.py``) of every simulated server started with it in its environment, such as the
servers of ``spectui demo``; above 1 it lengthens it. Only that wait is scaled: forward passes keep
the cost model's lengths, so the tokens per second, latencies and accept lengths a client measures
mean what they mean at scale 1. Unset or empty is 1.
"""

from __future__ import annotations

import math
import os
from typing import Mapping, Optional

ENV = "SPECTUI_SIM_TIME_SCALE"


class TimeScaleError(ValueError):
    """The variable is set to something that is not a positive number."""


def time_scale(environ: Optional[Mapping[str, str]] = None) -> float:
    """The factor from ``environ`` (default ``os.environ``); :class:`TimeScaleError` names a bad value."""
    raw = (os.environ if environ is None else environ).get(ENV, "").strip()
    if not raw:
        return 1.0
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise TimeScaleError("%s must be a number above 0 (0.25 makes the simulated start-up four times "
                             "shorter), not %r" % (ENV, raw))
    return value
