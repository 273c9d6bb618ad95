"""Printing comparisons and runs: plain text, Markdown (pastes into an issue), CSV and JSON.

Everything here reads the plain dicts that ``compare.build_comparison`` and
``RunResult.to_dict`` produce, so a comparison stored in history prints exactly as it did
when it was measured.
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from typing import Any

from spectui.core.bench.positions import acceptance_by_position, position_line

FORMATS = ("text", "markdown", "csv", "json")
ACCEPT_NOTE = ("accept len: per request, weighted by verify steps; in brackets: from the /metrics counters over the "
               "run (Δgeneration_tokens / Δspec_verify_calls)")
STEP_NOTE = ("step ms: per decode step (plain) or per verify step (speculative), from each request's decode rate; "
             "L* = speculative step time / baseline step time, the accept length at which speculation breaks even")
OVERLAP_MARK = "†"
OVERLAP_NOTE = "its latency and throughput are not those of a lone run"
FOREIGN_MARK = "‡"
FOREIGN_NOTE = "its figures are not those of a lone run"


def _num(x: Any, nd: int = 1) -> str:
    if x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x))):
        return "-"
    return f"{x:.{nd}f}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


def _clean(obj: Any) -> Any:
    """JSON without NaN/Infinity."""
    if isinstance(obj, float) and (math.isnan(obj) or math.isinf(obj)):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def to_json(obj: Any) -> str:
    return json.dumps(_clean(obj), indent=2, sort_keys=False)


# ---------------------------------------------------------------------------------------------
# Overlapped runs: another run measured the same server at the same time
# ---------------------------------------------------------------------------------------------

def _runs_phrase(names: list[str]) -> str:
    """``run 13``, ``runs 13 and 14``, ``runs 13, 14 and 15``."""
    if len(names) == 1:
        return f"run {names[0]}"
    return f"runs {', '.join(names[:-1])} and {names[-1]}"


def _ref(host: str | None, run_id: str, refs: dict | None) -> str:
    """A host run id as the reader knows it: its history id when ``refs`` ({(host, run_id): id}) has it."""
    return str((refs or {}).get((host, run_id), run_id))


def overlap_sentence(run: dict, refs: dict | None = None) -> str | None:
    """``overlapped with run 13: its latency and throughput are not those of a lone run`` (None: a lone run)."""
    others = run.get("overlapped_with") or []
    if not others:
        return None
    return f"overlapped with {_runs_phrase([_ref(run.get('host'), o, refs) for o in others])}: {OVERLAP_NOTE}"


# ---------------------------------------------------------------------------------------------
# Foreign load: the server served requests spectui did not send while the run measured
# ---------------------------------------------------------------------------------------------

def foreign_phrase(share: float, requests: int | None) -> str:
    """``9.0% of the tokens the server generated while it measured (3 requests) were not this run's``."""
    reqs = "" if requests is None else f" ({requests} request{'' if requests == 1 else 's'})"
    return f"{100 * share:.1f}% of the tokens the server generated while it measured{reqs} were not this run's"


def foreign_share(run: dict) -> float | None:
    """The run's measured foreign share (0 for a quiet run): of the tokens the server generated; of the requests it
    ran, where only requests in flight beside the run (longer than it) marked it. None where not measured or not
    known."""
    load = run.get("foreign_load") or {}
    if not load.get("known"):
        return None
    return _in_flight_share(load) or load.get("share")


def _in_flight_share(load: dict) -> float | None:
    """The in-flight share, where it alone marked the run (the counters saw no foreign request finish)."""
    flight = (load.get("in_flight") or {}).get("share") or 0.0
    if load.get("marked") and max(load.get("share") or 0.0, load.get("requests_share") or 0.0) < flight:
        return flight
    return None


def foreign_sentence(run: dict) -> str | None:
    """``shared its server: 9.0% of the tokens ...: its figures are not those of a lone run`` (None: not marked)."""
    load = run.get("foreign_load") or {}
    if not load.get("marked"):
        return None
    flight = _in_flight_share(load)
    if flight is not None:  # requests longer than the run: in flight beside it, finished after it
        return (f"shared its server: {100 * flight:.0f}% of the requests the server ran while it measured (up to "
                f"{load['in_flight'].get('max')} at once) were not this run's: {FOREIGN_NOTE}")
    return f"shared its server: {foreign_phrase(load['share'], load.get('foreign_requests'))}: {FOREIGN_NOTE}"


def foreign_detail(run: dict) -> str:
    """What a run's detail says of the load beside it, marked or not."""
    load = run.get("foreign_load")
    if load is None:
        return "foreign load not measured"
    if not load.get("known"):
        return f"foreign load not known ({load.get('why') or 'the server did not say'})"
    return f"{FOREIGN_MARK} {foreign_sentence(run)}" if load.get("marked") else \
        "no foreign load: the server served only spectui's requests while it measured"


def _with_mark(text: str, mark: bool, sign: str = FOREIGN_MARK) -> str:
    return f"{text} {sign}" if mark else text


def _marked(name: str, overlapped: bool) -> str:
    return f"{name} {OVERLAP_MARK}" if overlapped else name


def _row_overlapped(row: dict) -> bool:
    return any(cell.get("overlapped") for cell in row["cells"].values())


# ---------------------------------------------------------------------------------------------
# Comparison cells
# ---------------------------------------------------------------------------------------------

def _tok(cell: dict) -> str:
    t = cell["tok_s"]
    text = _num(t["median"])
    if t.get("spread") is not None:
        text += f" ±{100 * t['spread']:.1f}%"
    return _with_mark(text, bool(cell.get("foreign")))


def _speedup_foreign(cell: dict) -> bool:
    """A speedup made of a figure measured beside foreign load (the cell's, or its baseline's)."""
    return bool(cell.get("foreign") or cell.get("foreign_baseline"))


def _speedup(cell: dict, is_base: bool) -> str:
    if is_base:
        return "baseline"
    if cell.get("speedup") is None:
        return "-"
    return _with_mark(f"{cell['speedup']:.2f}x" + (" (noise)" if cell.get("noise") else ""), _speedup_foreign(cell))


def _accept(cell: dict) -> str:
    a = cell.get("accept_length")
    if not a:
        return "-"
    main = a.get("per_request")
    text = _num(main, 2) if main is not None else "-"
    if a.get("metrics") is not None:
        text += f" ({a['metrics']:.2f})"
    if main is None and a.get("metrics") is None and a.get("server_cumulative") is not None:
        text = f"{a['server_cumulative']:.2f} cumulative"
    return text


def _rate(cell: dict) -> str:
    r = cell.get("accept_rate")
    return "-" if not r else _pct(r["value"])


def _pair(d: dict | None) -> str:
    d = d or {}
    return f"{_num(d.get('p50'))} / {_num(d.get('p99'))}"


def _step(cell: dict) -> str:
    if cell.get("step_ms") is None:
        return "-"
    return f"{cell['step_ms']:.1f} {'verify' if cell.get('step_kind') == 'verify' else 'decode'}"


# SGLang's bench_serving names (sglang 0.5.23 wheel, sglang/bench_serving.py:10 re-exports sglang/benchmark/serving.py):
# ITL is the gap between streamed chunks (serving.py:228), a speculative chunk bringing several tokens; TPOT is
# (E2E - TTFT) / (output tokens - 1), per token (serving.py:1172). The console's live panel's per-token figure is
# TPOT too: one word, one meaning.
LATENCY_LABELS = (("ttft_ms", "TTFT"), ("itl_ms", "ITL per chunk"), ("tpot_ms", "TPOT per token"), ("e2e_ms", "E2E"))
COLUMNS = ("profile", "out tok/s", "speedup", "accept len", "accept rate", "TTFT p50/p99 ms", "ITL/chunk p50/p99 ms",
           "step ms", "L*")
PREDICTED_COLUMN = "pred. L*"


def _has_predicted(comp: dict) -> bool:
    return any(row.get("predicted_l_star") for row in comp["profiles"])


def _predicted(row: dict) -> str:
    p = row.get("predicted_l_star") or {}
    return _num(p.get("value"), 2)


def _rows_single(comp: dict) -> list[list[str]]:
    c = str(comp["concurrencies"][0])
    predicted = _has_predicted(comp)
    rows = []
    for row in comp["profiles"]:
        cell = row["cells"].get(c)
        name = _marked(row["name"], _row_overlapped(row))
        if row.get("failed") or not cell:
            line = [name, "failed" if row.get("failed") else "-"] + ["-"] * (len(COLUMNS) - 2)
        else:
            line = [name, _tok(cell), _speedup(cell, row["name"] == comp["baseline"]), _accept(cell),
                    _rate(cell), _pair(cell.get("ttft_ms")), _pair(cell.get("itl_ms")), _step(cell),
                    _num(cell.get("l_star"), 2)]
        if predicted:
            line.append(_predicted(row))
        rows.append(line)
    return rows


def _rows_sweep(comp: dict) -> tuple[list[str], list[list[str]]]:
    header = ["profile"] + [f"c={c}" for c in comp["concurrencies"]]
    rows = []
    for row in comp["profiles"]:
        line = [_marked(row["name"], _row_overlapped(row))]
        for c in comp["concurrencies"]:
            cell = row["cells"].get(str(c))
            if not cell:
                line.append("-")
                continue
            text = f"{_num(cell['tok_s']['median'])} tok/s"
            if row["name"] != comp["baseline"] and cell.get("speedup") is not None:
                text += f" {cell['speedup']:.2f}x" + ("~" if cell.get("noise") else "")
            text = _with_mark(text, _speedup_foreign(cell))
            if cell.get("l_star") is not None:
                acc = cell.get("accept_length") or {}
                length = acc.get("per_request") if acc.get("per_request") is not None else acc.get("metrics")
                text += f" L {_num(length, 2)}/L* {_num(cell['l_star'], 2)}"
            line.append(text)
        if _has_predicted(comp):
            line.append(_predicted(row))
        rows.append(line)
    if _has_predicted(comp):
        header.append(PREDICTED_COLUMN)
    return header, rows


def _grid(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    lines = ["  ".join(h.upper().ljust(w) for h, w in zip(header, widths)).rstrip()]
    for r in rows:
        lines.append("  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip())
    return "\n".join(lines)


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    def esc(s: str) -> str:
        return str(s).replace("|", "\\|")
    out = ["| " + " | ".join(esc(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        out.append("| " + " | ".join(esc(x) for x in r) + " |")
    return "\n".join(out)


def _title(comp: dict) -> list[str]:
    p = comp["preset"]
    conc = p["concurrency"]
    load = f"concurrency {', '.join(map(str, conc)) if isinstance(conc, list) else conc}"
    if p.get("request-rate"):
        load = f"{p['request-rate']:g} req/s Poisson, {load} at most"
    reps = comp.get("repeats") or 1
    lines = [
        f"{p['name']} on {comp['host']}: {p['dataset']}, {p['input-len']} words in, {p['output-len']} tokens out, "
        f"{p['num-prompts']} prompts, {load}, {reps} repeat{'s' if reps != 1 else ''}, seed {p['seed']}",
    ]
    gpus = comp.get("gpus") or []
    hw = f"{len(gpus)} x {gpus[0]}" if gpus and len(set(gpus)) == 1 else (", ".join(gpus) or "GPUs unknown")
    lines.append(f"{hw}; SGLang {comp.get('sglang_version') or '?'}; baseline {comp['baseline']}; "
                 f"engine {comp.get('engine', 'spectui')}; spectui {comp.get('spectui_version')}")
    if comp.get("state") != "complete":
        lines.append(f"INTERRUPTED: {comp.get('reason') or 'not every run finished'}")
    return lines


def _notes(comp: dict) -> list[str]:
    notes = []
    formula = None
    for row in comp["profiles"]:
        for cell in row["cells"].values():
            if cell.get("accept_rate"):
                formula = cell["accept_rate"]["formula"]
    if comp["concurrencies"] and len(comp["concurrencies"]) == 1:
        notes.append(ACCEPT_NOTE)
        if formula:
            notes.append(f"accept rate: {formula}")
        notes.append(STEP_NOTE)
        if (comp.get("repeats") or 1) > 1:
            notes.append("±: half the range of the repeats; (noise): the speedup is inside the spread of the two "
                         "profiles")
        else:
            notes.append("one repeat: no run-to-run spread, so no difference is marked as noise")
    else:
        notes.append("each cell: median output tok/s, speedup against the baseline (~ = within the run-to-run "
                     "spread), and for speculation the accept length against L*, the accept length needed to "
                     "break even")
    sources = []
    for row in comp["profiles"]:
        p = row.get("predicted_l_star")
        if not p:
            continue
        how = (f"the simulator's hardware model ({p['preset']})" if p.get("kind") == "sim-hardware-model"
               else "all-reduce measured on this host")
        step = "" if p.get("decode_step_from") != "baseline" else ", with this comparison's baseline decode step"
        sources.append(f"{row['name']} from probe {p.get('probe_id') or '?'} ({how}{step})")
    if sources:
        notes.append("pred. L*: the break-even accept length the verify-cost probe predicts at one request: "
                     + "; ".join(sources))
    errors = sum(cell.get("errors") or 0 for row in comp["profiles"] for cell in row["cells"].values())
    if errors:
        notes.append(f"{errors} request(s) failed; failed requests are not in the figures")
    sweep = len(comp["concurrencies"]) != 1
    for row in comp["profiles"]:
        for c, cell in row["cells"].items():
            where = f"{row['name']} at concurrency {c}" if sweep else row["name"]
            for run_id, others in sorted((cell.get("overlapped") or {}).items()):
                notes.append(f"{OVERLAP_MARK} {where}, run {run_id}, overlapped with {_runs_phrase(list(others))}: "
                             f"{OVERLAP_NOTE}")
            for run_id, f in sorted((cell.get("foreign") or {}).items()):
                notes.append(f"{FOREIGN_MARK} {where}, run {run_id}: {foreign_phrase(f['share'], f.get('requests'))}: "
                             f"{FOREIGN_NOTE}")
    if any(cell.get("foreign_baseline") for row in comp["profiles"] for cell in row["cells"].values()):
        notes.append(f"{FOREIGN_MARK} on a speedup: the baseline's figure it is set against was measured beside "
                     "requests spectui did not send")
    return notes


def position_lines(comp: dict) -> list[str]:
    """One line per speculative profile and concurrency: its acceptance per draft position."""
    out = []
    for row in comp["profiles"]:
        for c in comp["concurrencies"]:
            line = position_line((row["cells"].get(str(c)) or {}).get("acceptance_by_position"))
            if line:
                out.append(f"{row['name']} (C={c}): {line}")
    return out


def render_comparison(comp: dict, fmt: str = "text") -> str:
    """The comparison in ``fmt`` (``text``, ``markdown``, ``csv`` or ``json``)."""
    if fmt == "json":
        return to_json(comp)
    if fmt == "csv":
        return comparison_csv(comp)
    single = len(comp["concurrencies"]) == 1
    header, rows = (list(COLUMNS), _rows_single(comp)) if single else _rows_sweep(comp)
    if single and _has_predicted(comp):
        header.append(PREDICTED_COLUMN)
    if fmt == "markdown":
        out = ["**" + _title(comp)[0] + "**", "", *(_title(comp)[1:]), "", _md_table(header, rows), ""]
        out += [f"- {v}" for v in comp.get("verdicts") or []]
        out += [f"- {p}" for p in position_lines(comp)]
        out += [f"- {n}" for n in _notes(comp)]
        return "\n".join(out).rstrip() + "\n"
    if fmt != "text":
        raise ValueError(f"unknown format {fmt!r}: choose {', '.join(FORMATS)}")
    out = [*_title(comp), "", _grid(header, rows), ""]
    out += comp.get("verdicts") or []
    out += position_lines(comp)
    out += [""] + [f"  {n}" for n in _notes(comp)]
    return "\n".join(out).rstrip() + "\n"


CSV_FIELDS = ("profile", "concurrency", "baseline", "runs", "out_tok_s_median", "out_tok_s_min", "out_tok_s_max",
              "spread", "speedup", "noise", "accept_length_per_request", "accept_length_metrics", "accept_rate",
              "accept_rate_formula", "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "step_ms", "step_kind",
              "l_star", "errors", "interrupted_runs", "predicted_l_star", "overlapped_runs", "foreign_load_runs",
              "foreign_share_max")


def comparison_rows(comp: dict) -> list[dict]:
    """One flat row per profile and concurrency (the CSV's rows)."""
    out = []
    for row in comp["profiles"]:
        for c in comp["concurrencies"]:
            cell = row["cells"].get(str(c))
            if not cell:
                continue
            acc = cell.get("accept_length") or {}
            rate = cell.get("accept_rate") or {}
            out.append({
                "profile": row["name"], "concurrency": c, "baseline": row["name"] == comp["baseline"],
                "runs": cell["n"], "out_tok_s_median": cell["tok_s"]["median"], "out_tok_s_min": cell["tok_s"]["min"],
                "out_tok_s_max": cell["tok_s"]["max"], "spread": cell["tok_s"]["spread"], "speedup": cell.get("speedup"),
                "noise": cell.get("noise"), "accept_length_per_request": acc.get("per_request"),
                "accept_length_metrics": acc.get("metrics"), "accept_rate": rate.get("value"),
                "accept_rate_formula": rate.get("formula"), "ttft_p50_ms": cell["ttft_ms"]["p50"],
                "ttft_p99_ms": cell["ttft_ms"]["p99"], "itl_p50_ms": cell["itl_ms"]["p50"],
                "itl_p99_ms": cell["itl_ms"]["p99"], "step_ms": cell.get("step_ms"), "step_kind": cell.get("step_kind"),
                "l_star": cell.get("l_star"), "errors": cell.get("errors"), "interrupted_runs": cell.get("interrupted"),
                "predicted_l_star": (row.get("predicted_l_star") or {}).get("value") if str(c) == "1" else None,
                "overlapped_runs": " ".join(sorted(cell.get("overlapped") or {})) or None,
                "foreign_load_runs": " ".join(sorted(cell.get("foreign") or {})) or None,
                "foreign_share_max": max((f["share"] for f in (cell.get("foreign") or {}).values()), default=None),
            })
    return out


def _csv(fields: tuple[str, ...], rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(fields), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else _clean(r.get(k))) for k in fields})
    return buf.getvalue()


def comparison_csv(comp: dict) -> str:
    return _csv(CSV_FIELDS, comparison_rows(comp))


def speedup_bars(comp: dict, concurrency: int | None = None) -> list[dict]:
    """Data for a speedup bar chart: ``[{profile, speedup, noise, baseline, foreign}]`` at one concurrency
    (``foreign``: the speedup is made of a figure measured beside requests spectui did not send)."""
    c = str(concurrency if concurrency is not None else comp["concurrencies"][0])
    out = []
    for row in comp["profiles"]:
        cell = row["cells"].get(c)
        if cell and cell.get("speedup") is not None:
            out.append({"profile": row["name"], "speedup": cell["speedup"], "noise": bool(cell.get("noise")),
                        "baseline": row["name"] == comp["baseline"], "foreign": _speedup_foreign(cell)})
    return out


def bar_chart(comp: dict, width: int = 40, concurrency: int | None = None) -> str:
    """A plain-text bar chart of speedup (``|`` marks 1.0x, the baseline)."""
    bars = speedup_bars(comp, concurrency)
    if not bars:
        return ""
    top = max(1.0, max(b["speedup"] for b in bars))
    name_w = max(len(b["profile"]) for b in bars)
    one = round(width / top)
    lines = []
    for b in bars:
        n = round(width * b["speedup"] / top)
        bar = "#" * n + " " * (width - n)
        bar = bar[:one] + "|" + bar[one:] if one <= width else bar
        lines.append(f"{b['profile'].ljust(name_w)}  {bar}  {b['speedup']:.2f}x{' (noise)' if b['noise'] else ''}"
                     + (f" {FOREIGN_MARK}" if b.get("foreign") else ""))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Runs (history)
# ---------------------------------------------------------------------------------------------

RUN_FIELDS = ("id", "run_id", "when", "host", "profile", "preset", "concurrency", "repeat", "engine", "state",
              "out_tok_s", "accept_length_per_request", "accept_length_metrics", "accept_rate", "accept_rate_formula",
              "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "e2e_p50_ms", "step_ms", "requests", "errors",
              "sglang_version", "profile_hash", "overlapped_with", "foreign_share")


def run_row(run: dict) -> dict:
    """One run (``RunResult.to_dict()`` plus ``id``) flattened for a table."""
    s = run.get("stats") or {}
    acc = s.get("accept_length") or {}
    rate = s.get("accept_rate") or {}
    return {
        "id": run.get("id"), "run_id": run["run_id"], "when": _when(run.get("started_at")), "host": run.get("host"),
        "profile": run.get("profile"), "preset": (run.get("preset") or {}).get("name"),
        "concurrency": run.get("concurrency"), "repeat": run.get("repeat"), "engine": run.get("engine"),
        "state": run.get("state"), "out_tok_s": s.get("output_tok_s"),
        "accept_length_per_request": acc.get("per_request"), "accept_length_metrics": acc.get("metrics"),
        "accept_rate": rate.get("value"), "accept_rate_formula": rate.get("formula"),
        "ttft_p50_ms": (s.get("ttft_ms") or {}).get("p50"), "ttft_p99_ms": (s.get("ttft_ms") or {}).get("p99"),
        "itl_p50_ms": (s.get("itl_ms") or {}).get("p50"), "itl_p99_ms": (s.get("itl_ms") or {}).get("p99"),
        "e2e_p50_ms": (s.get("e2e_ms") or {}).get("p50"), "step_ms": s.get("step_ms"),
        "requests": s.get("requests"), "errors": s.get("errors"), "sglang_version": run.get("sglang_version"),
        "profile_hash": run.get("profile_hash"), "overlapped_with": " ".join(run.get("overlapped_with") or []) or None,
        "foreign_share": foreign_share(run),
    }


MD_RUN_COLUMNS = ("id", "when", "host", "profile", "preset", "concurrency", "state", "out_tok_s",
                  "accept_length_per_request", "accept_length_metrics", "accept_rate", "ttft_p50_ms", "itl_p50_ms",
                  "e2e_p50_ms", "errors")
MD_RUN_HEAD = ("id", "when", "host", "profile", "preset", "conc.", "state", "out tok/s", "accept len (req)",
               "accept len (metrics)", "accept rate", "TTFT p50 ms", "ITL/chunk p50 ms", "E2E p50 ms", "errors")


def _cellfmt(key: str, v: Any) -> str:
    if v is None:
        return "-"
    if key == "accept_rate":
        return _pct(v)
    if key.startswith("accept_length"):
        return f"{v:.2f}"
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


def render_runs(runs: list[dict], fmt: str = "text", refs: dict | None = None) -> str:
    """Runs as a table; an overlapped run is marked (``†``) and footnoted, and so is the output tok/s of one
    measured beside foreign load (``‡``). ``refs`` ({(host, run_id): history id}) names the other runs by
    their history ids where known."""
    rows = [run_row(r) for r in runs]
    if fmt == "json":
        return to_json({"kind": "runs", "runs": runs})
    if fmt == "csv":
        return _csv(RUN_FIELDS, rows)
    cells = []
    overlaps = []
    for run, r in zip(runs, rows):
        line = [_cellfmt(k, r[k]) for k in MD_RUN_COLUMNS]
        sentence = overlap_sentence(run, refs)
        if sentence:
            line[MD_RUN_COLUMNS.index("profile")] = _marked(line[MD_RUN_COLUMNS.index("profile")], True)
            overlaps.append(f"{OVERLAP_MARK} run {run.get('id') or run['run_id']} {sentence}")
        load = run.get("foreign_load") or {}
        if load.get("marked"):
            col = MD_RUN_COLUMNS.index("out_tok_s")
            line[col] = _with_mark(line[col], True)
            overlaps.append(f"{FOREIGN_MARK} run {run.get('id') or run['run_id']}: "
                            f"{foreign_phrase(load['share'], load.get('foreign_requests'))}: {FOREIGN_NOTE}")
        cells.append(line)
    if fmt == "markdown":
        rates = sorted({r["accept_rate_formula"] for r in rows if r["accept_rate_formula"]})
        notes = [f"- accept rate: {f}" for f in rates]
        notes.append("- accept len (req): per request, weighted by verify steps; (metrics): Δgeneration_tokens / "
                     "Δspec_verify_calls from /metrics over the run")
        notes += [f"- {n}" for n in overlaps]
        return _md_table(list(MD_RUN_HEAD), cells) + "\n\n" + "\n".join(notes) + "\n"
    if fmt != "text":
        raise ValueError(f"unknown format {fmt!r}: choose {', '.join(FORMATS)}")
    return _grid(list(MD_RUN_HEAD), cells) + "\n" + "".join(f"  {n}\n" for n in overlaps)


def parse_markdown_table(text: str) -> list[list[str]]:
    """The cells of the first pipe table in ``text`` (header first): exported Markdown read back."""
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("|"):
            if rows:
                break
            continue
        inner = line[1:-1] if line.endswith("|") and not line.endswith("\\|") else line[1:]
        cells, cur, i = [], "", 0
        while i < len(inner):
            ch = inner[i]
            if ch == "\\" and i + 1 < len(inner) and inner[i + 1] == "|":
                cur += "|"
                i += 2
                continue
            if ch == "|":
                cells.append(cur.strip())
                cur = ""
            else:
                cur += ch
            i += 1
        cells.append(cur.strip())
        if all(set(c) <= set("-:") and c for c in cells):
            continue
        rows.append(cells)
    return rows


def with_positions(run: dict) -> dict:
    """``run`` with ``stats.acceptance_by_position`` computed from its requests when it was kept without it."""
    s = run.get("stats") or {}
    if "acceptance_by_position" in s or not s.get("speculative") or not run.get("records"):
        return run
    return dict(run, stats=dict(s, acceptance_by_position=acceptance_by_position(run["records"])))


def _drafts_lines(s: dict) -> list[str]:
    """The correct-drafts histogram and the acceptance per draft position of a run's stats."""
    out = []
    if s.get("correct_drafts_histogram"):
        h = s["correct_drafts_histogram"]
        total = sum(h) or 1
        out.append("correct drafts per verify step: " + ", ".join(f"{i}: {n} ({100 * n / total:.0f}%)"
                                                                  for i, n in enumerate(h)))
    line = position_line(s.get("acceptance_by_position"))
    return out + ([line] if line else [])


def render_run_detail(run: dict, refs: dict | None = None) -> str:
    """Everything one run measured, for ``history show ID`` and a single ``spectui bench`` run
    (``refs``: see :func:`render_runs`)."""
    run = with_positions(run)
    s = run.get("stats") or {}
    p = run.get("preset") or {}
    lines = [f"run {run.get('id', '')} {run['run_id']}: {run.get('profile') or run.get('server') or '?'} on "
             f"{run.get('host')}, preset {p.get('name') or '?'}, concurrency {run.get('concurrency')}"
             + (f", {run['request_rate']:g} req/s" if run.get("request_rate") else "")
             + (f", repeat {run['repeat']}" if run.get("repeat") else ""),
             f"state {run.get('state')}" + (f": {run['reason']}" if run.get("reason") else "")
             + f"; engine {run.get('engine')}; started {_when(run.get('started_at'))}"]
    sentence = overlap_sentence(run, refs)
    if sentence:
        lines.append(f"{OVERLAP_MARK} {sentence}")
    lines.append(foreign_detail(run))
    gpus = run.get("gpus") or []
    hw = f"{len(gpus)} x {gpus[0]}" if gpus and len(set(gpus)) == 1 else (", ".join(gpus) or "GPUs unknown")
    lines.append(f"{hw}; SGLang {run.get('sglang_version') or '?'}; spectui {run.get('spectui_version')}; "
                 f"profile hash {(run.get('profile_hash') or '?')[:12]}")
    if s.get("source"):
        lines.append(f"figures from {s['source']}")
    lines.append("")
    lines.append(f"requests      {s.get('completed', 0)} completed of {s.get('requests', 0)}, {s.get('errors', 0)} errors"
                 + (f", {s['cancelled']} cancelled" if s.get("cancelled") else ""))
    for msg in s.get("error_messages") or []:
        lines.append(f"  error: {msg}")
    lines.append(f"output        {_num(s.get('output_tok_s'))} tok/s ({s.get('output_tokens', 0)} tokens in "
                 f"{_num(s.get('duration_s'), 2)} s)")
    for key, label in LATENCY_LABELS:
        d = s.get(key) or {}
        lines.append(f"{label:<15} p50 {_num(d.get('p50'))}  p90 {_num(d.get('p90'))}  p99 {_num(d.get('p99'))}  "
                     f"mean {_num(d.get('mean'))} ms")
    acc = s.get("accept_length")
    if acc:
        lines.append(f"accept length {_num(acc.get('per_request'), 3)} per request (weighted by verify steps); "
                     f"{_num(acc.get('metrics'), 3)} from /metrics counters over the run"
                     + (f" ({acc['metrics_note']})" if acc.get("metrics_note") else ""))
        if acc.get("server_cumulative") is not None:
            lines.append(f"              server's cumulative avg_spec_accept_length {acc['server_cumulative']:.3f} "
                         f"(since {acc.get('server_cumulative_since')})")
    rate = s.get("accept_rate")
    if rate:
        lines.append(f"accept rate   {_pct(rate['value'])} = {rate['formula']}"
                     + (f" ({rate['correct']}/{rate['proposed']})" if rate.get("correct") is not None else ""))
    lines += _drafts_lines(s)
    if s.get("step_ms") is not None:
        lines.append(f"step time     {s['step_ms']:.1f} ms per {s.get('step_kind')} step "
                     f"(decode rate {_num(s.get('decode_tok_s'))} tok/s per request)")
    return "\n".join(lines) + "\n"
