"""One host's console: its link, its profiles, and everything the console knows of that host.

The App holds one :class:`HostConsole` per host and shows one of them; changing the shown host swaps
nothing and throws nothing away: each host keeps its switch results, its logs, its probes and its alerts
(judged all the time, whichever host is shown). Every action that changes what runs on the host (a switch, a
restart, a stop, an adoption, a benchmark, a tune) holds the host's one
:class:`~spectui.core.console.seat.ActionSeat` for its whole run, whichever host is shown meanwhile; a probe
takes no seat (it starts or stops no server). A replay's seat refuses every action. What the host's link
tells, and what the console does, reach subscribers of :attr:`HostConsole.events` as typed events
(:mod:`spectui.core.console.events`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING

from spectui.agent.protocol import LIVE_STATES
from spectui.core.aio import within
from spectui.core.alerts import AlertConfig
from spectui.core.console.alerts import HostAlerts
from spectui.core.console.events import AlertChanged, JobNews, LinkNews, LogRead, Notice, SeatChanged, SwitchOutcome
from spectui.core.console.logs import HostLogs, unreadable
from spectui.core.console.nodes import NodeHost
from spectui.core.console.seat import ActionSeat
from spectui.core.console.steptimes import StepTimes
from spectui.core.console.switches import SWITCH_FINAL, SwitchBook
from spectui.core.errors import AgentCallError, Disconnected, SpectuiError
from spectui.core.link_events import Events, FrameReceived, ServersForgotten, SessionOpened
from spectui.core.live import HostLink
from spectui.core.profiles import Profile, ProfileLibrary
from spectui.core.session import HostTarget

if TYPE_CHECKING:  # a benchmark's and a tune's jobs: loaded by the actions that start them
    from spectui.core.console.benchjob import BenchJob
    from spectui.core.console.tunejob import TuneJob

log = logging.getLogger(__name__)

NOT_CONNECTED = "Not connected: wait for the connection to come back."
LOG_READ_S = 1.0    # a followed log is read again this often (the host answers reads by offset: it never pushes)
FIRST_LINES = 2000  # what the first read of a log takes from its end


class HostConsole:
    def __init__(self, target: HostTarget, library: ProfileLibrary, *, link: HostLink | None = None,
                 alerts: AlertConfig | None = None) -> None:
        self.target = target
        self.library = library
        self.link: HostLink | None = None
        self.error: str | None = None        # why the last connection attempt failed, until one succeeds
        self.retry_at: float | None = None   # time.monotonic() of the next attempt after a failure
        self.refused = False                 # the operator refused its host key: not tried again
        self.events = Events(f"the console of {target.label}")
        self.seat = ActionSeat(lambda holder: self.events.publish(SeatChanged(self.label, holder)))
        self.switches = SwitchBook()
        self.alerts = HostAlerts(alerts, host=target.label)
        self.logs = HostLogs()
        self.probes: dict[str, dict] = {}    # profile -> its latest probe record (the predicted L*)
        self.step_times = StepTimes()        # its servers' step times at one request (the measured L*)
        self.interconnect: str | None = None  # the header's line of its GPUs' interconnect, once read
        self.bench_job: BenchJob | None = None  # the benchmark under way here (it holds the seat), or the last
        self.tune_job: TuneJob | None = None    # the tune under way here (it holds the seat), or the last
        self._job_task: asyncio.Task | None = None  # the loop of the benchmark or tune under way (:mod:`.jobs`)
        self._session_waiters: list[asyncio.Future] = []
        self.recorder = None                 # a RecordingWriter the link writes to while this host is recorded
        self._unsubscribe: Callable[[], None] | None = None
        self.following: str | None = None    # the log read from the host about once a second (LogRead events)
        self._reader: asyncio.Task | None = None
        self._read_now: asyncio.Event | None = None
        if link is not None:
            self.attach(link)

    @property
    def label(self) -> str:
        return self.target.label

    @property
    def profiles(self) -> list[Profile]:
        return list(self.library)

    @property
    def profile_errors(self) -> list[str]:
        return [str(e) for e in self.library.errors]

    @property
    def read_only(self) -> bool:
        return self.link is not None and self.link.read_only

    @property
    def connected(self) -> bool:
        return self.link is not None and self.link.connected

    @property
    def measuring(self) -> bool:
        """A benchmark runs here now (one of its own, or a tune's comparison)."""
        return self.bench_job is not None and self.bench_job.active

    # --- the link ----------------------------------------------------------------------------------------------
    def attach(self, link: HostLink) -> None:
        """Hear ``link`` (a new one after a failed first connection, or a replay) from now on."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self.link is not None and self.link.recorder is self.recorder:
            self.link.recorder = None
        self.link = link
        self.seat.read_only = link.read_only
        if self.recorder is not None:
            link.recorder = self.recorder
        self._unsubscribe = link.events.subscribe(self._hear)

    def _hear(self, event) -> None:
        if isinstance(event, SessionOpened):
            waiters, self._session_waiters = self._session_waiters, []
            for fut in waiters:
                if not fut.done():
                    fut.set_result(event.session)
        if isinstance(event, ServersForgotten):
            self.forget_gone()
        self.events.publish(LinkNews(self.label, event))
        if isinstance(event, FrameReceived):
            self.judge_alerts()

    def record_to(self, writer) -> None:
        """Write this host's link's events (and the console's) to ``writer``; None: stop."""
        self.recorder = writer
        if self.link is not None and not self.link.read_only:
            self.link.recorder = writer

    def judge_alerts(self, now: float | None = None) -> None:
        for change in self.alerts.judge(self.link, now):
            self.events.publish(AlertChanged(self.label, change))

    def forget_gone(self) -> None:
        """Drop what is kept of servers the link forgot (their logs, their last switch's answer), except the log
        read now (a log screen shows it: its lines stay on the screen)."""
        link = self.link
        known = set(self.library.profiles) | (set(link.servers) | set(link.series) if link is not None else set())
        self.logs.forget(known, {self.following} if self.following else set())
        self.switches.forget(known)

    def next_session(self, old) -> asyncio.Future:
        """The session after ``old`` (a job outlives a dropped connection): resolved when it opens."""
        fut = asyncio.get_running_loop().create_future()
        link = self.link
        if link is not None and link.connected and link.session is not old:
            fut.set_result(link.session)  # it opened before the job noticed the drop
        else:
            self._session_waiters.append(fut)
        return fut

    # --- logs -----------------------------------------------------------------------------------------------------
    def follow_log(self, name: str | None) -> None:
        """Read ``name``'s log from the host now and about once a second from then on, each read that changed it
        published as :class:`LogRead`; None: read none. Call it from the console's event loop."""
        if name == self.following and (name is None or self._reader is not None):
            return
        self.following = name
        if name is None:
            if self._reader is not None:
                self._reader.cancel()
                self._reader = None
            return
        if self._reader is None:
            self._read_now = asyncio.Event()
            self._reader = asyncio.get_running_loop().create_task(self._read_logs(), name=f"logs of {self.label}")
        else:
            self._read_now.set()

    async def _read_logs(self) -> None:
        while self.following is not None:
            await self.read_log(self.following)
            self._read_now.clear()
            try:
                await within(self._read_now.wait(), LOG_READ_S)
            except asyncio.TimeoutError:
                pass

    async def read_log(self, name: str) -> None:
        """One read of ``name``'s new lines (a replay: every log's reads recorded up to the play head)."""
        link = self.link
        if link is None or not link.connected or name not in link.servers or unreadable(link.servers[name]):
            return
        if link.read_only:
            for log, (added, reset) in self.logs.replay(link.logs, link.generation).items():
                self.events.publish(LogRead(self.label, log, added, reset))
            return
        buf = self.logs.buffer(name)
        first = buf.offset is None
        try:
            control = link.control()
            reply = await (control.logs(name, lines=FIRST_LINES) if first else control.logs(name, offset=buf.offset))
        except AgentCallError as exc:
            error = str(exc) if exc.code != "no_log" else "no log yet"
            if buf.error != error:
                buf.error = error
                self.events.publish(LogRead(self.label, name, error=error))
            return
        except (Disconnected, SpectuiError):
            return
        if link.recorder is not None:  # a replay shows the log as it was read here
            link.recorder.write("log", {"name": name, "reply": reply})
        added, reset = buf.take(reply)
        if added or reset or first:
            self.events.publish(LogRead(self.label, name, added, reset))

    # --- actions -------------------------------------------------------------------------------------------
    def refusal(self) -> str | None:
        """Why no action may start on this host now (one sentence), or None."""
        if self.read_only:
            return self.seat.refusal()
        if not self.connected:
            return NOT_CONNECTED
        return self.seat.refusal()

    def answer_in_flight(self) -> bool:
        """Whether the seat is held by a switch or restart whose server has reached its last stage: the host's
        answer is on its way, and the seat frees when it arrives."""
        sw = self.link.switch if self.link is not None else None
        return (self.seat.starting is not None and sw is not None and sw.target == self.seat.starting
                and sw.stage in SWITCH_FINAL)

    async def start_server(self, profile: Profile, act: Callable[[HostLink], Awaitable[dict | None]], *,
                           stopping: list[str] = ()) -> dict | None:
        """Start ``profile``'s server with ``act(link)`` (its answer, or None when it started nothing), keeping
        the answer, or the sentence of the refusal (then raised again), for the server panel."""
        self.switches.begin(profile.name, stopping)
        try:
            result = await act(self.link)
        except (SpectuiError, OSError) as exc:
            self.switch_failed(profile.name, str(exc))
            raise
        if result is not None:
            self.switches.results[profile.name] = result
            self.events.publish(SwitchOutcome(self.label, profile.name, result=result))
        return result

    def switch_failed(self, name: str, error: str) -> None:
        self.switches.errors[name] = error
        self.events.publish(SwitchOutcome(self.label, name, error=error))

    def tell(self, text: str, *, severity: str = "information", title: str = "", timeout: float | None = None) -> None:
        """A sentence for the operator (:class:`Notice`)."""
        self.events.publish(Notice(self.label, text, severity, title, timeout))

    # --- the benchmark or tune under way (:mod:`.jobs`) -----------------------------------------------------------
    def run_job(self, loop: Coroutine) -> None:
        """Run ``loop`` (:func:`~.jobs.run_bench`, :func:`~.jobs.run_compare`, :func:`~.jobs.run_tune`) as this
        host's job; its caller took the seat and set :attr:`bench_job` (and :attr:`tune_job`)."""
        task = asyncio.get_running_loop().create_task(loop, name=f"the benchmark on {self.label}")
        task.add_done_callback(self._job_task_done)
        self._job_task = task

    def _job_task_done(self, task: asyncio.Task) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("the benchmark on %s failed", self.label, exc_info=task.exception())

    def job_changed(self, job: BenchJob, *, progress: bool = False) -> None:
        self.events.publish(JobNews(self.label, job, progress=progress))

    def job_ended(self, job: BenchJob) -> None:
        """The job's loop ended, however it ended: the seat is free, and a job a path left unsettled fails."""
        self._job_task = None
        self.seat.release()
        if job.active:
            job.fail(job.message or "stopped")
        self.events.publish(JobNews(self.label, job, ended=True))

    def cancel_job(self) -> bool:
        """Stop the job under way (``c``): the run in flight is cancelled on the host and what it measured is
        saved, marked interrupted. False when there is none to stop."""
        job, task = self.bench_job, self._job_task
        if job is None or not job.active or job.state == "cancelling" or task is None or task.done():
            return False
        job.state = "cancelling"
        self.job_changed(job, progress=True)
        task.cancel()
        return True

    async def stop_job(self, timeout_s: float = 30.0) -> None:
        """Stop the job under way and wait (up to ``timeout_s``) until what it measured is saved (quitting the
        demo, whose servers stop next)."""
        task = self._job_task
        if task is None or not self.measuring:
            return
        self.cancel_job()
        await asyncio.wait({task}, timeout=timeout_s)

    def leave_job(self) -> None:
        """The console closes: stop following the job under way (a run goes on on the host, which says so)."""
        task, self._job_task = self._job_task, None
        if task is not None and not task.done():
            task.cancel()

    def node_host(self) -> NodeHost:
        """This host as one node of a multi-node server (:mod:`spectui.core.console.nodes`)."""
        async def running(name: str) -> bool:
            link = self.link
            return (link is not None and link.connected
                    and (link.servers.get(name) or {}).get("state") in LIVE_STATES)
        return NodeHost(self.label, lambda: self.link.control(), lambda p: self.link.switch_to(p), running)

