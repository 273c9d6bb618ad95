"""Reading what ``sglang.benchmark.serving`` (old: ``sglang.bench_serving``) writes with ``--output-file``.

The tool appends one JSON object per run to a JSONL file. Keys, as SGLang 0.5.23 writes them
(``sglang/benchmark/serving.py``, ``benchmark()``): ``backend``, ``dataset_name``,
``request_rate`` (``Infinity`` for "all at once"), ``max_concurrency``, ``random_input_len``,
``random_output_len``, ``random_range_ratio``, ``server_info``, ``duration``, ``completed``,
``total_input_tokens``, ``total_output_tokens``, ``request_throughput``, ``input_throughput``,
``output_throughput``, ``{mean,median,std,p90,p95,p99}_{e2e_latency,ttft,tpot,itl}_ms``,
``concurrency``, ``accept_length``, ``max_output_tokens_per_s``, ``max_concurrent_requests``;
with ``--output-details`` also per-request lists ``input_lens``, ``output_lens``, ``ttfts``
(seconds), ``itls`` (seconds, per request), ``generated_texts``, ``errors``. Older releases
write a subset (no p90/p95, ``p95_itl_ms`` only), which reads the same way.

Its ``accept_length`` is ``server_info.internal_states[0].avg_spec_accept_length`` read after
the run: the server's cumulative figure since start or the last ``/flush_cache``. It is kept
labelled as such (``accept_length.server_cumulative``), never shown as a per-run figure.

The same tool prints a result block to stdout, which is what people paste into issues and notes::

    ============ Serving Benchmark Result ============
    Backend:                                 sglang
    Traffic request rate:                    inf
    Max request concurrency:                 4
    ...
    Accept length:                           3.46
    ----------------End-to-End Latency----------------
    Mean E2E Latency (ms):                   792.78
    ...
    ==================================================

Each row is ``"{:<40} {:<10}"`` (label, value; floats with two decimals). The rows by release, read
from the published wheels:

- 0.2.0 (``sglang/bench_serving.py:598-648``): Backend, Traffic request rate, Successful requests,
  Benchmark duration (s), Total input tokens, Total generated tokens (and retokenized), Request /
  Input token / Output token throughput; Mean and Median E2E Latency; Mean, Median and P99 of TTFT,
  TPOT and ITL (section "Inter-token Latency").
- 0.3.6 (``sglang/bench_serving.py:940-995``) adds Total token throughput (tok/s).
- 0.4.0 (``sglang/bench_serving.py:983``) adds the concurrency row, spelt ``Max reqeuest
  concurrency:`` until 0.4.10 (``:1472``), with ``not set`` when there was no limit.
- 0.4.3 (``sglang/bench_serving.py:1047``) adds ``Concurrency:`` (mean requests in flight).
- 0.4.6 (``sglang/bench_serving.py:1153``) adds ``Accept length:``, printed only when the server
  reports one, and drops the TPOT section (back in 0.5.6); ITL gains P95 and Max.
- 0.5.6 (``sglang/bench_serving.py:2097-2181``) adds Total input text / vision tokens, Peak output
  token throughput (tok/s) and Peak concurrent requests; 0.5.10 adds P90/P99 E2E Latency.
- 0.5.15 (``sglang/benchmark/serving.py:1547-1709``; ``sglang.bench_serving`` still runs it) prints
  Mean, Median, P90, P95, P99 of E2E, TTFT, TPOT and ITL, and an optional Cache Hit section.
- 0.5.23 (``sglang/benchmark/serving.py:1681-1845``) prints the same; ``Accept length`` is still
  ``server_info["internal_states"][0]["avg_spec_accept_length"]`` (``:1654``), the cumulative figure,
  so it is labelled as the JSONL one is. No release up to 0.5.23 prints an acceptance-rate section
  (vLLM's benchmark prints one under the same header, without a ``Backend:`` row).

A printed block becomes the same row dict a JSONL line is (``mean_ttft_ms``, ``accept_length``,
...), so both import alike; its figures are the printed, two-decimal ones.

Before a row becomes a run its figures are checked (:func:`check_row`): counts are whole numbers
from 0, durations, rates, latencies and the accept length numbers from 0 (the accept length is
accepted tokens over verify steps, ``sglang 0.5.23 wheel,
sglang/srt/managers/scheduler_components/internal_state.py:243``), the concurrency limit at least
1; the first one out of range ends the import in one sentence that names it, and nothing is
kept. Text over :data:`IMPORT_LIMIT_BYTES` is refused before it is parsed.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from spectui.agent.servers.spec_settings import decode_server_info, launch_settings
from spectui.core.bench.result import RunResult
from spectui.core.bench.stats import run_stats
from spectui.core.errors import SpectuiError
from spectui.core.textsafe import visible

TOOL = "sglang.benchmark.serving"
QUANTILES = ("mean", "median", "p90", "p99")
METRICS = {"ttft_ms": "ttft", "itl_ms": "itl", "tpot_ms": "tpot", "e2e_ms": "e2e_latency"}


#: the most text one import reads: a long sweep's JSONL with per-request details fits many times over
IMPORT_LIMIT_BYTES = 16 << 20
#: skipped blocks named one by one; the rest are counted
SKIPPED_NAMED = 10


class SglangImportError(SpectuiError):
    """A file that is not sglang.benchmark.serving's JSONL output, or a figure in it out of range."""


def check_import_size(text: str, source: str) -> None:
    """Refuse ``text`` over :data:`IMPORT_LIMIT_BYTES` (UTF-8) in one sentence."""
    if len(text) * 4 <= IMPORT_LIMIT_BYTES:  # no character takes more than 4 bytes
        return
    size = len(text) if len(text) > IMPORT_LIMIT_BYTES else len(text.encode("utf-8", "surrogatepass"))
    if size > IMPORT_LIMIT_BYTES:
        raise SglangImportError(f"{source} is {size / (1 << 20):.1f} MiB, and history import reads at most "
                                f"{IMPORT_LIMIT_BYTES >> 20} MiB at a time, so nothing was imported; import it in parts")


# ---------------------------------------------------------------------------------------------
# The figures of a row, and their ranges
# ---------------------------------------------------------------------------------------------

#: whole numbers from 0
COUNTS = ("completed", "total_input_tokens", "total_input_text_tokens", "total_input_vision_tokens",
          "total_output_tokens", "total_output_tokens_retokenized", "max_concurrent_requests", "random_input_len",
          "random_output_len")
#: numbers from 0 (besides every ``*_ms`` figure)
AMOUNTS = ("duration", "request_throughput", "input_throughput", "output_throughput", "total_throughput",
           "max_output_tokens_per_s", "concurrency", "accept_length", "random_range_ratio")
#: per-request lists of ``--output-details``: (what each item is, how it is checked)
DETAILS = {"input_lens": "count", "output_lens": "count", "ttfts": "amount", "itls": "amounts", "errors": "text"}


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _range_problem(v: Any, kind: str) -> str | None:
    """Why ``v`` is not a ``kind`` (count, amount, limit, rate), or None when it is (None and NaN are "not
    given")."""
    if v is None:
        return None
    if kind == "rate" and isinstance(v, str):
        return None  # "trace": the rate of a replayed trace
    if not _is_number(v):
        return "not a number"
    if isinstance(v, float) and math.isnan(v):
        return None
    if kind == "count" and (v != v // 1 or math.isinf(v)):
        return "not a whole number"
    if kind == "limit" and v < 1:
        return "below 1"
    if kind == "rate" and v <= 0:
        return "not above 0"
    if v < 0:
        return "negative"
    return None


def _kind_of(key: str) -> str | None:
    if key in COUNTS:
        return "count"
    if key in AMOUNTS or key.endswith("_ms"):
        return "amount"
    if key == "max_concurrency":
        return "limit"
    if key == "request_rate":
        return "rate"
    return None


def _detail_problem(values: Any, kind: str) -> tuple[Any, str] | None:
    """The first bad item of a per-request list and why, or None."""
    if values is None:
        return None
    if not isinstance(values, list):
        return values, "not a list"
    for v in values:
        if kind == "text":
            if v is not None and not isinstance(v, str):
                return v, "not a text"
        elif kind == "amounts":
            inner = _detail_problem(v, "amount")
            if inner:
                return inner
        else:
            why = _range_problem(v, kind)
            if why:
                return v, why
    return None


def check_row(row: dict, where: str, name=lambda key: key) -> None:
    """Refuse the first figure of ``row`` out of range: one sentence, ``where`` (``FILE:LINE``) first, that
    names the field (``name(key)``: its printed row for a printed block) and its value."""
    for key, v in row.items():
        kind = _kind_of(key)
        bad = (v, _range_problem(v, kind)) if kind else _detail_problem(v, DETAILS[key]) if key in DETAILS else None
        if bad and bad[1]:
            value, why = bad
            shown = repr(value) if not isinstance(value, (dict, list)) else ("a map" if isinstance(value, dict)
                                                                            else "a list")
            raise SglangImportError(f"{where}: {name(key)} holds {visible(shown)[:60]}, which is {why}, so nothing "
                                    f"was imported")


def _finite(v: Any) -> Any:
    return None if isinstance(v, float) and (math.isinf(v) or math.isnan(v)) else v


def parse_sglang_jsonl(text: str, path: str = "<sglang output>") -> list[dict]:
    """The runs in a JSONL file written by the tool; ``SglangImportError`` names the bad line."""
    check_import_size(text, path)
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise SglangImportError(f"{path}:{n}: not a JSON line ({exc.msg}); is this sglang.benchmark.serving's "
                                    f"--output-file?") from None
        if not isinstance(row, dict) or "output_throughput" not in row or "duration" not in row:
            raise SglangImportError(f"{path}:{n}: this line lacks output_throughput and duration, so it is not a "
                                    f"result of sglang.benchmark.serving")
        rows.append(row)
    return rows


def records_from_sglang(row: dict, start: float | None = None) -> list[dict]:
    """Per-request records from an ``--output-details`` row (empty without details)."""
    ttfts = row.get("ttfts")
    if not isinstance(ttfts, list):
        return []
    out_lens = row.get("output_lens") or []
    in_lens = row.get("input_lens") or []
    itls = row.get("itls") or []
    errors = row.get("errors") or []
    records = []
    for i, ttft in enumerate(ttfts):
        gaps = [g * 1000.0 for g in (itls[i] if i < len(itls) and itls[i] else [])]
        err = errors[i] if i < len(errors) else ""
        ok = not err and ttft is not None and (out_lens[i] if i < len(out_lens) else 0) > 0
        ttft_ms = ttft * 1000.0 if ttft is not None else None
        records.append({
            "i": i, "ok": ok, "t_start": None, "ttft_ms": ttft_ms,
            "e2e_ms": (ttft_ms + sum(gaps)) if ttft_ms is not None else None,
            "prompt_tokens": in_lens[i] if i < len(in_lens) else None,
            "output_tokens": out_lens[i] if i < len(out_lens) else 0,
            "first_chunk_tokens": None, "itl_ms": gaps, "chunk_tokens": None,
            "finish_reason": None, "spec": None, "error": err or None,
        })
    return records


def apply_sglang_totals(stats: dict, row: dict) -> dict:
    """Overlay the tool's own run-level figures (its duration, throughput and percentiles)."""
    stats["source"] = TOOL
    stats["duration_s"] = _finite(row.get("duration"))
    stats["output_tok_s"] = _finite(row.get("output_throughput"))
    stats["request_s"] = _finite(row.get("request_throughput"))
    stats["output_tokens"] = row.get("total_output_tokens", stats.get("output_tokens"))
    stats["prompt_tokens"] = row.get("total_input_tokens", stats.get("prompt_tokens"))
    if row.get("completed") is not None:
        stats["completed"] = row["completed"]
    for ours, theirs in METRICS.items():
        got = {"mean": row.get(f"mean_{theirs}_ms"), "p50": row.get(f"median_{theirs}_ms"),
               "p90": row.get(f"p90_{theirs}_ms"), "p99": row.get(f"p99_{theirs}_ms")}
        if any(v is not None for v in got.values()):
            prev = stats.get(ours) or {}
            stats[ours] = {k: _finite(v) if v is not None else prev.get(k) for k, v in got.items()}
            stats[ours]["n"] = prev.get("n")
    acc = _finite(row.get("accept_length"))
    if acc:
        block = stats.get("accept_length") or {"per_request": None, "metrics": None, "metrics_tokens": None,
                                                "metrics_verify_calls": None, "metrics_note": None}
        block["server_cumulative"] = acc
        block["server_cumulative_since"] = "server start or the last /flush_cache (the tool's accept_length)"
        stats["accept_length"] = block
        stats["speculative"] = True
    return stats


def stats_from_sglang(row: dict) -> dict:
    records = records_from_sglang(row)
    stats = run_stats(records, {"duration_s": _finite(row.get("duration"))}, speculative=False)
    stats["speculative"] = False
    stats["accept_length"] = None
    stats["accept_rate"] = None
    return apply_sglang_totals(stats, row)


def result_from_row(row: dict, *, host: str = "imported", profile: str | None = None, source: str | None = None,
                    n: int = 0, name=lambda key: key):
    """One tool row as a :class:`RunResult` (engine ``sglang``, provenance from its ``server_info``); a figure
    out of range raises :class:`SglangImportError` (:func:`check_row`). Its run id is a hash of the row: the
    same run imported again has the same id."""
    check_row(row, f"{source or '<sglang output>'}:{n}", name)
    info = decode_server_info(row.get("server_info"))
    digest = hashlib.sha256(json.dumps(row, sort_keys=True, default=str).encode()).hexdigest()[:12]
    rate = _finite(row.get("request_rate")) if not isinstance(row.get("request_rate"), str) else None
    preset = {"name": row.get("tag") or f"sglang-{row.get('dataset_name', 'run')}", "dataset": row.get("dataset_name"),
              "input-len": row.get("random_input_len"), "output-len": row.get("random_output_len"),
              "num-prompts": row.get("completed"), "concurrency": row.get("max_concurrency"),
              "request-rate": rate, "source": source}
    spec = launch_settings(info)
    stats = stats_from_sglang(row)
    if spec and stats.get("accept_length") is None:
        stats["speculative"] = True
    return RunResult(
        run_id=f"sglang-{digest}", host=host, state="done", profile=profile or info.get("model_path"),
        preset=preset, concurrency=row.get("max_concurrency"), request_rate=rate, engine="sglang",
        sglang_version=info.get("version"), speculative=spec, stats=stats,
        summary={"imported_from": source, "line": n}, records=records_from_sglang(row), sglang_result=row,
    )


def import_sglang_file(path: str | Path, *, host: str = "imported", profile: str | None = None):
    """Every run in a tool JSONL file as :class:`RunResult` objects."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SglangImportError(f"cannot read {p}: {exc.strerror or exc}") from None
    return [result_from_row(row, host=host, profile=profile, source=str(p), n=i)
            for i, row in enumerate(parse_sglang_jsonl(text, str(p)), 1)]


# ---------------------------------------------------------------------------------------------
# The printed result block
# ---------------------------------------------------------------------------------------------

PRINTED = "sglang.bench_serving printed result"
HEADER = re.compile(r"=+\s*Serving Benchmark Result\s*=+")
CLOSING = re.compile(r"^={20,}$")
ROW = re.compile(r"^(?P<label>[A-Za-z][^:]*:)\s*(?P<value>\S.*?)?\s*$")
LATENCY_ROW = re.compile(r"^(mean|median|p90|p95|p99|max) (e2e latency|ttft|tpot|itl) \(ms\):$")
PRINTED_ROWS = {
    "backend:": "backend",
    "traffic request rate:": "request_rate",
    "max request concurrency:": "max_concurrency",
    "max reqeuest concurrency:": "max_concurrency",  # the spelling of 0.4.0 to 0.4.6 at least
    "successful requests:": "completed",
    "benchmark duration (s):": "duration",
    "total input tokens:": "total_input_tokens",
    "total input text tokens:": "total_input_text_tokens",
    "total input vision tokens:": "total_input_vision_tokens",
    "total generated tokens:": "total_output_tokens",
    "total generated tokens (retokenized):": "total_output_tokens_retokenized",
    "request throughput (req/s):": "request_throughput",
    "input token throughput (tok/s):": "input_throughput",
    "output token throughput (tok/s):": "output_throughput",
    "peak output token throughput (tok/s):": "max_output_tokens_per_s",
    "peak concurrent requests:": "max_concurrent_requests",
    "total token throughput (tok/s):": "total_throughput",
    "concurrency:": "concurrency",
    "accept length:": "accept_length",
}
TEXT_ROWS = ("backend",)


def _printed_value(key: str, text: str) -> Any:
    if key in TEXT_ROWS:
        return text
    low = text.lower()
    if low == "not set":
        return None
    if low in ("inf", "infinity"):
        return math.inf
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text  # "trace" for a request rate read from timestamps


def _row_key(label: str) -> str | None:
    low = " ".join(label.lower().split())
    if low in PRINTED_ROWS:
        return PRINTED_ROWS[low]
    m = LATENCY_ROW.match(low)
    if m:
        return f"{m.group(1)}_{m.group(2).replace(' ', '_')}_ms"
    return None


def _unquote(line: str) -> str:
    """A pasted line without markdown quote marks and indentation."""
    s = line.strip()
    while s.startswith(">"):
        s = s[1:].strip()
    return s


_LATENCY_WORDS = {"mean": "Mean", "median": "Median", "p90": "P90", "p95": "P95", "p99": "P99", "max": "Max",
                  "e2e_latency": "E2E Latency", "ttft": "TTFT", "tpot": "TPOT", "itl": "ITL"}
_PRINTED_LABELS = {key: label[:1].upper() + label[1:-1] for label, key in reversed(PRINTED_ROWS.items())}


def printed_label(key: str) -> str:
    """The row of a printed block that ``key`` was read from, as the tool prints it (``'Accept length'``)."""
    if key in _PRINTED_LABELS:
        return f"'{_PRINTED_LABELS[key]}'"
    m = re.fullmatch(r"(mean|median|p90|p95|p99|max)_(e2e_latency|ttft|tpot|itl)_ms", key)
    return f"'{_LATENCY_WORDS[m.group(1)]} {_LATENCY_WORDS[m.group(2)]} (ms)'" if m else key


def printed_block_count(text: str) -> int:
    return sum(1 for line in text.splitlines() if HEADER.search(line))


def parse_printed_blocks(text: str, path: str = "<pasted text>") -> tuple[list[dict], list[str]]:
    """Every printed result block in ``text`` as a JSONL-like row, and why any block was skipped.

    A block runs from its header to the closing ``=====`` line, the next header, or the end of the
    text (a paste cut short); lines it does not know (goodput, cache hits, shell prompts) are left.
    Each row carries ``_line``, the header's line number. The first :data:`SKIPPED_NAMED` skipped blocks
    are named, the others counted in one more reason.
    """
    check_import_size(text, path)
    rows: list[dict] = []
    skipped: list[str] = []
    current: dict | None = None

    def close() -> None:
        if current is None:
            return
        n = current.pop("_line")
        if "backend" not in current:
            skipped.append(f"{path}:{n}: that block has no Backend: row, so it is not sglang's (vLLM's benchmark "
                           f"prints the same header)")
        elif current.get("output_throughput") is None or current.get("duration") is None:
            skipped.append(f"{path}:{n}: that block ends before its Benchmark duration and Output token throughput "
                           f"rows")
        else:
            current["_line"] = n
            rows.append(current)

    for n, line in enumerate(text.splitlines(), 1):
        s = _unquote(line)
        if HEADER.search(s):
            close()
            current = {"_line": n}
            continue
        if current is None:
            continue
        if CLOSING.match(s):
            close()
            current = None
            continue
        m = ROW.match(s)
        if not m or m.group("value") is None:
            continue
        key = _row_key(m.group("label"))
        if key and key not in current:
            current[key] = _printed_value(key, m.group("value"))
    close()
    if len(skipped) > SKIPPED_NAMED:
        more = len(skipped) - SKIPPED_NAMED
        skipped[SKIPPED_NAMED:] = [f"{more:,} more block{'s' if more != 1 else ''} of {path} for the same reasons"]
    return rows, skipped


def results_from_printed(text: str, *, source: str, host: str = "imported", profile: str | None = None):
    """The runs of every printed block in ``text`` (:class:`RunResult`), and the skipped blocks' reasons."""
    rows, skipped = parse_printed_blocks(text, source)
    results = []
    for row in rows:
        line = row.pop("_line")
        r = result_from_row(row, host=host, profile=profile, source=source, n=line, name=printed_label)
        r.stats["source"] = PRINTED
        r.summary["format"] = "printed result block (figures rounded to 2 decimals)"
        results.append(r)
    return results, skipped


# ---------------------------------------------------------------------------------------------
# Which format a file is
# ---------------------------------------------------------------------------------------------

SPECTUI_EXPORT = "spectui JSON export"
SGLANG_JSONL = "sglang.benchmark.serving JSONL"
SGLANG_PRINTED = "printed sglang.bench_serving result"
EXPORT_KINDS = ("spectui-history", "runs", "comparison", "probe")


def detect_format(text: str) -> str | None:
    """:data:`SPECTUI_EXPORT`, :data:`SGLANG_JSONL`, :data:`SGLANG_PRINTED`, or None for none of them."""
    if text.lstrip()[:1] == "{":
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and doc.get("kind") in EXPORT_KINDS:
            return SPECTUI_EXPORT
    if printed_block_count(text):
        return SGLANG_PRINTED
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and lines[0].startswith("{"):
        return SGLANG_JSONL
    return None
