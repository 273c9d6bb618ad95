"""SGLang ``/metrics`` text -> snapshots, and what changed between snapshots.

Runs on the GPU host under the host's Python (3.8+). The exposition text is read with
``prometheus_client.parser.text_string_to_metric_families`` (SGLang depends on
prometheus_client, so its venv has it); it is imported lazily, and where it is missing
:func:`parse_metrics` raises :class:`MetricsUnavailable` with a sentence saying so. No
HTTP here: the caller fetches the text.

A :class:`MetricsSnapshot` keeps the ``sglang:`` metrics by their name without that
prefix, each folded over its label sets:

* counters (``generation_tokens_total``, ``spec_verify_calls_total``, ...; keyed by the
  sample name, which keeps ``_total`` where the parser strips it from the family name):
  the sum over all label sets (``is_streaming``, ``priority``, ranks, ...);
* the step counters (:data:`STEP_FAMILIES`) are also kept per label set (``step_series``: the
  ``category`` or ``mode`` label and the ranks; the model's path left out), at most
  :data:`STEP_SERIES_MAX` label sets per family in a frame (:meth:`MetricsSnapshot.step_pairs`);
* histograms (``time_to_first_token_seconds``, ...): bucket counts, ``_count`` and
  ``_sum`` summed per bucket bound over all label sets. A label set without its ``_count``
  line counts its ``+Inf`` bucket (the same number in a complete text); one without its
  ``_sum`` line leaves the histogram's sum unknown (``None``), and so its mean;
* gauges: a gauge is per scheduler, and summing e.g. ``token_usage`` over TP ranks
  would be wrong. Rule: within each DP group (``dp_rank`` label; all one group when
  absent) take the lowest-ranked series (smallest ``tp_rank``, ``pp_rank``, ... --
  "rank 0"; with ``--enable-metrics-for-all-schedulers`` the other TP ranks repeat
  it), then combine the DP groups: **sum** for load and throughput (``num_running_reqs``,
  ``num_queue_reqs``, ``gen_throughput``, ...), **mean** for per-step averages
  (``spec_accept_length``, ``spec_accept_rate``, ``cache_hit_rate``, ...), **max** for
  everything else (usage ratios such as ``token_usage``: the fullest rank is the one that
  matters; configuration such as ``spec_num_steps``). ``gauge_series`` keeps every
  series for a per-rank view.

Every release's names are read (:data:`RENAMED`, from the published wheels): names that
changed are stored under today's name. A text without ``# TYPE`` lines (a partial paste, a
proxy that drops comments) is read too: an untyped ``X_total`` is a counter, ``X_bucket``
with its ``X_count`` / ``X_sum`` a histogram, anything else a gauge.
``MetricsSnapshot.dp_ranks`` lists the ``dp_rank`` label values seen on gauges, so a
figure summed over DP groups can say over how many.

Over a window between snapshots (:func:`window_stats`, :class:`MetricsWindow`):

* counter increases, a counter that went down (a restart; ``/flush_cache`` on releases
  that reset counters) counting as a reset -- the increase is then the new value, as
  Prometheus' ``increase()`` does -- never as a negative delta;
* the exact accept length ``Δgeneration_tokens_total / Δspec_verify_calls_total``,
  ``None`` (and ``stale``) when there was no verify call in the window -- unlike the
  ``spec_accept_length`` gauge, which holds the last log interval's value while idle;
* p50 / p99 of time to first token, inter-token latency and end-to-end latency from the
  histogram bucket increases, interpolated linearly within a bucket as Prometheus'
  ``histogram_quantile`` does.
"""

from __future__ import annotations

import math
import time as _time
from collections import deque
from typing import Any, Deque, Dict, FrozenSet, Iterable, List, Optional, Tuple

__all__ = [
    "GAUGES",
    "COUNTERS",
    "HISTOGRAMS",
    "Histogram",
    "MetricsSnapshot",
    "MetricsUnavailable",
    "MetricsWindow",
    "STEP_FAMILIES",
    "STEP_SERIES_MAX",
    "WindowStats",
    "combine_gauge",
    "counter_increase",
    "histogram_increase",
    "histogram_quantile",
    "quantile_bound",
    "mode_key",
    "parse_metrics",
    "prometheus_client_missing",
    "snapshots_from",
    "window_stats",
]

PREFIX = "sglang:"

# The metrics spectui reads (SGLang 0.5.23 names, without the "sglang:" prefix).
GAUGES = (
    "num_running_reqs",
    "num_queue_reqs",
    "gen_throughput",
    "token_usage",
    "cache_hit_rate",
    "spec_accept_length",
    "spec_accept_rate",
    "spec_num_steps",
    "spec_num_draft_tokens",
)
COUNTERS = (
    "realtime_tokens_total",
    "prompt_tokens_total",
    "generation_tokens_total",
    "spec_verify_calls_total",
    "num_requests_total",
)
# Counters kept per label set as well (``step_series``): the device timer's seconds per forward category and the
# forward passes per mode, from which the client computes step costs (sglang 0.5.23 wheel,
# sglang/srt/observability/metrics_collector.py:737-741, :1054-1068). Names without the prefix, as
# spectui.core.stepcost.STEP_FAMILIES.
STEP_FAMILIES = (
    "forward_execution_seconds_total",
    "cuda_graph_passes_total",
    "scheduler_idle_seconds_total",
)
# At most this many label sets per step family reach a frame (the first in label order, the same every read).
STEP_SERIES_MAX = 64
# Labels left out of ``step_series``: the same on every series of one server (the model's path, which is long).
_STEP_LABELS_DROPPED = ("model_name",)
HISTOGRAMS = (
    "time_to_first_token_seconds",
    "inter_token_latency_seconds",
    "e2e_request_latency_seconds",
)

# Names of other releases -> the name spectui keys it by. Read from the wheels' collectors:
# ``sglang:num_requests_running`` / ``sglang:num_requests_waiting`` are the names of the
# first /metrics (its sample in SGLang's docs, November 2024; no PyPI wheel carries them:
# sglang 0.3.5.post2, sglang/srt/metrics/collector.py:41 and :69 already say
# ``num_running_reqs`` / ``num_queue_reqs``).
RENAMED = {
    "num_requests_running": "num_running_reqs",
    "num_requests_waiting": "num_queue_reqs",
}
# Histograms of one release only, kept under their own name (their meaning differs):
# ``time_per_output_token_seconds`` (sglang 0.3.5.post2 to 0.4.4, e.g. sglang 0.4.3,
# sglang/srt/metrics/collector.py:150) is observed on every output chunk with the request's
# mean time per output token so far, (now - first token) / (completion tokens - 1)
# (sglang 0.4.3, sglang/srt/managers/tokenizer_manager.py:912-915);
# ``inter_token_latency_seconds`` replaced it (sglang 0.4.3.post4, collector.py:190).

# How a gauge combines over DP groups (see the module docstring); others: max.
_GAUGE_SUM = frozenset((
    "num_running_reqs",
    "num_queue_reqs",
    "num_grammar_queue_reqs",
    "gen_throughput",
    "num_used_tokens",
    "num_retracted_reqs",
    "num_paused_reqs",
    "num_prefill_bootstrap_queue_reqs",
    "num_prefill_inflight_queue_reqs",
    "num_decode_prealloc_queue_reqs",
    "num_decode_transfer_queue_reqs",
))
_GAUGE_MEAN = frozenset((
    "spec_accept_length",
    "spec_accept_rate",
    "spec_cap_length",
    "spec_block_accept_length",
    "cache_hit_rate",
))
_RANK_LABELS = ("tp_rank", "pp_rank", "moe_ep_rank", "ep_rank", "attn_cp_rank", "moe_dp_rank")


class MetricsUnavailable(RuntimeError):
    """The host's Python cannot read /metrics (prometheus_client is missing)."""


def prometheus_client_missing() -> Optional[str]:
    """``None`` when prometheus_client can be imported, else a sentence for the operator."""
    try:
        from prometheus_client.parser import text_string_to_metric_families  # noqa: F401
    except ImportError:
        return (
            "prometheus_client is not installed in the host's Python, so /metrics cannot be "
            "read; install it there (pip install prometheus-client) or watch the log panels."
        )
    return None


class Histogram:
    """Cumulative bucket counts ``[(upper bound, count), ...]`` ascending, ``+Inf`` last.

    ``count`` is ``None`` only where the text had neither ``_count`` nor a ``+Inf`` bucket;
    ``sum`` is ``None`` where a ``_sum`` line was missing."""

    __slots__ = ("buckets", "count", "sum")

    def __init__(self, buckets: List[Tuple[float, float]], count: Optional[float], sum: Optional[float]) -> None:
        self.buckets = buckets
        self.count = count
        self.sum = sum

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Histogram)
            and self.buckets == other.buckets
            and self.count == other.count
            and self.sum == other.sum
        )

    def __repr__(self) -> str:
        return "Histogram(count=%r, sum=%r, buckets=%r)" % (self.count, self.sum, self.buckets)


class MetricsSnapshot:
    """One read of /metrics. ``taken_at`` is the caller's clock (monotonic seconds)."""

    __slots__ = ("taken_at", "gauges", "counters", "histograms", "gauge_series", "dp_ranks", "step_series")

    def __init__(
        self,
        taken_at: float,
        gauges: Dict[str, float],
        counters: Dict[str, float],
        histograms: Dict[str, Histogram],
        gauge_series: Dict[str, List[Tuple[Dict[str, str], float]]],
        dp_ranks: Optional[List[str]] = None,
        step_series: Optional[Dict[str, Dict[Tuple[Tuple[str, str], ...], float]]] = None,
    ) -> None:
        self.taken_at = taken_at
        self.gauges = gauges
        self.counters = counters
        self.histograms = histograms
        self.gauge_series = gauge_series
        self.dp_ranks = dp_ranks or []
        # family (:data:`STEP_FAMILIES`) -> sorted label pairs -> value, for the families the text has
        self.step_series = step_series or {}

    def step_pairs(self) -> Dict[str, List[List[Any]]]:
        """``{family: [[{label: value}, number], ...]}`` (the frame's ``step_series``, the JSON form
        ``spectui.core.stepcost.series_from_pairs`` reads): at most :data:`STEP_SERIES_MAX` label sets per
        family, the first in label order, so every read keeps the same ones."""
        return {family: [[dict(key), by[key]] for key in sorted(by)[:STEP_SERIES_MAX]]
                for family, by in self.step_series.items() if by}

    def to_dict(self) -> Dict[str, Any]:
        """JSON-ready: gauges and counters as numbers, histograms as bucket lists
        (``+Inf`` written as the string ``"+Inf"``)."""
        return {
            "taken_at": self.taken_at,
            "dp_ranks": list(self.dp_ranks),
            "gauges": dict(self.gauges),
            "counters": dict(self.counters),
            "histograms": {
                name: {
                    "count": h.count,
                    "sum": h.sum,
                    "buckets": [["+Inf" if math.isinf(le) else le, c] for le, c in h.buckets],
                }
                for name, h in self.histograms.items()
            },
        }

    def __repr__(self) -> str:
        return "MetricsSnapshot(taken_at=%r, gauges=%r, counters=%r, histograms=%r)" % (
            self.taken_at, self.gauges, self.counters, sorted(self.histograms),
        )


# ---------------------------------------------------------------------------
# Reading the exposition text
# ---------------------------------------------------------------------------


def _rank_key(labels: Dict[str, str]) -> Tuple[int, ...]:
    key = []
    for name in _RANK_LABELS:
        try:
            key.append(int(labels.get(name, 0)))
        except ValueError:
            key.append(0)
    return tuple(key)


def _combine(values: List[float], how: str) -> float:
    if how == "sum":
        return math.fsum(values)
    if how == "mean":
        return math.fsum(values) / len(values)
    return max(values)


def combine_gauge(name: str, series: List[Tuple[Dict[str, str], float]]) -> float:
    """One value for a gauge from its series (the rule in the module docstring)."""
    how = "sum" if name in _GAUGE_SUM else "mean" if name in _GAUGE_MEAN else "max"
    groups: Dict[str, List[Tuple[Dict[str, str], float]]] = {}
    for labels, value in series:
        groups.setdefault(labels.get("dp_rank", ""), []).append((labels, value))
    per_group = []
    for members in groups.values():
        lowest = min(_rank_key(labels) for labels, _ in members)
        chosen = [value for labels, value in members if _rank_key(labels) == lowest]
        per_group.append(_combine(chosen, how))
    return _combine(per_group, how)


def mode_key(counter: str, mode: str) -> str:
    """The key of one ``mode`` of a counter in :attr:`MetricsSnapshot.counters`:
    ``realtime_tokens_total{mode=decode}``."""
    return "%s{mode=%s}" % (counter, mode)


_UNTYPED = ("unknown", "untyped")  # prometheus_client >= 0.18 says "unknown", older "untyped"


class _Reading(object):
    """What one exposition text holds, keyed by the names in :data:`GAUGES` etc."""

    def __init__(self) -> None:
        self.gauge_series: Dict[str, List[Tuple[Dict[str, str], float]]] = {}
        self.counters: Dict[str, float] = {}
        self.step_series: Dict[str, Dict[Tuple[Tuple[str, str], ...], float]] = {}
        # histogram -> label set (without ``le``) -> {"buckets": {le: count}, "count": .., "sum": ..}
        self.hist_parts: Dict[str, Dict[Tuple[Tuple[str, str], ...], Dict[str, Any]]] = {}

    def gauge(self, base: str, labels: Dict[str, str], value: float) -> None:
        if not math.isnan(value):
            self.gauge_series.setdefault(base, []).append((dict(labels), value))

    def counter(self, key: str, labels: Dict[str, str], value: float) -> None:
        self.counters[key] = self.counters.get(key, 0.0) + value
        if key in STEP_FAMILIES:
            series = self.step_series.setdefault(key, {})
            lkey = tuple(sorted((k, v) for k, v in labels.items() if k not in _STEP_LABELS_DROPPED))
            series[lkey] = series.get(lkey, 0.0) + value
        mode = labels.get("mode")
        if mode is not None:  # realtime_tokens_total{mode="decode"}: also per mode
            mkey = mode_key(key, mode)
            self.counters[mkey] = self.counters.get(mkey, 0.0) + value

    def histogram(self, base: str, part: str, labels: Dict[str, str], value: float) -> None:
        series = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        parts = self.hist_parts.setdefault(base, {}).setdefault(series, {"buckets": {}, "count": None, "sum": None})
        if part == "bucket":
            le = float(labels.get("le", "nan"))
            if not math.isnan(le):
                parts["buckets"][le] = parts["buckets"].get(le, 0.0) + value
        else:
            parts[part] = (parts[part] or 0.0) + value

    def histograms(self) -> Dict[str, Histogram]:
        """Each histogram summed over its label sets (the rule in the module docstring)."""
        out = {}
        for base, by_series in self.hist_parts.items():
            buckets: Dict[float, float] = {}
            count: Optional[float] = 0.0
            total: Optional[float] = 0.0
            for parts in by_series.values():
                for le, value in parts["buckets"].items():
                    buckets[le] = buckets.get(le, 0.0) + value
                own = parts["count"] if parts["count"] is not None else parts["buckets"].get(math.inf)
                count = None if count is None or own is None else count + own
                total = None if total is None or parts["sum"] is None else total + parts["sum"]
            if buckets:
                out[base] = Histogram(sorted(buckets.items()), count, total)
        return out


def _read_untyped(reading: _Reading, samples: List[Tuple[str, Dict[str, str], float]]) -> None:
    """Samples without a ``# TYPE`` line, told apart by their names: ``X_total`` a counter,
    ``X_bucket`` (with ``le``) and the ``X_count`` / ``X_sum`` beside it a histogram, the rest
    gauges (``routing_key_all_req_count`` is a gauge: no ``_bucket`` goes with it)."""
    bucketed = set(name[: -len("_bucket")] for name, labels, _ in samples
                   if name.endswith("_bucket") and "le" in labels)
    for name, labels, value in samples:
        if name.endswith("_bucket") and name[: -len("_bucket")] in bucketed:
            reading.histogram(name[: -len("_bucket")], "bucket", labels, value)
        elif name.endswith("_count") and name[: -len("_count")] in bucketed:
            reading.histogram(name[: -len("_count")], "count", labels, value)
        elif name.endswith("_sum") and name[: -len("_sum")] in bucketed:
            reading.histogram(name[: -len("_sum")], "sum", labels, value)
        elif name.endswith("_total"):
            reading.counter(name, labels, value)
        else:
            reading.gauge(name, labels, value)


def _renamed(series: Dict[str, Any]) -> Dict[str, Any]:
    """Store other releases' names under today's (:data:`RENAMED`); today's name wins."""
    out = dict(series)
    for old, new in RENAMED.items():
        if old in out:
            value = out.pop(old)
            out.setdefault(new, value)
    return out


def parse_metrics(text: str, taken_at: Optional[float] = None, prefix: str = PREFIX) -> MetricsSnapshot:
    """Read SGLang's /metrics text into a :class:`MetricsSnapshot`.

    Raises :class:`MetricsUnavailable` when prometheus_client is missing and
    ``ValueError`` (from the parser) on text that is not Prometheus exposition format.
    """
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        raise MetricsUnavailable(prometheus_client_missing()) from None
    if taken_at is None:
        taken_at = _time.monotonic()
    reading = _Reading()
    untyped: List[Tuple[str, Dict[str, str], float]] = []
    for family in text_string_to_metric_families(text):
        if not family.name.startswith(prefix):
            continue
        base = family.name[len(prefix):]
        if family.type == "gauge":
            reading.gauge_series.setdefault(base, [])
            for sample in family.samples:
                if sample.name == family.name:
                    reading.gauge(base, sample.labels, sample.value)
        elif family.type == "counter":
            total_name = family.name + "_total"
            for sample in family.samples:
                if sample.name == total_name:
                    reading.counter(base + "_total", sample.labels, sample.value)
        elif family.type == "histogram":
            for sample in family.samples:
                part = sample.name[len(family.name) + 1:] if sample.name.startswith(family.name + "_") else None
                if part in ("bucket", "count", "sum"):
                    reading.histogram(base, part, sample.labels, sample.value)
        elif family.type in _UNTYPED:
            for sample in family.samples:
                if sample.name.startswith(prefix):
                    untyped.append((sample.name[len(prefix):], dict(sample.labels), sample.value))
    _read_untyped(reading, untyped)
    gauge_series = _renamed(reading.gauge_series)
    gauges = {name: combine_gauge(name, series) for name, series in gauge_series.items() if series}
    dp_ranks = sorted(set(labels["dp_rank"] for series in gauge_series.values() for labels, _ in series
                          if "dp_rank" in labels), key=lambda r: (len(r), r))
    return MetricsSnapshot(taken_at, gauges, reading.counters, reading.histograms(), gauge_series, dp_ranks,
                           reading.step_series)


# ---------------------------------------------------------------------------
# Windows
# ---------------------------------------------------------------------------


def counter_increase(prev: Optional[float], cur: Optional[float]) -> Tuple[Optional[float], bool]:
    """``(increase, reset)`` of a counter between two reads; a drop is a reset (the
    counter restarted from zero, so it rose by ``cur``). One that the earlier read lacks
    and the later one has rose from zero: SGLang's labelled counters and histograms have
    no sample until their first increment (sglang 0.5.23 wheel,
    sglang/srt/observability/metrics_collector.py:1855-1863, :2109-2136), so a fresh
    server's first requests would be lost. ``None`` when the later read lacks it."""
    if cur is None:
        return None, False
    if prev is None:
        return cur, False
    if cur < prev:
        return cur, True
    return cur - prev, False


def _minus(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return None if a is None or b is None else a - b


def _plus(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return None if a is None or b is None else a + b


def histogram_increase(prev: Optional[Histogram], cur: Optional[Histogram]) -> Tuple[Optional[Histogram], bool]:
    """``(bucket increases, reset)`` between two reads of one histogram. Any count going
    down, or the bucket bounds changing, is a reset: the increase is then ``cur`` itself.
    A count or sum missing from either read is missing from the increase; a histogram the
    earlier read lacks rose from zero (see :func:`counter_increase`)."""
    if cur is None:
        return None, False
    if prev is None:
        return Histogram(list(cur.buckets), cur.count, cur.sum), False
    if _histogram_reset(prev, cur):
        return Histogram(list(cur.buckets), cur.count, cur.sum), True
    return (
        Histogram(
            [(le, c - p) for (le, c), (_, p) in zip(cur.buckets, prev.buckets)],
            _minus(cur.count, prev.count),
            _minus(cur.sum, prev.sum),
        ),
        False,
    )


def _histogram_reset(prev: Histogram, cur: Histogram) -> bool:
    """Whether ``cur`` is a reset of ``prev``: its bucket bounds changed, or a count went down."""
    count = _minus(cur.count, prev.count)
    return ([le for le, _ in prev.buckets] != [le for le, _ in cur.buckets] or (count is not None and count < 0)
            or any(c < p for (_, c), (_, p) in zip(cur.buckets, prev.buckets)))


def _add_histograms(a: Optional[Histogram], b: Histogram) -> Histogram:
    if a is None or [le for le, _ in a.buckets] != [le for le, _ in b.buckets]:
        return b  # bounds changed (a restart with other buckets): keep the newer part
    return Histogram(
        [(le, x + y) for (le, x), (_, y) in zip(a.buckets, b.buckets)],
        _plus(a.count, b.count),
        _plus(a.sum, b.sum),
    )


def histogram_quantile(q: float, hist: Optional[Histogram]) -> Optional[float]:
    """The ``q``-quantile (0..1) of a histogram, as Prometheus' ``histogram_quantile``:
    find the bucket holding rank ``q x count`` and interpolate linearly inside it (the
    first bucket starting at 0); a rank in the ``+Inf`` bucket gives the largest finite
    bound. ``None`` for an empty histogram."""
    if hist is None or not hist.buckets:
        return None
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    buckets = list(hist.buckets)
    if not math.isinf(buckets[-1][0]):
        return None  # no +Inf bucket: not a valid Prometheus histogram
    # Cumulative counts must not decrease (Prometheus fixes that the same way).
    fixed = []
    running = 0.0
    for le, count in buckets:
        running = max(running, count)
        fixed.append((le, running))
    total = fixed[-1][1]
    if total <= 0:
        return None
    if len(fixed) < 2:
        return None
    rank = q * total
    index = next(i for i, (_, count) in enumerate(fixed) if count >= rank)
    if index == len(fixed) - 1:
        return fixed[-2][0]
    upper, count_upper = fixed[index]
    if index == 0:
        if upper <= 0:
            return upper
        lower, count_lower = 0.0, 0.0
    else:
        lower, count_lower = fixed[index - 1]
    in_bucket = count_upper - count_lower
    if in_bucket <= 0:
        return upper
    return lower + (upper - lower) * (rank - count_lower) / in_bucket


def quantile_bound(q: float, hist: Optional[Histogram]) -> Tuple[Optional[float], str]:
    """The ``q``-quantile as a bucket can tell it: ``(value, relation)``.

    ``relation`` is ``"="`` for a value interpolated between two bucket bounds, ``"<"``
    when the rank falls in the first bucket (all the histogram can say is "below its
    upper bound": interpolating from 0 would invent ``bound x q``, e.g. 50 ms and 99 ms
    for TTFT buckets starting at 0.1 s), and ``">"`` when it falls in the ``+Inf`` bucket
    (above the largest finite bound). ``(None, "=")`` for an empty histogram."""
    value = histogram_quantile(q, hist)
    if value is None or hist is None:
        return None, "="
    buckets = hist.buckets
    total = max(c for _, c in buckets)
    rank = q * total
    first_le, first_count = buckets[0]
    if first_count >= rank and not math.isinf(first_le):
        return first_le, "<"
    if len(buckets) >= 2 and buckets[-2][1] < rank:
        return buckets[-2][0], ">"
    return value, "="


def histogram_mean(hist: Optional[Histogram]) -> Optional[float]:
    """``_sum / _count``: the exact mean of the observations (no bucket artefact); ``None``
    without observations or without a ``_sum``."""
    if hist is None or hist.sum is None or not hist.count or hist.count <= 0:
        return None
    return hist.sum / hist.count


class WindowStats:
    """What happened between two snapshots. Counts are increases; ``*_p50`` / ``*_p99``
    in seconds; ``ttft`` / ``itl`` / ``tpot`` the histograms' increases; ``None`` where the
    metrics lack the data."""

    __slots__ = (
        "elapsed_s",
        "accept_length",
        "stale",
        "generation_tokens",
        "prompt_tokens",
        "verify_calls",
        "requests",
        "generation_tokens_per_s",
        "decode_tokens",
        "decode_tokens_per_s",
        "ttft",
        "itl",
        "tpot",
        "ttft_p50",
        "ttft_p99",
        "itl_p50",
        "itl_p99",
        "e2e_p50",
        "e2e_p99",
        "resets",
    )

    def __init__(self, **fields: Any) -> None:
        for name in self.__slots__:
            setattr(self, name, fields.get(name))
        if self.resets is None:
            self.resets = []

    def to_dict(self) -> Dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    def __repr__(self) -> str:
        return "WindowStats(%s)" % ", ".join("%s=%r" % item for item in self.to_dict().items())


_Step = Tuple[FrozenSet[str], FrozenSet[str]]
_REGULAR: _Step = (frozenset(), frozenset())


def _odd_step(prev: MetricsSnapshot, cur: MetricsSnapshot) -> _Step:
    """The counters and histograms whose step from ``prev`` to ``cur`` does not telescope: one
    that only one of the two reads has, a reset (see :func:`counter_increase` and
    :func:`histogram_increase`), or a histogram whose ``_count`` or ``_sum`` is missing from
    one read only. Over steps where a metric is none of these, the sum of its step increases
    is the increase from the window's first read to its last."""
    pc, cc = prev.counters, cur.counters
    odd_c = set(pc.keys() ^ cc.keys())
    for name, value in cc.items():
        before = pc.get(name)
        if before is not None and value < before:
            odd_c.add(name)
    ph, ch = prev.histograms, cur.histograms
    odd_h = set(ph.keys() ^ ch.keys())
    for name, hist in ch.items():
        before_h = ph.get(name)
        if before_h is None:
            continue
        if ((before_h.count is None) != (hist.count is None) or (before_h.sum is None) != (hist.sum is None)
                or _histogram_reset(before_h, hist)):
            odd_h.add(name)
    if not odd_c and not odd_h:
        return _REGULAR
    return frozenset(odd_c), frozenset(odd_h)


def _pairs_increase(snapshots: List[MetricsSnapshot], steps: Optional[List[_Step]] = None,
                    ) -> Tuple[Dict[str, Optional[float]], Dict[str, Optional[Histogram]], List[str]]:
    """Counter and histogram increases over consecutive snapshots, resets handled step
    by step (so a reset in the middle of a window loses nothing but that step's start).

    ``steps[i]`` is :func:`_odd_step` of snapshots ``i`` and ``i + 1`` (computed here when not
    given: a :class:`MetricsWindow` keeps them, one per snapshot it adds). A metric that is
    regular in every step increases by its last read less its first; the others are summed
    step by step."""
    if steps is None:
        steps = [_odd_step(a, b) for a, b in zip(snapshots, snapshots[1:])]
    odd_c: Any = set()
    odd_h: Any = set()
    for step_c, step_h in steps:
        odd_c.update(step_c)
        odd_h.update(step_h)
    first, last = snapshots[0], snapshots[-1]
    counters: Dict[str, Optional[float]] = {}
    histograms: Dict[str, Optional[Histogram]] = {}
    for name in sorted(set(COUNTERS).union(first.counters, last.counters) - odd_c):
        counters[name] = counter_increase(first.counters.get(name), last.counters.get(name))[0]
    for name in sorted(set(HISTOGRAMS).union(first.histograms, last.histograms) - odd_h):
        histograms[name] = histogram_increase(first.histograms.get(name), last.histograms.get(name))[0]
    resets = _sum_steps(snapshots, sorted(odd_c), sorted(odd_h), counters, histograms) if odd_c or odd_h else []
    return counters, histograms, resets


def _sum_steps(snapshots: List[MetricsSnapshot], names: List[str], hnames: List[str],
               counters: Dict[str, Optional[float]], histograms: Dict[str, Optional[Histogram]]) -> List[str]:
    """Sum the step increases of ``names`` (counters) and ``hnames`` (histograms) into ``counters`` and
    ``histograms``; the names that reset, in the order they did."""
    resets: List[str] = []
    for prev, cur in zip(snapshots, snapshots[1:]):
        for name in names:
            inc, reset = counter_increase(prev.counters.get(name), cur.counters.get(name))
            if reset and name not in resets:
                resets.append(name)
            if inc is not None:
                counters[name] = (counters.get(name) or 0.0) + inc
            else:
                counters.setdefault(name, None)
        for name in hnames:
            hinc, reset = histogram_increase(prev.histograms.get(name), cur.histograms.get(name))
            if reset and name not in resets:
                resets.append(name)
            if hinc is not None:
                histograms[name] = _add_histograms(histograms.get(name), hinc)
            else:
                histograms.setdefault(name, None)
    return resets


def window_stats(prev: MetricsSnapshot, cur: MetricsSnapshot, *more: MetricsSnapshot) -> WindowStats:
    """Stats over the snapshots given, oldest first (two or more)."""
    return _window_stats([prev, cur] + list(more))


def _window_stats(snapshots: List[MetricsSnapshot], steps: Optional[List[_Step]] = None) -> WindowStats:
    counters, histograms, resets = _pairs_increase(snapshots, steps)
    elapsed = snapshots[-1].taken_at - snapshots[0].taken_at
    gen = counters.get("generation_tokens_total")
    decode = counters.get(mode_key("realtime_tokens_total", "decode"))
    if decode is None and all("realtime_tokens_total" in snap.counters for snap in snapshots):
        decode = 0.0  # the counter exists (prefill modes) but no decode series yet: nothing decoded
    verify = counters.get("spec_verify_calls_total")
    accept = gen / verify if gen is not None and verify else None
    ttft = histograms.get("time_to_first_token_seconds")
    itl = histograms.get("inter_token_latency_seconds")
    tpot = histograms.get("time_per_output_token_seconds")  # releases before 0.4.3.post4
    e2e = histograms.get("e2e_request_latency_seconds")
    return WindowStats(
        elapsed_s=elapsed,
        accept_length=accept,
        stale=accept is None,
        generation_tokens=gen,
        prompt_tokens=counters.get("prompt_tokens_total"),
        verify_calls=verify,
        requests=counters.get("num_requests_total"),
        generation_tokens_per_s=(gen / elapsed) if gen is not None and elapsed > 0 else None,
        decode_tokens=decode,
        decode_tokens_per_s=(decode / elapsed) if decode is not None and elapsed > 0 else None,
        ttft=ttft,
        itl=itl,
        tpot=tpot,
        ttft_p50=histogram_quantile(0.5, ttft),
        ttft_p99=histogram_quantile(0.99, ttft),
        itl_p50=histogram_quantile(0.5, itl),
        itl_p99=histogram_quantile(0.99, itl),
        e2e_p50=histogram_quantile(0.5, e2e),
        e2e_p99=histogram_quantile(0.99, e2e),
        resets=resets,
    )


class MetricsWindow:
    """Snapshots kept over a sliding span; ``update()`` returns the stats over it.

    ``span_s=None`` compares each snapshot with the one before it; ``span_s=30`` with the
    oldest one at most 30 s older (always at least the previous one).
    """

    def __init__(self, span_s: Optional[float] = None) -> None:
        self.span_s = span_s
        self._snapshots: Deque[MetricsSnapshot] = deque()
        # _steps[i]: what does not telescope from snapshot i - 1 to snapshot i (_steps[0] unused)
        self._steps: Deque[_Step] = deque()

    @property
    def latest(self) -> Optional[MetricsSnapshot]:
        return self._snapshots[-1] if self._snapshots else None

    def add(self, snapshot: MetricsSnapshot) -> None:
        """Add a snapshot, dropping those older than the span (at least the previous one stays)."""
        snaps = self._snapshots
        self._steps.append(_odd_step(snaps[-1], snapshot) if snaps else _REGULAR)
        snaps.append(snapshot)
        while len(snaps) > 2 and (self.span_s is None or snapshot.taken_at - snaps[0].taken_at > self.span_s):
            snaps.popleft()
            self._steps.popleft()

    def update(self, snapshot: MetricsSnapshot) -> Optional[WindowStats]:
        """Add a snapshot; the stats over the window ending at it (``None`` for the first)."""
        self.add(snapshot)
        if len(self._snapshots) < 2:
            return None
        return _window_stats(list(self._snapshots), list(self._steps)[1:])

    @property
    def snapshots(self) -> List[MetricsSnapshot]:
        return list(self._snapshots)

    def stats_over(self, span_s: float) -> Optional[WindowStats]:
        """Stats over the snapshots of the last ``span_s`` seconds (ending at the latest,
        at least the latest two); ``None`` with fewer than two snapshots."""
        snaps = self._snapshots
        if len(snaps) < 2:
            return None
        end = snaps[-1].taken_at
        chosen = [i for i, s in enumerate(snaps) if end - s.taken_at <= span_s + 1e-6]
        if len(chosen) < 2:
            chosen = [len(snaps) - 2, len(snaps) - 1]
        if chosen != list(range(chosen[0], len(snaps))):  # a clock that went back: compare what was chosen
            return window_stats(*(snaps[i] for i in chosen))
        steps = list(self._steps)
        return _window_stats([snaps[i] for i in chosen], steps[chosen[0] + 1:])

    def reset(self) -> None:
        self._snapshots.clear()
        self._steps.clear()


def snapshots_from(texts: Iterable[Tuple[float, str]]) -> List[MetricsSnapshot]:
    """``[(taken_at, text), ...]`` -> snapshots (a convenience for tests and replays)."""
    return [parse_metrics(text, taken_at) for taken_at, text in texts]
