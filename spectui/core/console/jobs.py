"""A host's benchmark, comparison and tune, run by its console: the loops the console's ``b``, ``B`` and ``T`` start.

Each runs as its :class:`~spectui.core.console.HostConsole`'s one job task (:meth:`HostConsole.run_job`), holding
the host's action seat, which the console takes before and frees when the job ends (:meth:`HostConsole.job_ended`);
it goes on whichever host is shown meanwhile. What it does reaches the console's subscribers as events that carry
their data: :class:`~spectui.core.console.events.JobNews` when the job changed, and
:class:`~spectui.core.console.events.Notice` with a sentence for the operator (a result, a refusal, a failure).
Every run is saved to the history as it ends; a job stopped by the operator (``c``: its state is ``cancelling``)
cancels the run in flight on the host and keeps what it measured, marked interrupted; a job the console stops
following (it closes) leaves the run going on on the host.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from spectui.core.bench.progress import BENCH_BUSY
from spectui.core.errors import AgentCallError, Disconnected, SpectuiError

if TYPE_CHECKING:
    from spectui.core.bench import CompareEvent, RunHandle, RunResult
    from spectui.core.console.benchjob import BenchJob
    from spectui.core.console.host import HostConsole
    from spectui.core.console.tunejob import TuneJob
    from spectui.core.history import HistoryStore
    from spectui.core.profiles import Profile
    from spectui.core.tune.plan import TuneInputs
    from spectui.core.tune.run import TuneEvent


def refusal(exc: Exception, code: str = BENCH_BUSY) -> str | None:
    """The host's sentence when it refused a run because the server is being benchmarked (or, with
    ``code`` ``SERVER_BENCHMARKED``, a stop or switch of a server a live run measures), as a
    notification shows it (capitalised, with its full stop); None for any other error."""
    if not isinstance(exc, AgentCallError) or exc.code != code:
        return None
    text = str(exc).strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def history_store() -> HistoryStore:
    from spectui.core.history import HistoryStore

    return HistoryStore()


def _failed(console: HostConsole, job: BenchJob, exc: Exception, title: str, said: str) -> None:
    """``job`` failed with ``exc``: the host's sentence (a warning titled ``title``) when it refused for a live
    benchmark run, else ``said`` (an error)."""
    busy = refusal(exc)
    job.fail(busy or str(exc))
    if busy is not None:
        console.tell(busy, title=title, severity="warning", timeout=20)
    else:
        console.tell(said, severity="error", timeout=15)


def save_run(console: HostConsole, result: RunResult) -> str | None:
    """Save ``result`` to the history: its id, or None (the run is still shown) with the sentence of why."""
    import sqlite3

    try:
        return str(history_store().save_run(result))
    except (OSError, sqlite3.Error, SpectuiError) as exc:
        console.tell(f"The run could not be saved to the history: {exc}", severity="error", timeout=15)
        return None


async def run_bench(console: HostConsole, job: BenchJob) -> None:
    """``b``: one run of ``job.preset`` against the ready server ``job.server``, followed across a dropped
    connection."""
    from spectui.core.bench.presets import PresetError
    from spectui.core.bench.runs import start_run, watch_running
    session = console.link.session
    handle: RunHandle | None = None
    try:
        handle = await start_run(session, job.preset, server=job.server)
        job.started(handle.run_id)
        console.job_changed(job, progress=True)
        result = None
        while result is None:
            try:
                result = await handle.wait(session=session)
            except Disconnected:
                job.message = "the connection dropped: the run goes on on the host; waiting for the reconnection"
                console.job_changed(job, progress=True)
                session = await console.next_session(session)
                await watch_running(session)
                job.message = None
                console.job_changed(job, progress=True)
        saved = save_run(console, result)
        job.finish_run(result, saved)
        tok = (result.stats or {}).get("output_tok_s")
        console.tell(f"{job.server}, {job.preset.name}: {result.state}"
                     + (f", {tok:.1f} tok/s" if tok is not None else "")
                     + (f"; saved as run {saved}" if saved else "") + ".",
                     severity="information" if result.state == "done" else "warning")
    except asyncio.CancelledError:
        if job.state == "cancelling" and handle is not None:
            try:
                result = await asyncio.shield(handle.cancel())
                job.finish_run(result, save_run(console, result))
            except (Disconnected, AgentCallError, asyncio.CancelledError) as exc:
                job.fail(f"Cancelled; the host did not confirm it ({exc}).")
        elif job.active:
            job.fail("Cancelled before the run started." if handle is None else
                     "The console stopped following the run; it goes on on the host "
                     "(spectui bench --collect saves it when it ends).")
        raise
    except (SpectuiError, PresetError, ValueError, OSError) as exc:
        _failed(console, job, exc, "Benchmark refused", f"Benchmark of {job.server}: {exc}")
    finally:
        console.job_ended(job)


async def run_compare(console: HostConsole, job: BenchJob, profiles: list[Profile], *, switch=None) -> None:
    """``B``: the marked profiles, one after another, with ``job.preset`` (``switch``: how a multi-node profile's
    server starts on every node's host)."""
    from spectui.core.bench.compare import BenchError, run_comparison
    from spectui.core.bench.presets import PresetError
    session = console.link.session
    store = history_store()
    job.state = "running"

    def on_event(ev: CompareEvent) -> None:
        job.on_compare_event(ev)
        console.job_changed(job, progress=ev.kind == "progress")

    try:
        comp = await run_comparison(session, profiles, job.preset, baseline=job.baseline, store=store,
                                    on_event=on_event, switch=switch)
        job.finish_comparison(comp)
        console.tell(f"Comparison {comp.get('id') or ''} done: "
                     + ("; ".join(comp.get("verdicts") or []) or "see the table") + ".", timeout=12)
    except asyncio.CancelledError:
        job.interrupted("Cancelled: the run in flight was stopped on the host; what was measured is saved, "
                        "marked interrupted." if job.state == "cancelling" else
                        "The console stopped the comparison.", saved_comparison(store, job))
        raise
    except Disconnected as exc:
        job.interrupted(f"The connection dropped ({exc}); the run in flight goes on on the host "
                        f"(spectui bench --collect saves it).", saved_comparison(store, job))
        console.tell(job.message, severity="error", timeout=15)
    except (BenchError, SpectuiError, PresetError, ValueError, OSError) as exc:
        _failed(console, job, exc, "Comparison refused", f"Comparison: {exc}")
    finally:
        console.job_ended(job)


def saved_comparison(store: HistoryStore, job: BenchJob) -> dict | None:
    """The interrupted comparison run_comparison saved (it keeps what was measured)."""
    try:
        comps = store.comparisons()
    except Exception:
        return None
    for comp in reversed(comps):
        if [p["name"] for p in comp.get("profiles") or []] == list(job.profiles) and \
                comp.get("created_at", 0) >= time.time() - job.elapsed_s() - 5:
            return comp
    return None


async def run_tune(console: HostConsole, job: TuneJob, inputs: TuneInputs) -> None:
    """``T``: tune ``inputs.profile`` against its baseline within the budget (``spectui.core.tune.run``, the loop
    ``spectui tune`` prints); each comparison it runs is the host's benchmark while it runs (``job.bench``)."""
    from spectui.core.tune.run import TuneProblems
    from spectui.core.tune.run import run_tune as tune
    session = console.link.session
    name = inputs.profile.name

    def on_event(ev: TuneEvent) -> None:
        job.on_event(ev)
        if ev.kind == "compare_started":
            console.bench_job = job.bench
        console.job_changed(job.bench, progress=ev.kind == "compare" and ev.compare.kind == "progress")

    try:
        outcome = await tune(session, inputs, store=history_store(), on_event=on_event)
        job.finish(outcome)
        console.tell(f"Tune of {name}: {outcome.recommendation.summary}.", timeout=15)
    except asyncio.CancelledError:
        job.fail("Cancelled: the run in flight was stopped on the host; what was measured is saved, marked "
                 "interrupted.", "interrupted")
        raise
    except TuneProblems as exc:
        job.fail("; ".join(str(p) for p in exc.problems) + f"; {exc.closing}")
        console.tell(f"Tune of {name}: {job.message}", severity="error", timeout=15)
    except Disconnected as exc:
        job.fail(f"The connection dropped ({exc}); the run in flight goes on on the host (spectui bench "
                 f"--collect saves it).", "interrupted")
        console.tell(job.message, severity="error", timeout=15)
    except (SpectuiError, ValueError, OSError) as exc:
        job.fail(str(exc))
        console.tell(f"Tune of {name}: {exc}", severity="error", timeout=15)
    finally:
        console.job_ended(job.bench)
