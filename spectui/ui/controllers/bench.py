"""Benchmarks from the console: ``space`` marks, ``b`` runs a preset, ``B`` compares, ``v``, ``c``, ``e``.

:class:`BenchController` owns the marks and the progress of the session's runs; the job (one benchmark at a time
per host, a :class:`~spectui.core.console.benchjob.BenchJob`) is the host's console's, holds that host's action seat
for its whole run and stays with its host when another is shown; its loop (:mod:`spectui.core.console.jobs`) runs
on that console and saves to the history, and the console's events (a ``JobNews``, a ``Notice``) reach the App.
The bench API pauses the demo traffic while it measures and gives it back; the console keeps it paused (the
``t`` key and the reconnection both wait) until the benchmark ends. A server that another run
measures (another console's, or ``spectui bench``'s) is refused by the host: the benchmark screen
and a notification show the host's sentence naming that run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from spectui.agent.protocol import Event as WireEvent
from spectui.agent.protocol import ServerState
from spectui.core.bench.progress import BENCH_BUSY, ProgressBoard
from spectui.core.paths import user_data_dir
from spectui.core.profiles import Profile
from spectui.core.servers import SERVER_BENCHMARKED, is_external
from spectui.core.console import HostConsole
from spectui.ui.controllers.base import Controller
from spectui.ui.dashboard_views import showing
from spectui.ui.screens.confirm import ConfirmScreen

if TYPE_CHECKING:  # the presets, the job and its screen, the history: loaded by the keys that start a benchmark or
    # show one
    from spectui.core.bench import Preset
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


class BenchController(Controller):
    """The console's benchmark keys and the benchmark under way."""

    def __init__(self, app) -> None:
        super().__init__(app)
        self._recorded: tuple | None = None   # the job (id, snapshot less its clock) last written to the recording
        self._replayed: dict | None = None    # a replay: the recorded job shown
        self.board = ProgressBoard()          # every bench_progress event of the sessions
        self.marked: list[str] = []           # profiles marked for B, in the order marked
        self.last_preset: str | None = None

    @property
    def job(self) -> BenchJob | None:
        """The shown host's benchmark: under way, or the last one."""
        return self.console.bench_job

    @job.setter
    def job(self, job: BenchJob | None) -> None:
        self.console.bench_job = job

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
        """Show the host's sentence when it refused for a live benchmark run
        (:func:`~spectui.core.console.jobs.refusal`) and return it; None, and nothing shown, for any other error."""
        from spectui.core.console.jobs import refusal
        text = refusal(exc, code)
        if text is not None:
            self.notify(text, title=title, severity="warning", timeout=20, markup=False)
        return text

    def notify_benchmarked(self, exc: Exception, title: str) -> bool:
        """Show the host's sentence when it refused to stop a server that a live benchmark run measures
        (another console's, or ``spectui bench``'s); False for any other error."""
        return self.notify_refused(exc, title, SERVER_BENCHMARKED) is not None

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
            from spectui.core.console.jobs import run_bench
            console.run_job(run_bench(console, job))
            self.refresh()

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
            from spectui.core.console.jobs import run_compare
            console.run_job(run_compare(console, job, profiles, switch=self.app.servers.compare_switch
                                        if any(p.nodes for p in profiles) else None))
            self.refresh()

    # --- after either -----------------------------------------------------------------------------------------
    def ended(self, job: BenchJob, console: HostConsole) -> None:
        """``console``'s benchmark or tune ended (:class:`~spectui.core.console.JobNews`): the demo traffic comes back
        and, off that benchmark's screen, a notification says so (naming its host when another is shown)."""
        # the bench API gives the traffic back on the session it paused it on; after a reconnection
        # (or a failed restore) this brings it back on the current one
        self.app.traffic.resume()
        if console is not self.console:
            self.notify(f"{console.label}: {job.what()}: {job.state}. H shows that host; v there shows the results.",
                        timeout=8)
        elif not showing(self.app.screen, "bench", "BenchScreen") and not job.active:
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
        self.console.cancel_job()

    def export(self, job: BenchJob) -> None:
        if job.active or not job.saved_id:
            self.notify("Nothing to export yet: the results are saved when the benchmark ends.", severity="warning")
            return
        from spectui.core.console.jobs import history_store
        from spectui.core.history import HistoryError

        kind = "comparison" if job.comparison is not None else "run"
        try:
            text = history_store().export([job.saved_id], "md")
            path = write_export(text, f"spectui-{kind}-{job.saved_id}.md")
        except (HistoryError, OSError) as exc:
            self.notify(f"Export failed: {exc}", severity="error", timeout=15)
            return
        job.exported = str(path)
        self.job_changed(job)
        self.notify(f"Exported {kind} {job.saved_id} as Markdown to {path}.", timeout=12)
