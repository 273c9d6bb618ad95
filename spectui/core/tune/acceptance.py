"""Accept length from a correct-drafts histogram, for the measured setting and for others.

The histogram is SGLang's ``spec_correct_drafts_histogram`` pooled over a run's requests: index
``i`` counts the verify steps in which ``i`` drafted tokens were correct (sglang 0.5.23 wheel,
``meta_info`` of a finished request; ``spectui.core.bench.stats.pooled_histogram`` adds them up).
A verify step emits its correct drafts plus one token of the target model's own, so the accept
length of the run is ``1 + sum_i i h_i / sum_i h_i``.

``survival(h)[j]`` is the share of verify steps with at least ``j`` correct drafts. A chain
drafter (EAGLE-style, topk 1) accepts a prefix of its chain, and its first ``k'`` drafts do not
depend on how many follow them, so with ``k' <= k`` steps the same run would have accepted
``min(i, k')`` drafts where it accepted ``i``:

    L(k') = 1 + sum_i h_i min(i, k') / sum_i h_i = 1 + survival[1] + ... + survival[k']

That is exact. Deeper than the run drafted, nothing was observed: the share surviving each
further position is extrapolated with the conditional acceptance of the last positions
(``tail_rate``), held constant. Trees (EAGLE topk > 1, NGRAM) are not prefixes of one chain; for
them the same arithmetic, applied to the tree's depth cap, is a model.
"""

from __future__ import annotations

from collections.abc import Sequence

from spectui.core.tune.errors import TuneError

TAIL_POSITIONS = 2  # how many of the deepest observed positions the extrapolation pools


class HistogramError(TuneError):
    """A histogram that cannot give an accept length (empty, negative counts)."""


def _counts(histogram: Sequence[int]) -> list[int]:
    counts = [int(n) for n in histogram]
    if any(n < 0 for n in counts):
        raise HistogramError("the correct-drafts histogram has a negative count")
    if not sum(counts):
        raise HistogramError("the correct-drafts histogram counts no verify steps")
    return counts


def deepest(histogram: Sequence[int]) -> int:
    """The largest number of correct drafts any verify step had."""
    counts = _counts(histogram)
    return max(i for i, n in enumerate(counts) if n)


def survival(histogram: Sequence[int], depth: int | None = None) -> list[float]:
    """``[s_0, s_1, ..., s_depth]``: the share of verify steps with at least ``j`` correct drafts."""
    counts = _counts(histogram)
    total = float(sum(counts))
    depth = len(counts) - 1 if depth is None else depth
    out, tail = [], float(sum(counts))
    for j in range(depth + 1):
        out.append(tail / total if j < len(counts) else 0.0)
        if j < len(counts):
            tail -= counts[j]
    return out


def accept_length(histogram: Sequence[int], depth: int | None = None) -> float:
    """``1 + sum_i h_i min(i, depth) / sum_i h_i`` (all of it without ``depth``)."""
    counts = _counts(histogram)
    cap = len(counts) if depth is None else int(depth)
    total = float(sum(counts))
    return 1.0 + sum(n * min(i, cap) for i, n in enumerate(counts)) / total


def conditional_rates(histogram: Sequence[int], depth: int) -> list[float | None]:
    """``q_j = s_j / s_(j-1)`` for ``j = 1..depth``: the chance position ``j`` is accepted given
    that all before it were (None where no step reached ``j - 1``)."""
    s = survival(histogram, depth)
    return [s[j] / s[j - 1] if s[j - 1] > 0 else None for j in range(1, depth + 1)]


def tail_rate(histogram: Sequence[int], depth: int, positions: int = TAIL_POSITIONS) -> float:
    """The conditional acceptance of the deepest ``positions`` observed positions, pooled:
    ``(s_(D-m+1) + ... + s_D) / (s_(D-m) + ... + s_(D-1))`` with ``D = depth``, ``m = positions``."""
    if depth < 1:
        return 0.0
    m = max(1, min(positions, depth))
    s = survival(histogram, depth)
    den = sum(s[depth - m:depth])
    return sum(s[depth - m + 1:depth + 1]) / den if den > 0 else 0.0


def extrapolated_accept_length(histogram: Sequence[int], observed_depth: int, depth: int,
                               positions: int = TAIL_POSITIONS) -> float:
    """Accept length with ``depth`` positions when the run drafted ``observed_depth``: exact up to
    ``observed_depth``, then each further position accepted at ``tail_rate`` (held constant)."""
    if depth <= observed_depth:
        return accept_length(histogram, depth)
    s = survival(histogram, observed_depth)
    r = tail_rate(histogram, observed_depth, positions)
    extra = sum(s[observed_depth] * r ** m for m in range(1, depth - observed_depth + 1))
    return accept_length(histogram, observed_depth) + extra


def needed_rate(target: float, depth: int) -> float | None:
    """The constant per-position acceptance ``p`` with ``1 + p + p^2 + ... + p^depth = target``:
    what a drafter would need to reach accept length ``target`` in ``depth`` positions (None when
    no drafter can: ``target >= depth + 1``)."""
    if target <= 1.0:
        return 0.0
    if depth < 1 or target >= depth + 1:
        return None
    lo, hi = 0.0, 1.0
    for _ in range(60):
        p = (lo + hi) / 2
        if 1.0 + sum(p ** j for j in range(1, depth + 1)) < target:
            lo = p
        else:
            hi = p
    return (lo + hi) / 2
