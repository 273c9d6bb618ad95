"""Comparing profiles: switch the server to each, warm up, run the preset N times, then explain.

:func:`run_comparison` does the work over one :class:`Session` (``ServerControl.switch`` for each
profile, :func:`start_run` for each run) and reports every step to a callback as a
:class:`CompareEvent`; every run is saved to history as soon as it ends, even interrupted.
:func:`build_comparison` turns the runs into the comparison (a plain, JSON-ready dict that
history keeps and ``table`` prints): per profile and concurrency the median output tok/s
and its spread, the speedup against the baseline (``noise`` when inside the spread), accept
length and rate, TTFT and ITL, step time and the break-even accept length L*, and a verdict
sentence saying why speculation won or lost. :func:`attach_predicted_l_star` sets beside the
measured L* the one the verify-cost probe predicts, when the history holds a probe of the profile
on the host.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import spectui
from spectui.agent.protocol import ServerState
from spectui.core.bench.positions import price_from_steps, priced
from spectui.core.bench.presets import Preset
from spectui.core.bench.runs import (
    BenchClient,
    BenchProgress,
    RunHandle,
    RunResult,
    host_label,
    host_provenance,
    pause_demo_traffic,
    start_run,
)
from spectui.core.bench.stats import is_noise, median, run_stats, spread, step_ms
from spectui.core.breakeven import break_even, predicted_break_even
from spectui.core.errors import AgentCallError, Disconnected, SpectuiError
from spectui.core.profiles import Profile
from spectui.core.servers import RecordError, ServerControl, ServerRecord
from spectui.core.session import Session

log = logging.getLogger(__name__)


class BenchError(SpectuiError):
    """A comparison could not go on (one sentence)."""


@dataclass
class CompareEvent:
    """One step of a comparison, for a progress display.

    ``kind``: ``switching`` (profile), ``switched`` (profile, detail = server), ``switch_failed``
    (profile, detail = reason), ``run_started`` (profile, concurrency, repeat, run_id),
    ``progress`` (the same, with ``progress``), ``run_finished`` (with ``result``), ``finished``
    (detail = the comparison dict), ``interrupted`` (detail = reason).
    """

    kind: str
    profile: str | None = None
    concurrency: int | None = None
    repeat: int | None = None
    index: int = 0
    total: int = 0
    run_id: str | None = None
    progress: BenchProgress | None = None
    result: RunResult | None = None
    detail: Any = None


def default_baseline(profiles: list[Profile]) -> str:
    """The first profile without speculation, else the first profile."""
    for p in profiles:
        if p.algorithm is None:
            return p.name
    return profiles[0].name


# ---------------------------------------------------------------------------------------------
# The comparison from runs
# ---------------------------------------------------------------------------------------------

def _cell(runs: list[RunResult]) -> dict:
    done = [r for r in runs if r.state == "done"] or runs
    tok = [r.stats.get("output_tok_s") for r in done if r.stats.get("output_tok_s") is not None]
    records = [rec for r in done for rec in r.records]
    speculative = any(r.speculative or (r.stats.get("speculative")) for r in done)
    draft = next(((r.speculative or {}).get("draft_tokens") for r in done if r.speculative), None)
    pooled = run_stats(records, None, draft_tokens=draft, speculative=speculative)
    acc = pooled.get("accept_length") or {}
    gen = [((r.stats.get("accept_length") or {}).get("metrics_tokens"),
            (r.stats.get("accept_length") or {}).get("metrics_verify_calls")) for r in done]
    tot_gen = sum(g for g, v in gen if g is not None and v)
    tot_ver = sum(v for g, v in gen if g is not None and v)
    per_request = acc.get("per_request")
    metrics = tot_gen / tot_ver if tot_ver else None
    if not records:  # imported runs without per-request details: the tool's own figures
        per_request = None
        cum = [(r.stats.get("accept_length") or {}).get("server_cumulative") for r in done]
        acc = {"server_cumulative": median(cum)}
    length = per_request if per_request is not None else metrics
    decode = pooled.get("decode_tok_s")
    errors = sum(r.stats.get("errors") or 0 for r in runs)
    ttft = pooled.get("ttft_ms") or _median_of(done, "ttft_ms")
    itl = pooled.get("itl_ms") or _median_of(done, "itl_ms")
    return {
        "n": len(tok),
        "runs": [r.run_id for r in runs],
        "interrupted": sum(1 for r in runs if r.state != "done"),
        "tok_s": {"median": median(tok), "min": min(tok) if tok else None, "max": max(tok) if tok else None,
                  "spread": spread(tok), "values": tok},
        "speculative": speculative,
        "accept_length": {"per_request": per_request, "metrics": metrics,
                          "server_cumulative": acc.get("server_cumulative")} if speculative else None,
        "accept_rate": pooled.get("accept_rate") if speculative else None,
        "correct_drafts_histogram": pooled.get("correct_drafts_histogram"),
        "acceptance_by_position": pooled.get("acceptance_by_position") if speculative else None,
        "ttft_ms": {"p50": (ttft or {}).get("p50"), "p99": (ttft or {}).get("p99")},
        "itl_ms": {"p50": (itl or {}).get("p50"), "p99": (itl or {}).get("p99")},
        "decode_tok_s": decode,
        "step_ms": step_ms(decode, length if speculative else None),
        "step_kind": "verify" if speculative else "decode",
        "errors": errors,
        "overlapped": {r.run_id: list(r.overlapped_with) for r in runs if r.overlapped_with},
        "foreign": {r.run_id: {"share": r.foreign_load["share"], "requests": r.foreign_load.get("foreign_requests")}
                    for r in runs if r.foreign},
        "speedup": None, "noise": None, "l_star": None,
    }


def _median_of(runs: list[RunResult], key: str) -> dict | None:
    vals = [r.stats.get(key) or {} for r in runs]
    if not any(vals):
        return None
    return {"p50": median(v.get("p50") for v in vals), "p99": median(v.get("p99") for v in vals)}


def build_comparison(results: list[RunResult], *, profiles: list[str], baseline: str, preset: Preset,
                     host: str, gpus: list[str] | None = None, sglang_version: str | None = None,
                     engine: str = "spectui", failures: dict[str, str] | None = None,
                     profile_meta: dict[str, dict] | None = None, state: str = "complete",
                     reason: str | None = None) -> dict:
    """The comparison of ``results`` (runs of the given profiles), as a JSON-ready dict."""
    failures = failures or {}
    concurrencies = list(preset.concurrency)
    by: dict[tuple[str, int], list[RunResult]] = {}
    for r in results:
        by.setdefault((r.profile, r.concurrency), []).append(r)
    rows = []
    for name in profiles:
        cells = {}
        for c in concurrencies:
            runs = by.get((name, c))
            if runs:
                cells[str(c)] = _cell(runs)
        meta = (profile_meta or {}).get(name, {})
        spec = next((r.speculative for (p, _), rs in by.items() if p == name for r in rs if r.speculative), None)
        rows.append({"name": name, "hash": meta.get("hash"), "speculative": spec or meta.get("speculative"),
                     "failed": failures.get(name), "cells": cells})
        if meta.get("variant"):  # a sweep's variant: its display name, base profile and flags changed
            rows[-1]["variant"] = meta["variant"]
    base = next((row for row in rows if row["name"] == baseline), None)
    for row in rows:
        for c, cell in row["cells"].items():
            bcell = (base or {}).get("cells", {}).get(c) if base else None
            if not bcell:
                continue
            b_tok, tok = bcell["tok_s"]["median"], cell["tok_s"]["median"]
            if row is not base:
                cell["foreign_baseline"] = bool(bcell.get("foreign"))
            if b_tok and tok is not None:
                cell["speedup"] = tok / b_tok
                cell["noise"] = False if row is base else is_noise(cell["speedup"], cell["tok_s"]["spread"],
                                                                   bcell["tok_s"]["spread"])
            if row is not base and cell["speculative"]:
                cell["l_star"] = break_even(cell["step_ms"], bcell["step_ms"] if not bcell["speculative"] else None)
                _price_positions(cell, bcell)
    comp = {
        "kind": "comparison", "created_at": time.time(), "host": host, "gpus": list(gpus or []),
        "sglang_version": sglang_version, "spectui_version": spectui.__version__, "engine": engine,
        "preset": preset.to_dict(), "repeats": preset.repeats, "baseline": baseline, "concurrencies": concurrencies,
        "state": state, "reason": reason, "profiles": rows, "run_ids": [r.run_id for r in results],
    }
    comp["verdicts"] = verdicts(comp)
    return comp


def _price_positions(cell: dict, bcell: dict) -> None:
    """The marginal draft position of a speculative cell, its positions priced against the baseline's plain
    decode step under the same load (``spectui.core.bench.positions.price_from_steps``)."""
    acc = cell.get("acceptance_by_position")
    if not acc or acc.get("positions") is None or not cell.get("correct_drafts_histogram"):
        return
    decode = bcell.get("step_ms") if not bcell.get("speculative") else None
    decode_ms, position_ms, how, why = price_from_steps(cell.get("step_ms"), decode, acc.get("width"))
    if bcell.get("speculative"):
        why = "the baseline speculates too, so no plain decode step prices the positions"
    cell["acceptance_by_position"] = priced(acc, cell["correct_drafts_histogram"], decode_ms=decode_ms,
                                            position_ms=position_ms, costs_from=how, no_costs=why or "")


def attach_predicted_l_star(comp: dict, store) -> dict:
    """Beside each speculative profile's measured L*, the L* its latest verify-cost probe on this host
    predicts (``row["predicted_l_star"]``), when the history holds one made for the same profile content
    and the comparison measured concurrency 1 (the probe's figures are for one request).

    A probe made without the plain decode step time has no L* of its own; its extra all-reduce,
    compute and drafting per verify step are then set against this comparison's measured baseline
    decode step (concurrency 1).
    """
    latest = getattr(store, "latest_probe", None)
    if latest is None or 1 not in [int(c) for c in comp.get("concurrencies") or []]:
        return comp  # the probe predicts one request's step: nothing to set beside other loads
    base = next((row for row in comp["profiles"] if row["name"] == comp["baseline"]), None)
    bcell = (base or {}).get("cells", {}).get("1") or {}
    base_step = bcell.get("step_ms") if not bcell.get("speculative") else None
    for row in comp["profiles"]:
        if row["name"] == comp["baseline"] or not row.get("speculative"):
            continue
        rec = latest(comp.get("host"), row["name"], profile_hash=row.get("hash"))
        if rec is None:
            continue
        pl = rec.get("profile_l_star") or {}
        value, comm_only, step_from = pl.get("predicted"), pl.get("comm_only"), "probe"
        if value is None and pl.get("extra_comm_ms") is not None and base_step:
            extra = max(0.0, float(pl["extra_comm_ms"]))
            comm_only = predicted_break_even(base_step, extra)
            value = predicted_break_even(base_step, extra, float(pl.get("extra_compute_ms") or 0.0),
                                         float(pl.get("drafting_ms") or 0.0))
            step_from = "baseline"
        if value is None:
            continue
        prov = rec.get("provenance") or {}
        row["predicted_l_star"] = {"value": value, "comm_only": comm_only, "probe_id": rec.get("id"),
                                   "kind": prov.get("kind"), "preset": prov.get("preset"),
                                   "measured_at": rec.get("measured_at"), "decode_step_from": step_from}
    return comp


def _f(x: float | None, nd: int = 2) -> str:
    return "?" if x is None else f"{x:.{nd}f}"


def verdicts(comp: dict) -> list[str]:
    """Sentences saying, for each speculative profile, whether it pays and why (L* against accept length)."""
    out = []
    base = comp["baseline"]
    concs = [str(c) for c in comp["concurrencies"]]
    for row in comp["profiles"]:
        if row.get("failed"):
            out.append(f"{row['name']}: not measured: {row['failed']}")
            continue
        if row["name"] == base:
            continue
        if len(concs) == 1:
            cell = row["cells"].get(concs[0])
            if cell and cell.get("speedup") is not None:
                out.append(_one_verdict(row["name"], base, cell))
            continue
        pays, loses, noise = [], [], []
        for c in concs:
            cell = row["cells"].get(c)
            if not cell or cell.get("speedup") is None:
                continue
            (noise if cell.get("noise") else pays if cell["speedup"] > 1 else loses).append(int(c))
        measured = sorted(pays + loses + noise)
        if not measured:
            continue
        if not pays:
            text = f"{row['name']} never pays against {base} (concurrency {_list(measured)})"
        elif not loses and not noise:
            text = f"{row['name']} pays at every concurrency measured ({_list(measured)})"
        else:
            stop = min(c for c in loses + noise if c > min(pays)) if any(c > min(pays) for c in loses + noise) else None
            text = f"{row['name']} pays at concurrency {_list(pays)}" + (
                f"; speculation stops paying at concurrency {stop}" if stop is not None else "")
            if noise:
                text += f" (within noise at {_list(noise)})"
        out.append(text)
    return out


def _list(xs: list[int]) -> str:
    return ", ".join(map(str, sorted(xs)))


def _one_verdict(name: str, base: str, cell: dict) -> str:
    s = cell["speedup"]
    acc = (cell.get("accept_length") or {})
    length = acc.get("per_request") if acc.get("per_request") is not None else acc.get("metrics")
    lstar = cell.get("l_star")
    if cell.get("noise"):
        return f"{name} vs {base}: {s:.2f}x is within the run-to-run spread (noise): no measurable difference"
    if not cell.get("speculative"):
        return f"{name} runs at {s:.2f}x {base} (no speculation)"
    why = ""
    if lstar is not None and length is not None:
        rel = "<" if length < lstar else ">"
        why = (f": it accepts {length:.2f} tokens per verify step {rel} L* {lstar:.2f} needed to break even "
               f"(a verify step takes {_f(cell.get('step_ms'), 1)} ms, {lstar:.2f} plain decode steps)")
    return f"{name} is {'slower' if s < 1 else 'faster'} than {base} ({s:.2f}x){why}"


# ---------------------------------------------------------------------------------------------
# Running it
# ---------------------------------------------------------------------------------------------

async def run_comparison(session: Session, profiles: list[Profile], preset: Preset, *, repeats: int | None = None,
                         baseline: str | None = None, engine: str = "spectui", store=None,
                         on_event: Callable[[CompareEvent], None] | None = None, force: bool = False,
                         stop_after: bool = False, switch_timeout_s: float = 1800.0,
                         allow_overlap: bool = False, require_idle: bool = False,
                         reconnect: Callable[[Disconnected, str], Awaitable[Session]] | None = None,
                         variants: dict[str, dict] | None = None,
                         switch: Callable[[Profile], Awaitable[dict]] | None = None) -> dict:
    """Compare ``profiles`` under ``preset`` on ``session``'s host; returns the comparison dict.

    A run against a server that another live run measures is refused by the host (the
    ``bench_busy`` :class:`AgentCallError` ends the comparison) unless ``allow_overlap``; such
    runs are marked overlapped, and so is their cell of the comparison. A run measured beside requests
    spectui did not send is marked with that foreign load, and so are its cell's figures; with
    ``require_idle`` the host refuses such a run instead (the ``server_busy`` error ends the comparison).

    ``store`` (a :class:`~spectui.core.history.HistoryStore`) receives every run as it ends and
    the comparison at the end; a cancelled comparison (task cancelled, Ctrl-C) cancels the run
    in flight on the host, saves what it measured marked interrupted, and re-raises.

    A connection lost while a run measures goes to ``reconnect(error, run_id)`` when given: the
    session it returns follows the run on (the run goes on on the host meanwhile). Without it, or
    when it raises, the comparison is saved interrupted with the run in flight in
    ``pending_run_ids``; :func:`link_collected_runs` adds that run once it is collected.

    ``variants`` (profile name -> ``{"display_name", "base", "changes"}``) marks a sweep's variant
    profiles: their rows keep it as ``variant``.

    ``switch(profile)`` starts a profile's server in place of this host's own switch, answering as it does
    (``{"server": {...}}``): a console with several hosts starts a multi-node profile on every node's host so
    (rank 0's server is on this host, where it is measured).
    """
    if not profiles:
        raise BenchError("give at least one profile to compare")
    preset = preset.with_repeats(repeats)
    baseline = baseline or default_baseline(profiles)
    names = [p.name for p in profiles]
    if baseline not in names:
        raise BenchError(f"the baseline {baseline} is not among the profiles compared ({', '.join(names)})")
    emit = on_event or (lambda ev: None)
    prov = await host_provenance(session)
    host = host_label(session)
    key = uuid.uuid4().hex[:12]
    ctl = ServerControl(session)
    client = BenchClient(session)
    results: list[RunResult] = []
    failures: dict[str, str] = {}
    total = len(profiles) * len(preset.concurrency) * preset.repeats
    index = 0
    handle: RunHandle | None = None
    meta = {p.name: {"hash": p.content_hash, "speculative": p.speculative_settings() if p.algorithm else None,
                     "variant": (variants or {}).get(p.name)} for p in profiles}
    restore_traffic = await pause_demo_traffic(session)

    def finish(state: str, reason: str | None, pending: list[str] | None = None) -> dict:
        comp = build_comparison(results, profiles=names, baseline=baseline, preset=preset, host=host,
                                gpus=prov.get("gpus"), sglang_version=_version(results, prov), engine=engine,
                                failures=failures, profile_meta=meta, state=state, reason=reason)
        if pending:
            comp["pending_run_ids"] = list(pending)
        if store is not None:
            attach_predicted_l_star(comp, store)
            comp["id"] = store.save_comparison(comp, key)
        return comp

    try:
        for profile in profiles:
            emit(CompareEvent("switching", profile.name, index=index, total=total))
            try:
                sw = await (switch(profile) if switch is not None
                            else ctl.switch(profile, force=force, timeout_s=switch_timeout_s))
            except AgentCallError as exc:
                failures[profile.name] = str(exc)
                emit(CompareEvent("switch_failed", profile.name, index=index, total=total, detail=str(exc)))
                index += len(preset.concurrency) * preset.repeats
                continue
            try:
                server = ServerRecord.from_wire(sw.get("server"))
            except RecordError as exc:
                server, why = None, str(exc)
            else:
                why = f"the server ended {server.state}" + (f": {server.reason}" if server.reason else "")
            if server is None or server.state != ServerState.READY:
                failures[profile.name] = why
                emit(CompareEvent("switch_failed", profile.name, index=index, total=total, detail=why))
                index += len(preset.concurrency) * preset.repeats
                continue
            emit(CompareEvent("switched", profile.name, index=index, total=total, detail=server))
            for conc in preset.concurrency:
                for rep in range(preset.repeats):
                    index += 1
                    labels = {"profile": profile.name, "profile_hash": profile.content_hash,
                              "profile_content": profile.redacted(), "repeat": rep + 1, "comparison_key": key}
                    handle = await start_run(session, preset, server=profile.name, concurrency=conc, engine=engine,
                                             warmup=(rep == 0), labels=labels, provenance=prov, pause_traffic=False,
                                             allow_overlap=allow_overlap, require_idle=require_idle)
                    run_id = handle.run_id
                    emit(CompareEvent("run_started", profile.name, conc, rep + 1, index, total, run_id))

                    def on_progress(p: BenchProgress, _n=profile.name, _c=conc, _r=rep + 1, _i=index, _id=run_id):
                        if p.run_id == _id:
                            emit(CompareEvent("progress", _n, _c, _r, _i, total, _id, progress=p))

                    while True:
                        stop = client.on_progress(on_progress)
                        try:
                            result = await handle.wait()
                            break
                        except Disconnected as exc:
                            if reconnect is None:
                                raise
                            session = await reconnect(exc, run_id)
                            ctl, client, handle.session = ServerControl(session), BenchClient(session), session
                            await client.watch(run_id)
                        finally:
                            stop()
                    handle = None
                    result.profile_content = profile.redacted()
                    results.append(result)
                    if store is not None:
                        store.save_run(result)
                    emit(CompareEvent("run_finished", profile.name, conc, rep + 1, index, total, run_id,
                                      result=result))
        comp = finish("complete", None)
        emit(CompareEvent("finished", index=index, total=total, detail=comp))
        return comp
    except (asyncio.CancelledError, KeyboardInterrupt):
        reason = "cancelled"
        if handle is not None:
            try:
                partial = await asyncio.shield(handle.cancel())
                results.append(partial)
                if store is not None:
                    store.save_run(partial)
            except (Disconnected, AgentCallError, asyncio.CancelledError) as exc:
                log.warning("the cancelled run %s was not saved: %s", handle.run_id, exc or type(exc).__name__)
        finish("interrupted", reason)
        emit(CompareEvent("interrupted", index=index, total=total, detail=reason))
        raise
    except Disconnected as exc:
        pending = [handle.run_id] if handle is not None else []
        finish("interrupted", f"disconnected: {exc}" + (" (the run in flight goes on on the host; collect it later)"
                                                        if pending else ""), pending)
        emit(CompareEvent("interrupted", index=index, total=total, detail=str(exc)))
        raise
    finally:
        if stop_after:
            try:
                await asyncio.shield(_stop_all(ctl, names))
            except (Disconnected, AgentCallError, asyncio.CancelledError) as exc:
                log.info("the compared servers were not all stopped: %s", exc or type(exc).__name__)
        try:
            await asyncio.shield(restore_traffic())
        except (Disconnected, AgentCallError, asyncio.CancelledError) as exc:
            log.info("the demo's background traffic was not restarted: %s", exc or type(exc).__name__)


def link_collected_runs(store, results: list[RunResult]) -> list[str]:
    """Add collected runs to the interrupted comparisons they belong to (their ``comparison_key``):
    each such comparison is built again from all its runs in ``store``, keeping its state and
    profiles; the runs it was waiting for leave ``pending_run_ids``. Returns the comparison ids updated."""
    keys = {r.comparison_key for r in results if r.comparison_key}
    updated = []
    for comp in store.comparisons() if keys else []:
        key = comp.get("key")
        if key not in keys:
            continue
        runs = [RunResult.from_dict(d) for d in store.runs(comparison_key=key)]
        rows = comp.get("profiles") or []
        rebuilt = build_comparison(
            runs, profiles=[row["name"] for row in rows], baseline=comp["baseline"],
            preset=Preset.from_dict(comp["preset"]), host=comp.get("host"), gpus=comp.get("gpus"),
            sglang_version=comp.get("sglang_version"), engine=comp.get("engine") or "spectui",
            failures={row["name"]: row["failed"] for row in rows if row.get("failed")},
            profile_meta={row["name"]: {"hash": row.get("hash"), "speculative": row.get("speculative"),
                                        "variant": row.get("variant")} for row in rows},
            state=comp.get("state") or "interrupted", reason=comp.get("reason"))
        rebuilt["created_at"] = comp.get("created_at") or rebuilt["created_at"]
        collected = {r.run_id for r in runs}
        pending = [rid for rid in comp.get("pending_run_ids") or [] if rid not in collected]
        if pending:
            rebuilt["pending_run_ids"] = pending
        attach_predicted_l_star(rebuilt, store)
        updated.append(store.save_comparison(rebuilt, key))
    return updated


async def _stop_all(ctl: ServerControl, names: list[str]) -> None:
    for s in map(ServerRecord.from_wire, await ctl.list()):
        if s.name in names and not s.ended:
            await ctl.stop(s.name, grace_s=10)


def _version(results: list[RunResult], prov: dict) -> str | None:
    for r in results:
        if r.sglang_version:
            return r.sglang_version
    return prov.get("sglang_version")
