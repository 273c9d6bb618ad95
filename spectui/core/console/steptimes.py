"""The step times a host's servers were measured at one request: what the live break-even L* rests on.

Pure functions over a series' values, and :class:`StepTimes`, one per host's console, which keeps them until
a new frame arrives (the speculative panel, the alerts and the probe read them every redraw or judgement).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from spectui.core.live import HostLink

MIN_FRAMES = 10    # frames at one request before a step time is given
MIN_ACCEPT = 3     # of which with an accept length (speculative servers)

StepTime = tuple[float, int]   # milliseconds per step, frames it rests on


def concurrency_one(accept: Sequence[float], throughput: Sequence[float], running: Sequence[float]
                    ) -> list[tuple[float | None, float]]:
    """(accept length or None, tok/s) of the frames taken with exactly one request running.

    The request count is sampled when a frame is taken while tok/s covers the window before
    it, so a frame counts only when the frame before it saw one request too (the window began
    and ended at one). SGLang updates its counters in steps, so single frames swing between 0
    and about twice the rate: the step times below average over all of these frames, zeros
    included, rather than trusting any one of them.
    """
    out = []
    prev = False
    for al, tps, rr in zip(accept, throughput, running):
        one = rr is not None and not math.isnan(rr) and int(rr) == 1
        before, prev = prev, one
        if not (one and before):
            continue
        if tps is None or math.isnan(tps) or tps < 0:
            continue
        out.append((None if al is None or math.isnan(al) else al, tps))
    return out


def baseline_step_ms(pairs: Sequence[tuple[float | None, float]]) -> StepTime | None:
    """Plain decode step time, 1 / (mean tok/s), and the number of frames it rests on."""
    if len(pairs) < MIN_FRAMES:
        return None
    rate = statistics.fmean(t for _, t in pairs)
    return (1000.0 / rate, len(pairs)) if rate > 0 else None


def speculative_step_ms(pairs: Sequence[tuple[float | None, float]]) -> StepTime | None:
    """Speculative step time, mean accept length / mean tok/s (one verify step yields L tokens)."""
    accepts = [a for a, _ in pairs if a is not None and a > 0]
    if len(pairs) < MIN_FRAMES or len(accepts) < MIN_ACCEPT:
        return None
    rate = statistics.fmean(t for _, t in pairs)
    return (1000.0 * statistics.fmean(accepts) / rate, len(pairs)) if rate > 0 else None


class StepTimes:
    """One host's servers' step times at one request, recomputed only when a new frame arrived."""

    def __init__(self) -> None:
        self._key = None
        self._steps: dict[str, tuple[str | None, StepTime | None]] = {}

    def steps(self, link: HostLink, algorithms: dict[str, str | None]) -> dict[str, tuple[str | None, StepTime | None]]:
        """Per server: (its speculative algorithm or None for a plain one, its step time or None)."""
        key = (id(link), tuple(sorted((n, id(s), s.latest.seq if s.latest else -1, len(s.accept_length),
                                      algorithms.get(n)) for n, s in link.series.items())))
        if key != self._key:
            self._key = key
            out = {}
            for n, s in link.series.items():
                algo = algorithms.get(n)
                pairs = concurrency_one(s.accept_length.values(), s.per_stream.values(), s.running_req.values())
                out[n] = (algo, speculative_step_ms(pairs) if algo else baseline_step_ms(pairs))
            self._steps = out
        return self._steps
