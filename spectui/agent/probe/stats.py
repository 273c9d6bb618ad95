"""Summary statistics of measured latencies: median, p99 (linear interpolation) and a stability check."""

from __future__ import annotations

import math

# The medians of the first and second half of a run may differ by this fraction and still
# count as stable.
STABLE_WITHIN = 0.10


def percentile(values, q):
    """The q-th percentile (0..100) with linear interpolation between closest ranks.

    The same definition as numpy's default: position ``(n - 1) * q / 100`` in the sorted values.
    """
    if not values:
        raise ValueError("no values")
    s = sorted(values)
    pos = (len(s) - 1) * (q / 100.0)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def summarize(values_ms):
    """n, median, p99, min, mean and the medians of each half (in order of measurement)."""
    n = len(values_ms)
    half = n // 2
    halves = [percentile(values_ms[:half], 50), percentile(values_ms[half:], 50)] if half else None
    out = {"n": n, "median_ms": percentile(values_ms, 50), "p99_ms": percentile(values_ms, 99),
           "min_ms": min(values_ms), "mean_ms": sum(values_ms) / n,
           "halves_median_ms": halves, "stable": None}
    if halves and max(halves) > 0:
        out["stable"] = abs(halves[0] - halves[1]) / max(halves) <= STABLE_WITHIN
    return out


def combine_ranks(per_rank):
    """One time per iteration from every rank's times: the slowest rank's (a step waits for it)."""
    lengths = set(len(t) for t in per_rank)
    if len(lengths) != 1:
        raise ValueError("the ranks measured different iteration counts: %s" % sorted(lengths))
    return [max(ts) for ts in zip(*per_rank)]
