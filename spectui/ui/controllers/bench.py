"""Benchmarks from the console: ``space`` marks, ``b`` runs a preset, ``B`` compares, ``v``, ``c``, ``e``.

:class:`BenchController` owns the marks and the progress of the session's runs; the job (one benchmark at a time
per host, a :class:`~spectui.core.console.benchjob.BenchJob`) is the host's console's, holds that host's action seat
for its whole run and stays with its host when another is shown; its workers save to the history. The bench API
pauses the demo traffic while it measures and gives it back; the console keeps it paused (the
``t`` key and the reconnection both wait) until the benchmark ends. A server that another run
measures (another console's, or ``spectui bench``'s) is refused by the host: the benchmark screen
and a notification show the host's sentence naming that run.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import TYPE_CHECKING

from textual.worker import WorkerCancelled, WorkerFailed

from spectui.agent.protocol import Event as WireEvent
from spectui.agent.protocol import ServerState
from spectui.core.aio import within
from spectui.core.bench.progress import BENCH_BUSY, ProgressBoard
from spectui.core.errors import AgentCallError, Disconnected, SpectuiError
from spectui.core.paths import user_data_dir
from spectui.core.profiles import Profile
from spectui.core.servers import SERVER_BENCHMARKED, is_external
from spectui.core.console import HostConsole
from spectui.ui.controllers.base import Controller, worker
from spectui.ui.dashboard_views import EVERYTHING, showing
from spectui.ui.screens.confirm import ConfirmScreen

if TYPE_CHECKING:  # the presets, the job and its screen, the history: loaded by the keys that start a benchmark or
    # show one
    from spectui.core.history import HistoryStore
    from spectui.core.bench import CompareEvent, Preset, RunHandle, RunResult
    from spectui.core.console.benchjob import BenchJob


BENCH_SHOWS = frozenset({"bench", "banner"})  # what a benchmark's progress changes


def write_export(text: str, name: str, folders: list[Path] | None = None) -> Path:
    """Write ``text`` to ``name`` in the first folder that takes it (the current directory, then the
    user's data folder); an existing file is never overwritten (``-2``, ``-3``, ... are added)."""
    folders = folders if folders is not None else [Path.cwd(), user_data_dir() / "exports"]
    last: OSError | None = None
    stem, suffix = Path(name).stem, Path(name).suffix
    for folder in folders:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            for n in range(1, 1000):
                path = folder / (name if n == 1 else f"{stem}-{n}{suffix}")
                try:
                    with open(path, "x", encoding="utf-8") as fh:
                        fh.write(text)
                    return path.resolve()
                except FileExistsError:
                    continue
        except OSError as exc:
            last = exc
    raise OSError(f"no folder would take {name} ({last})")


def refusal(exc: Exception, code: str = BENCH_BUSY) -> str | None:
    """The host's sentence when it refused a run because the server is being benchmarked (or, with
    ``code`` :data:`SERVER_BENCHMARKED`, a stop or switch of a server a live run measures), as a
    notification shows it (capitalised, with its full stop); None for any other error."""
    if not isinstance(exc, AgentCallError) or exc.code != code:
        return None
    text = str(exc).strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


class BenchController(Controller):
    """The console's benchmark keys and the benchmark under way."""

    def __init__(self, app) -> None:
        super().__init__(app)
        self._recorded: tuple | None = None   # the job (id, snapshot less its clock) last written to the recording
        self._replayed: dict | None = None    # a replay: the recorded job shown
        self.board = ProgressBoard()          # every bench_progress event of the sessions
        self._workers: dict[str, object] = {}  # host label -> the worker of its job under way
        self.marked: list[str] = []           # profiles marked for B, in the order marked
        self.last_preset: str | None = None

    @property
    def job(self) -> BenchJob | None:
        """The shown host's benchmark: under way, or the last one."""
        return self.console.bench_job

    @job.setter
    def job(self, job: BenchJob | None) -> None:
        self.console.bench_job = job

    @property
    def _worker(self):
        return self._workers.get(self.console.label)

    def session_opened(self, session, reconnects: int) -> None:
        session.client.add_listener(self._heard)

    def _heard(self, ev) -> None:
        """A session's event: a run's ``bench_progress`` redraws the benchmark it is (the screen and the banner)."""
        self.board.on_event(ev)
        job = self.job
        if ev.name == WireEvent.BENCH_PROGRESS and job is not None and job.kind == "run" and job.run_id \
                and ev.data.get("run_id") == job.run_id:
            self.changed(BENCH_SHOWS)  # the redraw hands the job its progress (sync) as the screen shows it

    def job_changed(self, job: BenchJob) -> None:
        """What the benchmark screen and the banner show of ``job`` changed."""
        self.changed(BENCH_SHOWS)

    def notify_refused(self, exc: Exception, title: str, code: str = BENCH_BUSY) -> str | None:
        """Show the host's sentence when it refused for a live benchmark run (:func:`refusal`) and
        return it; None, and nothing shown, for any other error."""
        text = refusal(exc, code)
        if text is not None:
            self.notify(text, title=title, severity="warning", timeout=20, markup=False)
        return text

    def notify_benchmarked(self, exc: Exception, title: str) -> bool:
        """Show the host's sentence when it refused to stop a server that a live benchmark run measures
        (another console's, or ``spectui bench``'s); False for any other error."""
        return self.notify_refused(exc, title, SERVER_BENCHMARKED) is not None

    def history_store(self) -> HistoryStore:
        from spectui.core.history import HistoryStore

        return HistoryStore()

    def measuring(self) -> bool:
        return self.console.measuring

    def banner_text(self) -> str | None:
        """The banner's part while a benchmark runs."""
        job = self.job
        return job.banner_text() + " · v shows it" if job is not None and job.active else None

    def sync(self, draw: bool = True) -> None:
        """Each refresh: the job takes the latest progress of its run (in a replay: the job as recorded up to
        the play head); a recording gets each change of it; the bench screen redraws when ``draw`` (the bench
        panel was marked changed) or a replay's job changed."""
        link = self.link
        if link is not None and link.read_only:
            draw = self._from_replay(link) or draw
        job = self.job
        if job is not None and job.kind == "run" and job.run_id and not (link is not None and link.read_only):
            job.on_progress(self.board.runs.get(job.run_id))
        recorder = getattr(link, "recorder", None)
        if job is not None and recorder is not None:
            snapshot = job.snapshot()
            seen = (id(job), {k: v for k, v in snapshot.items() if k != "elapsed_s"})
            if seen != self._recorded:
                self._recorded = seen
                recorder.write("bench_job", snapshot)
        if draw and showing(self.app.screen, "bench", "BenchScreen"):
            self.app.screen.sync()

    def _from_replay(self, replay) -> bool:
        """Show the replay's job as recorded up to the play head; whether it changed."""
        shown = replay.bench_job
        if shown is self._replayed:
            return False
        self._replayed = shown
        from spectui.core.console.benchjob import BenchJob
        self.job = BenchJob.from_snapshot(shown) if shown else None
        if showing(self.app.screen, "bench", "BenchScreen"):
            self.app.screen.job = self.job
        return True

    # --- space: marks ---------------------------------------------------------------------------------
    def toggle_mark(self) -> None:
        name = self.app.highlighted_name()
        if name is None:
            return
        if name in self.marked:
            self.marked.remove(name)
        else:
            self.marked.append(name)
        self.refresh()

    def marked_profiles(self) -> list[Profile]:
        library = self.console.library
        return [library.profiles[n] for n in self.marked if n in library.profiles]

    def compare_baseline(self) -> str | None:
        profiles = self.marked_profiles()
        if not profiles:
            return None
        from spectui.core.bench.compare import default_baseline
        return default_baseline(profiles)

    # --- b: a preset against the ready server ----------------------------------------------------------
    def _presets(self):
        from spectui.core.bench.presets import load_presets
        lib = load_presets()
        if not lib.presets:
            self.notify("No benchmark presets found: spectui bench --list-presets says where they are read from.",
                        severity="error")
            return None
        return lib

    def _bench_server(self) -> str | None:
        servers = self.link.servers
        focus = self.app.focus()
        if focus and (servers.get(focus) or {}).get("state") == ServerState.READY:
            return focus
        ready = [n for n, s in servers.items() if s.get("state") == ServerState.READY]
        if len(ready) == 1:
            return ready[0]
        if ready:
            self.notify(f"{len(ready)} servers are ready ({', '.join(ready)}): highlight the one to benchmark.",
                        severity="warning")
        else:
            self.notify("No server is ready: switch to a profile first (enter), then b benchmarks it.",
                        severity="warning")
        return None

    def request_bench(self) -> None:
        if self.measuring():
            self.open_screen()
            return
        if self.ready_link() is None:
            return
        server = self._bench_server()
        if server is None:
            return
        lib = self._presets()
        if lib is None:
            return
        lines = [f"Runs the preset's prompts against {server} as it runs now and saves the run to the history."]
        if self.app.traffic.available:
            lines.append("The demo traffic pauses while it measures.")

        def picked(preset: Preset | None) -> None:
            if preset is not None:
                self._start_bench(server, preset)

        from spectui.ui.screens.picker import PresetPicker
        self.push_screen(PresetPicker(lib, f"Benchmark {server}", lines, first=self.last_preset), picked)

    def _start(self, job: BenchJob, preset: Preset, busy: str) -> HostConsole | None:
        """``job`` becomes the shown host's, holding its seat (None: the seat was taken)."""
        console = self.console
        if not console.seat.take(busy):
            return None
        job.traffic_paused = self.app.traffic.available and self.app.traffic.wanted
        console.bench_job = job
        self.last_preset = preset.name
        from spectui.ui.screens.bench import BenchScreen
        self.push_screen(BenchScreen(job))
        return console

    def _start_bench(self, server: str, preset: Preset) -> None:
        if self.measuring() or self.ready_link() is None:
            return
        from spectui.core.console.benchjob import BenchJob
        job = BenchJob.single(preset, self.link.session.target.history_label, server)
        console = self._start(job, preset, f"benchmarking {server}")
        if console is not None:
            self._workers[console.label] = self._run_bench(job, console)
            self.refresh()

    @worker(group="bench")
    async def _run_bench(self, job: BenchJob, console: HostConsole) -> None:
        from spectui.core.bench.presets import PresetError
        from spectui.core.bench.runs import start_run, watch_running
        session = console.link.session
        handle: RunHandle | None = None
        try:
            handle = await start_run(session, job.preset, server=job.server)
            job.started(handle.run_id)
            result = None
            while result is None:
                try:
                    result = await handle.wait(session=session)
                except Disconnected:
                    job.message = "the connection dropped: the run goes on on the host; waiting for the reconnection"
                    self.job_changed(job)
                    session = await console.next_session(session)
                    await watch_running(session)
                    job.message = None
                    self.job_changed(job)
            saved = self._save_run(result)
            job.finish_run(result, saved)
            tok = (result.stats or {}).get("output_tok_s")
            self.notify(f"{job.server}, {job.preset.name}: {result.state}"
                        + (f", {tok:.1f} tok/s" if tok is not None else "")
                        + (f"; saved as run {saved}" if saved else "") + ".",
                        severity="information" if result.state == "done" else "warning")
        except asyncio.CancelledError:
            if job.state == "cancelling" and handle is not None:
                try:
                    result = await asyncio.shield(handle.cancel())
                    job.finish_run(result, self._save_run(result))
                except (Disconnected, AgentCallError, asyncio.CancelledError) as exc:
                    job.fail(f"Cancelled; the host did not confirm it ({exc}).")
            elif job.active:
                job.fail("Cancelled before the run started." if handle is None else
                         "The console stopped following the run; it goes on on the host "
                         "(spectui bench --collect saves it when it ends).")
            raise
        except (SpectuiError, PresetError, ValueError, OSError) as exc:
            busy = self.notify_refused(exc, "Benchmark refused")
            job.fail(busy or str(exc))
            if not busy:
                self.notify(f"Benchmark of {job.server}: {exc}", severity="error", timeout=15)
        finally:
            self._done(job, console)

    def _save_run(self, result: RunResult) -> str | None:
        import sqlite3

        try:
            return str(self.history_store().save_run(result))
        except (OSError, sqlite3.Error, SpectuiError) as exc:  # the run is still shown
            self.notify(f"The run could not be saved to the history: {exc}", severity="error", timeout=15)
            return None

    # --- B: compare the marked profiles ------------------------------------------------------------------
    def request_compare(self) -> None:
        if self.measuring():
            self.open_screen()
            return
        if self.ready_link() is None:
            return
        profiles = self.marked_profiles()
        if len(profiles) < 2:
            self.notify("Mark two or more profiles with space, then B compares them (the first one without "
                        "speculation, else the first marked, is the baseline).", severity="warning")
            return
        lib = self._presets()
        if lib is None:
            return
        names = [p.name for p in profiles]
        from spectui.core.bench.compare import default_baseline
        baseline = default_baseline(profiles)

        def picked(preset: Preset | None) -> None:
            if preset is None:
                return
            running = [s for s in self.link.servers.values()
                       if s.get("state") in (ServerState.STARTING, ServerState.LOADING, ServerState.READY,
                                             ServerState.UNRESPONSIVE)]
            live = [f"{s['name']} ({s['state']})" for s in running if not is_external(s)]
            found = sum(1 for s in running if is_external(s))
            lines = [f"Profiles, in this order: {', '.join(names)}; the baseline is {baseline}.",
                     f"For each: its server is started (whatever holds its GPUs or port is stopped first), warmed "
                     f"up, then measured {preset.repeats} time{'s' if preset.repeats != 1 else ''} with "
                     f"{preset.name} ({preset.describe()}).",
                     "Every run is saved to the history as it ends; c on the benchmark screen stops it."]
            if live:
                lines.append(f"Running now: {', '.join(live)}.")
            if found:
                lines.append(f"{found} server{'s' if found != 1 else ''} found on the host that spectui did not start "
                             f"{'are' if found != 1 else 'is'} left alone; a switch onto GPUs or a port one holds "
                             f"asks first.")
            if self.app.traffic.available:
                lines.append("The demo traffic pauses while it measures.")

            def answered(yes: bool | None) -> None:
                if yes:
                    self._start_compare(profiles, preset, baseline)

            self.push_screen(ConfirmScreen(f"Compare {len(names)} profiles with {preset.name}?", lines,
                                           yes="Compare"), answered)

        from spectui.ui.screens.picker import PresetPicker
        self.push_screen(PresetPicker(lib, f"Compare {', '.join(names)}", [f"Baseline: {baseline}."],
                                      first=self.last_preset), picked)

    def _start_compare(self, profiles: list[Profile], preset: Preset, baseline: str) -> None:
        if self.measuring() or self.ready_link() is None:
            return
        from spectui.core.console.benchjob import BenchJob
        job = BenchJob.comparing(preset, self.link.session.target.history_label, [p.name for p in profiles], baseline)
        console = self._start(job, preset, f"comparing {len(profiles)} profiles")
        if console is not None:
            self._workers[console.label] = self._run_compare(job, profiles, console)
            self.refresh()

    @worker(group="bench")
    async def _run_compare(self, job: BenchJob, profiles: list[Profile], console: HostConsole) -> None:
        from spectui.core.bench.compare import BenchError, run_comparison
        from spectui.core.bench.presets import PresetError
        session = console.link.session
        store = self.history_store()
        job.state = "running"

        def on_event(ev: CompareEvent) -> None:
            job.on_compare_event(ev)
            self.changed(BENCH_SHOWS if ev.kind == "progress" else EVERYTHING)

        try:
            comp = await run_comparison(session, profiles, job.preset, baseline=job.baseline, store=store,
                                        on_event=on_event,
                                        switch=self.app.servers.compare_switch if any(p.nodes for p in profiles)
                                        else None)
            job.finish_comparison(comp)
            self.notify(f"Comparison {comp.get('id') or ''} done: "
                        + ("; ".join(comp.get("verdicts") or []) or "see the table") + ".", timeout=12)
        except asyncio.CancelledError:
            job.interrupted("Cancelled: the run in flight was stopped on the host; what was measured is saved, "
                            "marked interrupted." if job.state == "cancelling" else
                            "The console stopped the comparison.", self._saved_comparison(store, job))
            raise
        except Disconnected as exc:
            job.interrupted(f"The connection dropped ({exc}); the run in flight goes on on the host "
                            f"(spectui bench --collect saves it).", self._saved_comparison(store, job))
            self.notify(job.message, severity="error", timeout=15)
        except (BenchError, SpectuiError, PresetError, ValueError, OSError) as exc:
            busy = self.notify_refused(exc, "Comparison refused")
            job.fail(busy or str(exc))
            if not busy:
                self.notify(f"Comparison: {exc}", severity="error", timeout=15)
        finally:
            self._done(job, console)

    @staticmethod
    def _saved_comparison(store: HistoryStore, job: BenchJob) -> dict | None:
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

    # --- after either -----------------------------------------------------------------------------------------
    def adopt(self, job: BenchJob, worker, console: HostConsole) -> None:
        """A tune's comparison is the benchmark under way on ``console``'s host (the banner, ``v`` and ``c``
        follow it)."""
        console.bench_job = job
        self._workers[console.label] = worker

    def done(self, job: BenchJob, console: HostConsole) -> None:
        self._done(job, console)

    def _done(self, job: BenchJob, console: HostConsole) -> None:
        self._workers.pop(console.label, None)
        console.seat.release()
        if job.active:  # a path above that did not settle it
            job.fail(job.message or "stopped")
        # the bench API gives the traffic back on the session it paused it on; after a reconnection
        # (or a failed restore) this brings it back on the current one
        self.app.traffic.resume()
        if not showing(self.app.screen, "bench", "BenchScreen") and not job.active:
            self.notify(f"{job.what().capitalize()}: {job.state}. v shows the results.", timeout=8)
        self.refresh()

    # --- v, c, e ---------------------------------------------------------------------------------------------
    def open_screen(self) -> None:
        if showing(self.app.screen, "bench", "BenchScreen"):
            return
        from spectui.ui.screens.bench import BenchScreen
        self.push_screen(BenchScreen(self.job))  # without a job it says how to start one (and T tunes)

    def request_cancel(self) -> None:
        job = self.job
        if job is None or not job.active or job.state == "cancelling":
            return
        lines = ["The run in flight is stopped on the host; what it measured so far is saved to the history, "
                 "marked interrupted."]
        if job.kind == "compare":
            lines.append("The profiles not measured yet are skipped; the servers are left as they are.")

        def answered(yes: bool | None) -> None:
            if yes:
                self.cancel()

        self.push_screen(ConfirmScreen("Stop the benchmark?", lines, yes="Stop it"), answered)

    def cancel(self) -> None:
        job = self.job
        worker = self._worker
        if job is None or not job.active or worker is None:
            return
        job.state = "cancelling"
        self.job_changed(job)
        worker.cancel()

    async def stop_for_quit(self, timeout_s: float = 30.0) -> None:
        """Quitting the demo stops its servers: stop the benchmark first, so that what it measured is saved."""
        worker = self._worker
        if worker is None or not self.measuring():
            return
        self.cancel()
        try:
            await within(asyncio.shield(worker.wait()), timeout_s)
        except (asyncio.TimeoutError, WorkerCancelled, WorkerFailed):
            pass

    def export(self, job: BenchJob) -> None:
        if job.active or not job.saved_id:
            self.notify("Nothing to export yet: the results are saved when the benchmark ends.", severity="warning")
            return
        from spectui.core.history import HistoryError

        kind = "comparison" if job.comparison is not None else "run"
        try:
            text = self.history_store().export([job.saved_id], "md")
            path = write_export(text, f"spectui-{kind}-{job.saved_id}.md")
        except (HistoryError, OSError) as exc:
            self.notify(f"Export failed: {exc}", severity="error", timeout=15)
            return
        job.exported = str(path)
        self.job_changed(job)
        self.notify(f"Exported {kind} {job.saved_id} as Markdown to {path}.", timeout=12)
