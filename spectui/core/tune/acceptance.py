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

Per draft position (:func:`positions`): ``P(k) = survival[k]`` is the chance that position ``k`` of the
chain is accepted in a verify step, for ``k = 1..width`` (``width``: the drafts each verify step proposes,
``spec_num_proposed_drafts / spec_verify_ct``, i.e. ``speculative_num_draft_tokens - 1``, sglang 0.5.23
wheel, sglang/srt/managers/tokenizer_manager.py:3155-3157; the histogram itself is only as long as the
most correct drafts seen, sglang/srt/managers/schedule_batch.py:1566-1572). The accept length it implies is
``1 + P(1) + ... + P(width)``. The cost model of the marginal position: a verify step with ``k`` draft
positions costs ``verify(k) = verify(k-1) + c``, ``c`` the extra verify cost of one more position (given,
e.g. from the verify-cost probe; include the drafting of that position in it if it should count); each
token a step yields saves one plain decode step ``T``. Position ``k`` then yields ``P(k)`` tokens per step,
worth ``P(k) T``, for its ``c``: it pays while ``P(k) T >= c``. ``P`` never grows with ``k``, so the paying
positions are a prefix and the marginal position is the last of them (0: not even the first pays). This
prices each position against the decode time it saves, not against the speculative step's own throughput
``L(k) / verify(k)``; it is the rule for where the tail stops paying, not the throughput optimum.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

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


def pooled(histograms: Iterable[Sequence[int]]) -> list[int]:
    """Several correct-drafts histograms (one per request) added index by index."""
    out: list[int] = []
    for h in histograms:
        counts = [int(n) for n in h]
        out.extend([0] * (len(counts) - len(out)))
        for i, n in enumerate(counts):
            out[i] += n
    return out


def position_acceptance(histogram: Sequence[int], width: int) -> list[float]:
    """``[P(1), ..., P(width)]``: the share of verify steps that accepted draft position ``k``."""
    if width < 1:
        raise HistogramError("a verify step must propose at least one draft (width %d)" % width)
    if deepest(histogram) > width:
        raise HistogramError("the histogram has steps with %d correct drafts, more than the %d drafts a step "
                             "proposes" % (deepest(histogram), width))
    return survival(histogram, width)[1:]


@dataclass(frozen=True)
class Positions:
    """Acceptance per draft position of one or many requests (see the module docstring).

    ``accepted[k-1]`` is P(k); ``gain_ms[k-1]`` is P(k) times the decode step cost; ``marginal`` the last
    position whose gain is at least ``position_ms``, the extra verify cost of one more position."""

    width: int
    verify_steps: int
    accepted: tuple[float, ...]
    accept_length: float
    decode_ms: float
    position_ms: float
    gain_ms: tuple[float, ...]
    marginal: int


def positions(histograms: Sequence[int] | Iterable[Sequence[int]], width: int, decode_ms: float,
              position_ms: float) -> Positions:
    """P(position k accepted) for ``k = 1..width``, the accept length it implies and the marginal position,
    from one histogram (a list of counts) or many (pooled). ``decode_ms``: the plain decode step cost;
    ``position_ms``: the extra verify cost of one more draft position."""
    items = list(histograms)
    hist = pooled(items) if items and not isinstance(items[0], (int, float)) else [int(n) for n in items]
    if decode_ms <= 0 or position_ms < 0:
        raise HistogramError("the decode step cost must be positive and the per-position cost not negative")
    accepted = position_acceptance(hist, width)
    gains = tuple(p * decode_ms for p in accepted)
    marginal = sum(1 for g in gains if g >= position_ms)
    return Positions(width, sum(_counts(hist)), tuple(accepted), 1.0 + sum(accepted), decode_ms, position_ms,
                     gains, marginal)


def width_of(meta_infos: Iterable[Mapping]) -> int:
    """The drafts each verify step proposes, from finished requests' ``meta_info``:
    ``spec_num_proposed_drafts / spec_verify_ct`` (the same for every request of one server setting)."""
    widths = set()
    for meta in meta_infos:
        proposed, steps = meta.get("spec_num_proposed_drafts"), meta.get("spec_verify_ct")
        if proposed and steps:
            widths.add(int(proposed) // int(steps))
    if len(widths) != 1:
        raise HistogramError("the requests do not tell one draft width (%s)" % (sorted(widths) or "none"))
    return widths.pop()
