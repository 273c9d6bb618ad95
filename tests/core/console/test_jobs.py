"""A host's benchmark run by its console, without Textual: it holds the seat for its whole run, what it does
arrives as events that carry their data (JobNews, Notice), ``c`` cancels the run on the host and saves what it
measured, and a console that closes stops following without cancelling the run on the host."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

import spectui.core.bench.runs as runs
from spectui.core.bench import Preset, RunResult
from spectui.core.console import HostConsole, JobNews, Notice, SeatChanged
from spectui.core.console.benchjob import BenchJob
from spectui.core.console.jobs import run_bench
from spectui.core.errors import AgentCallError
from spectui.core.history import HistoryStore
from spectui.core.live import HostLink, LinkState
from spectui.core.profiles import ProfileLibrary
from spectui.core.session import HostTarget

PRESET = Preset(name="short", dataset="random", input_len=16, output_len=8, num_prompts=4, concurrency=(1,))


class Handle:
    """A run on the host that ends when the test says (``finish``), or when it is cancelled."""

    def __init__(self, run_id: str = "run-1"):
        self.run_id = run_id
        self.ended = asyncio.Event()
        self.cancelled = False

    def result(self, state: str, reason: str | None = None) -> RunResult:
        return RunResult(run_id=self.run_id, host="gpu-a", state=state, reason=reason, server="alpha",
                         profile="alpha", stats={"output_tok_s": 41.5, "completed": 2})

    async def wait(self, *, session=None) -> RunResult:
        await self.ended.wait()
        return self.result("done")

    async def cancel(self) -> RunResult:
        self.cancelled = True
        return self.result("interrupted", "cancelled")


@pytest.fixture
def host(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(tmp_path / "data"))
    target = HostTarget(kind="ssh", destination="gpu-a")
    link = HostLink(target)
    link.state = LinkState.CONNECTED
    link.session = SimpleNamespace(target=target)
    console = HostConsole(target, ProfileLibrary(), link=link)
    heard: list = []
    console.events.subscribe(heard.append)
    return console, heard


def start(console: HostConsole, monkeypatch, started) -> BenchJob:
    """What ``b`` does: the seat, the job, its loop."""
    async def start_run(session, preset, *, server):
        return await started()
    monkeypatch.setattr(runs, "start_run", start_run)
    job = BenchJob.single(PRESET, "gpu-a", "alpha")
    assert console.seat.take("benchmarking alpha")
    console.bench_job = job
    console.run_job(run_bench(console, job))
    return job


async def until(predicate, what: str, timeout: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, what
        await asyncio.sleep(0.01)


async def running(console: HostConsole, monkeypatch, run_id: str = "run-1") -> tuple[BenchJob, Handle]:
    """A benchmark under way on ``console``, its run started on the host."""
    handle = Handle(run_id)

    async def started():
        return handle
    job = start(console, monkeypatch, started)
    await until(lambda: job.run_id == run_id, "the run started")
    return job, handle


async def test_a_finished_run_is_saved_told_and_frees_the_seat(host, monkeypatch):
    console, heard = host
    job, handle = await running(console, monkeypatch)
    assert console.measuring and console.seat.holder == "benchmarking alpha"
    handle.ended.set()
    await until(lambda: not console.measuring, "the run ended")
    assert job.state == "done" and job.saved_id is not None and console.seat.holder is None
    assert [r["run_id"] for r in HistoryStore().runs()] == ["run-1"]
    (notice,) = [e for e in heard if isinstance(e, Notice)]
    assert notice.host == "gpu-a" and notice.severity == "information"
    assert notice.text == f"alpha, short: done, 41.5 tok/s; saved as run {job.saved_id}."
    # the seat is free before the job is said to have ended, and the end carries the job
    ends = [type(e).__name__ for e in heard if isinstance(e, SeatChanged) and e.holder is None
            or isinstance(e, JobNews) and e.ended]
    assert ends == ["SeatChanged", "JobNews"]
    assert [e.job for e in heard if isinstance(e, JobNews) and e.ended] == [job]


async def test_c_cancels_the_run_on_the_host_and_keeps_what_it_measured(host, monkeypatch):
    console, heard = host
    job, handle = await running(console, monkeypatch)
    assert console.cancel_job()
    assert job.state == "cancelling" and not console.cancel_job()  # a second c changes nothing
    await until(lambda: not console.measuring, "the job ended")
    assert handle.cancelled and job.state == "interrupted" and job.message == "cancelled"
    assert [(r["run_id"], r["state"]) for r in HistoryStore().runs()] == [("run-1", "interrupted")]
    assert console.seat.holder is None and any(isinstance(e, JobNews) and e.ended for e in heard)


async def test_a_console_that_closes_stops_following_and_leaves_the_run_on_the_host(host, monkeypatch):
    console, _heard = host
    job, handle = await running(console, monkeypatch)
    console.leave_job()
    await until(lambda: not job.active, "the job ended")
    assert not handle.cancelled and job.state == "failed"
    assert "goes on on the host (spectui bench --collect saves it" in job.message
    assert console.seat.holder is None and HistoryStore().runs() == []


async def test_a_run_refused_for_a_live_benchmark_tells_the_hosts_sentence(host, monkeypatch):
    console, heard = host

    async def started():
        raise AgentCallError("bench_busy", "alpha is being measured by run r-7 (spectui bench on gpu-a)")
    job = start(console, monkeypatch, started)
    await until(lambda: not job.active, "the job ended")
    sentence = "Alpha is being measured by run r-7 (spectui bench on gpu-a)."
    assert job.state == "failed" and job.message == sentence
    assert [(n.text, n.title, n.severity) for n in heard if isinstance(n, Notice)] == \
        [(sentence, "Benchmark refused", "warning")]
    assert console.seat.holder is None


async def test_stop_job_waits_until_the_cancelled_run_is_saved(host, monkeypatch):
    console, _heard = host
    job, handle = await running(console, monkeypatch)
    await console.stop_job(timeout_s=5)
    assert handle.cancelled and job.state == "interrupted" and len(HistoryStore().runs()) == 1
