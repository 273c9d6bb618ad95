"""The arithmetic of benchmarks: percentiles, accept length and rate, spread, step time, break-even.

Definitions (each figure says where it came from; none is the server's cumulative number
unless labelled so):

* **output tok/s**: output tokens of the completed requests / the run's wall time (first request
  sent to last one finished), as ``sglang.benchmark.serving`` computes ``output_throughput``.
* **TTFT**: request sent -> first streamed chunk with a token. **ITL** (per chunk): the gaps between
  streamed chunks after the first (one chunk per decode or verify step; a speculative chunk brings
  several tokens). **TPOT** (per token): (E2E - TTFT) / (output tokens - 1). **E2E**: request sent -> stream
  end. The names are SGLang's bench_serving's (sglang 0.5.23 wheel, sglang/benchmark/serving.py:228 and :1172);
  the console's live per-token latency is TPOT as well.
* **accept length, per request**: each request's ``spec_accept_length`` weighted by its
  ``spec_verify_ct`` (= total output tokens / total verify steps).
* **accept length, metrics**: Δ``generation_tokens_total`` / Δ``spec_verify_calls_total`` from
  ``/metrics`` read just before and just after the run.
* **accept rate**: correct drafts / proposed drafts, summed over requests (``spec_num_correct_drafts``
  / ``spec_num_proposed_drafts``; SGLang 0.5.23's formula = correct / (steps x (draft tokens - 1))).
* **decode rate** of a request: tokens after the first chunk / (E2E - TTFT).
* **step time**: ms per decode step (plain) = 1000 / decode rate; ms per verify step
  (speculative) = 1000 x accept length / decode rate.
* **L\\* (break-even accept length)** = speculative step time / baseline step time: speculation
  pays only when its accept length exceeds L\\*.
* **acceptance by position**: P(draft position k accepted), k = 1..width, from the pooled
  ``spec_correct_drafts_histogram`` (``spectui.core.bench.positions``).
* **spread** of repeats: half the range, relative to the median: (max - min) / (2 x median).
  A speedup whose distance from 1.0 is within the two runs' spreads added is **noise**.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from statistics import median as _median

from spectui.core.bench.positions import acceptance_by_position

ACCEPT_RATE_FORMULA = "correct drafts / proposed drafts"
ACCEPT_RATE_DERIVED_FORMULA = "(accept length - 1) / (draft tokens - 1)"


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100), interpolated linearly between ranks (numpy's default)."""
    xs = sorted(v for v in values if v is not None)
    if not xs:
        return None
    if len(xs) == 1:
        return float(xs[0])
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summary(values: Sequence[float]) -> dict | None:
    """mean, p50, p90, p99 of ``values`` (None when there are none)."""
    xs = [v for v in values if v is not None]
    if not xs:
        return None
    return {"mean": sum(xs) / len(xs), "p50": percentile(xs, 50), "p90": percentile(xs, 90),
            "p99": percentile(xs, 99), "n": len(xs)}


def median(values: Iterable[float]) -> float | None:
    xs = [v for v in values if v is not None]
    return float(_median(xs)) if xs else None


def spread(values: Sequence[float]) -> float | None:
    """Half the range relative to the median; None for fewer than two values."""
    xs = [v for v in values if v is not None]
    if len(xs) < 2:
        return None
    m = median(xs)
    if not m:
        return None
    return (max(xs) - min(xs)) / (2.0 * m)


def is_noise(speedup: float | None, spread_a: float | None, spread_b: float | None) -> bool | None:
    """Whether ``speedup`` is inside the run-to-run spread; None when a spread is unknown."""
    if speedup is None or spread_a is None or spread_b is None:
        return None
    return abs(speedup - 1.0) <= spread_a + spread_b


def counter_delta(before: dict | None, after: dict | None, name: str) -> float | None:
    """Increase of a counter between two snapshots; a drop is a restart (the increase is ``after``)."""
    if not before or not after:
        return None
    a = (before.get("counters") or {}).get(name)
    b = (after.get("counters") or {}).get(name)
    if a is None or b is None:
        return None
    return b if b < a else b - a


def weighted_accept_length(records: Iterable[dict]) -> float | None:
    """Per-request accept lengths weighted by verify count (= tokens / verify steps)."""
    num = den = 0.0
    for r in records:
        sp = r.get("spec") or {}
        v = sp.get("verify_ct")
        if not v:
            continue
        length = sp.get("accept_length")
        if length is None:
            length = (r.get("output_tokens") or 0) / v
        num += length * v
        den += v
    return num / den if den else None


def pooled_histogram(records: Iterable[dict]) -> list[int] | None:
    """The correct-drafts histograms of all requests added index by index."""
    out: list[int] = []
    seen = False
    for r in records:
        h = (r.get("spec") or {}).get("histogram")
        if not h:
            continue
        seen = True
        if len(h) > len(out):
            out.extend([0] * (len(h) - len(out)))
        for i, n in enumerate(h):
            out[i] += int(n)
    return out if seen else None


def accept_rate(records: Sequence[dict], accept_length: float | None, draft_tokens: int | None) -> dict | None:
    """Accept rate with its formula: from the drafts counts when the server sent them, else derived."""
    correct = proposed = 0
    have = False
    for r in records:
        sp = r.get("spec") or {}
        if sp.get("correct_drafts") is not None and sp.get("proposed_drafts"):
            correct += sp["correct_drafts"]
            proposed += sp["proposed_drafts"]
            have = True
    if have and proposed:
        return {"value": correct / proposed, "formula": ACCEPT_RATE_FORMULA, "source": "meta_info",
                "correct": correct, "proposed": proposed}
    if accept_length is not None and draft_tokens and draft_tokens > 1:
        return {"value": (accept_length - 1.0) / (draft_tokens - 1.0), "formula": ACCEPT_RATE_DERIVED_FORMULA,
                "source": "derived"}
    return None


def decode_rate(record: dict) -> float | None:
    """Tokens per second of one request after its first chunk."""
    ttft, e2e = record.get("ttft_ms"), record.get("e2e_ms")
    n = (record.get("output_tokens") or 0) - (record.get("first_chunk_tokens") or 1)
    if ttft is None or e2e is None or n <= 0 or e2e <= ttft:
        return None
    return n / ((e2e - ttft) / 1000.0)


def step_ms(decode_tok_s: float | None, accept_length: float | None) -> float | None:
    """ms per decode step (no speculation: ``accept_length`` None) or per verify step."""
    if not decode_tok_s:
        return None
    return 1000.0 * (accept_length or 1.0) / decode_tok_s


def run_duration_s(records: Sequence[dict]) -> float | None:
    """Wall time from the first request sent to the last one finished, from the records alone."""
    spans = [(r["t_start"], r["t_start"] + (r.get("e2e_ms") or 0) / 1000.0) for r in records
             if r.get("t_start") is not None]
    if not spans:
        return None
    return max(e for _, e in spans) - min(s for s, _ in spans)


def run_stats(records: Sequence[dict], summary_doc: dict | None = None, *, draft_tokens: int | None = None,
              speculative: bool | None = None) -> dict:
    """Everything one run measured, as a JSON-ready dict (see the module docstring)."""
    summary_doc = summary_doc or {}
    measured = [r for r in records if not r.get("cancelled")]
    ok = [r for r in measured if r.get("ok")]
    errors = [r for r in measured if not r.get("ok")]
    duration = summary_doc.get("duration_s") or run_duration_s(measured)
    out_tokens = sum(r.get("output_tokens") or 0 for r in ok)
    tpots = [((r["e2e_ms"] - r["ttft_ms"]) / (r["output_tokens"] - 1)) for r in ok
             if r.get("ttft_ms") is not None and r.get("e2e_ms") is not None and (r.get("output_tokens") or 0) > 1]
    itls = [x for r in ok for x in (r.get("itl_ms") or [])]
    rates = [decode_rate(r) for r in ok]
    acc_req = weighted_accept_length(ok)
    before, after = summary_doc.get("metrics_before"), summary_doc.get("metrics_after")
    d_gen = counter_delta(before, after, "generation_tokens_total")
    d_ver = counter_delta(before, after, "spec_verify_calls_total")
    acc_metrics = d_gen / d_ver if d_gen is not None and d_ver else None
    metrics_note = None
    for snap in (before, after):
        if snap and snap.get("error"):
            metrics_note = "/metrics: " + snap["error"]
    info_after = summary_doc.get("server_info_after") or {}
    flushed = bool((summary_doc.get("flush") or {}).get("flushed"))
    cumulative = info_after.get("avg_spec_accept_length")
    if speculative is None:
        speculative = acc_req is not None or bool(d_ver)
    accept_len = acc_req if acc_req is not None else acc_metrics
    decode = median(rates)
    hist = pooled_histogram(ok)
    return {
        "requests": len(measured),
        "completed": len(ok),
        "errors": len(errors),
        "error_messages": sorted({r.get("error") or "unknown error" for r in errors})[:5],
        "cancelled": len(records) - len(measured),
        "duration_s": duration,
        "output_tokens": out_tokens,
        "prompt_tokens": sum(r.get("prompt_tokens") or 0 for r in ok),
        "output_tok_s": out_tokens / duration if duration else None,
        "request_s": len(ok) / duration if duration else None,
        "ttft_ms": summary([r.get("ttft_ms") for r in ok]),
        "itl_ms": summary(itls),
        "tpot_ms": summary(tpots),
        "e2e_ms": summary([r.get("e2e_ms") for r in ok]),
        "decode_tok_s": decode,
        "speculative": bool(speculative),
        "accept_length": {
            "per_request": acc_req,
            "metrics": acc_metrics,
            "metrics_tokens": d_gen,
            "metrics_verify_calls": d_ver,
            "metrics_note": metrics_note,
            "server_cumulative": cumulative,
            "server_cumulative_since": "the /flush_cache before the run" if flushed else "server start",
        } if speculative else None,
        "accept_rate": accept_rate(ok, accept_len, draft_tokens) if speculative else None,
        "correct_drafts_histogram": hist,
        "acceptance_by_position": acceptance_by_position(ok) if speculative else None,
        "step_ms": step_ms(decode, accept_len if speculative else None),
        "step_kind": "verify" if speculative else "decode",
        "flushed": flushed,
    }
