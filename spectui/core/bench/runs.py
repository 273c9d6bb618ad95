"""One benchmark run from the console's side: its spec, its collection, its result.

A run is started on the host (``bench.start``) and lives there: :class:`RunCollector` reads its
records by byte offset, so it can stop at any time (a dropped connection) and continue on a
new session from where it was. :class:`RunResult` is what a finished (or interrupted) run
measured, with its provenance; ``stats`` is computed from the records (``stats.run_stats``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from spectui.agent.protocol import BENCH_FINAL_STATES, Method
from spectui.agent.servers.spec_settings import launch_settings
from spectui.core.bench.datasets import PromptSet
from spectui.core.bench.presets import Preset
from spectui.core.bench.progress import BenchProgress
from spectui.core.bench.result import RunResult
from spectui.core.bench.sglang_import import apply_sglang_totals, parse_sglang_jsonl, records_from_sglang
from spectui.core.bench.stats import run_stats
from spectui.core.errors import AgentCallError, Disconnected
from spectui.core.profiles.secret_flags import redact_argv, redact_profile_dict
from spectui.core.rpc import Event
from spectui.core.session import Session

log = logging.getLogger(__name__)

SERVER_BUSY = "server_busy"  # the agent's error code: require_idle, and the server serves requests spectui did not send
ENGINES = ("spectui", "sglang")


def build_spec(preset: Preset, concurrency: int | None, *, warmup: bool = True, engine: str = "spectui",
               labels: dict | None = None) -> dict:
    """What ``bench.start`` needs for one run of ``preset`` at ``concurrency``.

    The prompts depend only on the preset's dataset, lengths, count and seed: every profile
    and every repeat gets the same ones.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}: choose {' or '.join(ENGINES)}")
    conc = concurrency if concurrency is not None else preset.concurrency[0]
    n_warm = preset.warmup if warmup else 0
    spec: dict[str, Any] = {
        "engine": engine, "output_len": preset.output_len, "concurrency": conc,
        "request_rate": preset.request_rate, "seed": preset.seed, "flush_cache": True,
        "sampling": {"temperature": 0.0, "ignore_eos": True},
        "labels": dict(labels or {}, preset=preset.name, concurrency=conc),
    }
    if engine == "sglang":
        if preset.dataset != "random":
            raise ValueError(f"the sglang engine sends its own random dataset; preset {preset.name} asks for "
                             f"{preset.dataset!r}: use --engine spectui or a preset with 'dataset: random'")
        spec["sglang"] = {"num_prompts": preset.num_prompts, "input_len": preset.input_len,
                          "output_len": preset.output_len, "warmup": n_warm}
    else:
        prompts = PromptSet.build(preset.dataset, preset.num_prompts, preset.input_len, preset.seed, warmup=n_warm,
                                  path=preset.dataset_path)
        spec.update(prompts.spec_fields())
    return spec


class RunCollector:
    """Fetches one run's records by offset until the run has ended; resumable on a new session."""

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.offset = 0
        self.records: list[dict] = []
        self.status: dict = {}
        self.summary: dict | None = None
        self.spec: dict | None = None
        self.sglang_jsonl: str | None = None
        self.complete = False

    async def poll(self, session: Session) -> bool:
        """One fetch; True once the run has ended and every record is in."""
        r = await session.client.call(Method.BENCH_RESULTS, {"run_id": self.run_id, "offset": self.offset}, timeout=60)
        self.records.extend(r["records"])
        self.offset = r["offset"]
        self.status = r["status"]
        if r["complete"]:
            self.summary = r.get("summary")
            self.spec = r.get("spec")
            self.sglang_jsonl = r.get("sglang_jsonl")
            self.complete = True
        return self.complete

    async def wait(self, session: Session, *, poll_s: float = 0.5) -> "RunCollector":
        while not await self.poll(session):
            await asyncio.sleep(poll_s)
        return self


def result_from(collector: RunCollector, *, host: str, gpus: list[str] | None = None,
                sglang_version: str | None = None, profile_content: dict | None = None,
                launch_argv: list[str] | None = None) -> RunResult:
    """A :class:`RunResult` from a complete collection (labels set at start carry the context)."""
    spec = collector.spec or {}
    labels = dict(spec.get("labels") or collector.status.get("labels") or {})
    summary = collector.summary or {}
    server = spec.get("server") or {}
    info = summary.get("server_info_before") or {}
    speculative = launch_settings(info)
    engine = spec.get("engine") or collector.status.get("engine") or "spectui"
    sglang_result = None
    records = collector.records
    if engine == "sglang" and collector.sglang_jsonl:
        rows = parse_sglang_jsonl(collector.sglang_jsonl)
        if rows:
            sglang_result = rows[-1]
            records = records_from_sglang(sglang_result, start=summary.get("measure_started_at"))
    stats = run_stats(records, summary, draft_tokens=(speculative or {}).get("draft_tokens"),
                      speculative=speculative is not None if info and "error" not in info else None)
    if sglang_result is not None:
        apply_sglang_totals(stats, sglang_result)
    state = collector.status.get("state") or "interrupted"
    if state not in BENCH_FINAL_STATES:
        state = "interrupted"
    return RunResult(
        run_id=collector.run_id, host=host, state=state, reason=collector.status.get("reason"),
        server=server.get("name") or collector.status.get("server"),
        profile=labels.get("profile") or server.get("name"),
        profile_hash=labels.get("profile_hash") or server.get("profile_hash"),
        profile_content=redact_profile_dict(profile_content or labels.get("profile_content")),
        launch_argv=redact_argv(launch_argv or server.get("argv")),
        preset=labels.get("preset_content"), concurrency=spec.get("concurrency", labels.get("concurrency")),
        request_rate=spec.get("request_rate"), repeat=labels.get("repeat"), engine=engine,
        started_at=collector.status.get("started_at"), ended_at=collector.status.get("ended_at"),
        gpus=list(gpus or labels.get("gpus") or []),
        sglang_version=info.get("version") or sglang_version or labels.get("sglang_version"),
        speculative=speculative, stats=stats, summary=summary, records=records, sglang_result=sglang_result,
        comparison_key=labels.get("comparison_key"),
        overlapped_with=sorted(set(collector.status.get("overlapped_with") or [])
                               | set(spec.get("overlapped_with") or [])),
        foreign_load=summary.get("foreign_load") or collector.status.get("foreign_load"),
    )


async def host_provenance(session: Session) -> dict:
    """GPU names and SGLang version of the session's host (best effort)."""
    try:
        facts = await session.client.call(Method.HOST_FACTS, timeout=30)
    except (AgentCallError, Disconnected):
        return {"gpus": [], "sglang_version": None}
    gpus = [g.get("name") or "?" for g in facts.get("gpus") or []]
    return {"gpus": gpus, "sglang_version": (facts.get("sglang") or {}).get("version")}


def host_label(session: Session) -> str:
    """The history's name of the session's host (:attr:`HostTarget.history_label`)."""
    return session.target.history_label


class BenchClient:
    """The agent's ``bench.*`` methods for one session."""

    def __init__(self, session: Session):
        self.session = session

    async def start(self, spec: dict, *, server: str | None = None, port: int | None = None,
                    allow_overlap: bool = False, require_idle: bool = False) -> dict:
        """Start a run; a server another live run measures is refused (``AgentCallError`` with code
        :data:`BENCH_BUSY` and a sentence naming that run) unless ``allow_overlap``; with ``require_idle``, a
        server running or queueing requests spectui did not send is refused too (code :data:`SERVER_BUSY`)."""
        params: dict[str, Any] = {"spec": spec}
        if server:
            params["server"] = server
        if port:
            params["port"] = port
        if allow_overlap:
            params["allow_overlap"] = True
        if require_idle:
            params["require_idle"] = True
        return await self.session.client.call(Method.BENCH_START, params, timeout=180)

    async def status(self, run_id: str) -> dict:
        return await self.session.client.call(Method.BENCH_STATUS, {"run_id": run_id})

    async def list(self, limit: int = 200) -> list[dict]:
        return (await self.session.client.call(Method.BENCH_LIST, {"limit": limit}))["runs"]

    async def cancel(self, run_id: str, *, wait_s: float = 15.0) -> dict:
        return await self.session.client.call(Method.BENCH_CANCEL, {"run_id": run_id, "wait_s": wait_s},
                                              timeout=wait_s + 30)

    async def watch(self, run_id: str) -> dict:
        return await self.session.client.call(Method.BENCH_WATCH, {"run_id": run_id})

    async def engines(self, python: str) -> dict:
        return await self.session.client.call(Method.BENCH_ENGINES, {"python": python}, timeout=240)

    def on_progress(self, fn: Callable[[BenchProgress], None]) -> Callable[[], None]:
        """Call ``fn`` with every ``bench_progress`` event; returns the function that stops it."""
        def listener(ev: Event) -> None:
            if ev.name == "bench_progress" and ev.data.get("run_id"):
                fn(BenchProgress.from_event(ev.data))
        return self.session.client.add_listener(listener)


async def pause_demo_traffic(session: Session) -> Callable[[], Awaitable[None]]:
    """Stop the demo's background traffic (``traffic.*``) while a benchmark runs.

    Returns a coroutine function that starts it again as it was (a no-op when none ran): as many requests
    at once, to the server the console named (and chose) for it.
    """
    async def nothing() -> None:
        return None

    try:
        st = await session.client.call(Method.TRAFFIC_STATUS, timeout=10)
    except (AgentCallError, Disconnected):
        return nothing
    if not st.get("running"):
        return nothing
    await session.client.call(Method.TRAFFIC_STOP, timeout=10)
    again: dict[str, Any] = {"concurrency": st.get("concurrency") or 2}
    if st.get("named"):  # the same server as before, chosen as before
        again.update(server=st.get("target"), explicit=bool(st.get("explicit")))

    async def restore() -> None:
        try:
            await session.client.call(Method.TRAFFIC_START, again, timeout=10)
        except (AgentCallError, Disconnected) as exc:
            log.info("the demo's background traffic was not restarted: %s", exc)
    return restore


@dataclass
class RunHandle:
    """A run started on the host: wait for it, or cancel it (see :func:`start_run`)."""

    session: Session
    run_id: str
    started: dict
    collector: RunCollector
    context: dict = field(default_factory=dict)
    restore: Callable[[], Awaitable[None]] | None = None

    async def _restore(self) -> None:
        if self.restore is not None:
            fn, self.restore = self.restore, None
            await fn()

    async def wait(self, *, poll_s: float = 0.5, session: Session | None = None) -> RunResult:
        """Collect the whole run (on ``session`` when the first one was lost) and build its result."""
        if session is not None:
            self.session = session
        await self.collector.wait(self.session, poll_s=poll_s)
        await self._restore()
        result = self.result()
        log.info("benchmark run %s ended: %s", self.run_id, result.state)
        return result

    async def cancel(self) -> RunResult:
        """Stop the run on the host; what it measured so far comes back marked interrupted."""
        log.info("cancelling benchmark run %s", self.run_id)
        await BenchClient(self.session).cancel(self.run_id)
        await self.collector.wait(self.session, poll_s=0.2)
        await self._restore()
        return self.result()

    def result(self) -> RunResult:
        ctx = self.context
        return result_from(self.collector, host=ctx.get("host", "?"), gpus=ctx.get("gpus"),
                           sglang_version=ctx.get("sglang_version"), profile_content=ctx.get("profile_content"),
                           launch_argv=(self.started.get("server") or {}).get("argv"))


async def start_run(session: Session, preset: Preset, *, server: str, concurrency: int | None = None,
                    engine: str = "spectui", warmup: bool = True, labels: dict | None = None,
                    provenance: dict | None = None, pause_traffic: bool = True,
                    allow_overlap: bool = False, require_idle: bool = False) -> RunHandle:
    """Start one run of ``preset`` against the running server ``server`` (the console's ``b``).

    Progress arrives as ``bench_progress`` events (:meth:`BenchClient.on_progress`); the
    returned handle waits for the result or cancels the run. The demo's background traffic,
    if running, is paused until then (``pause_traffic``). A server that another live run
    measures is refused (:data:`BENCH_BUSY`) unless ``allow_overlap``; the run is then marked
    overlapped (``started["overlapped_with"]``, and ``RunResult.overlapped_with``). With ``require_idle`` a
    server that runs or queues requests spectui did not send is refused (:data:`SERVER_BUSY`); without it
    the run measures that load and its result carries it (``RunResult.foreign_load``).
    """
    prov = provenance if provenance is not None else await host_provenance(session)
    servers = (await session.client.call(Method.SERVERS_LIST, timeout=30))["servers"]
    record = next((s for s in servers if s["name"] == server), None)
    profile_content = redact_profile_dict((record or {}).get("profile"))
    lab = dict(labels or {})
    lab.setdefault("profile", server)
    lab.setdefault("profile_hash", (record or {}).get("profile_hash"))
    lab.setdefault("profile_content", profile_content)
    lab["preset_content"] = preset.to_dict()
    lab["gpus"] = prov.get("gpus")
    lab["sglang_version"] = prov.get("sglang_version")
    lab["host"] = host_label(session)
    spec = build_spec(preset, concurrency, warmup=warmup, engine=engine, labels=lab)
    restore = await pause_demo_traffic(session) if pause_traffic else None
    try:
        started = await BenchClient(session).start(spec, server=server, allow_overlap=allow_overlap,
                                                   require_idle=require_idle)
    except BaseException:
        if restore is not None:
            await restore()
        raise
    ctx = {"host": host_label(session), "gpus": prov.get("gpus"), "sglang_version": prov.get("sglang_version"),
           "profile_content": profile_content, "started_at": time.time()}
    log.info("benchmark run %s started: preset %s on %s (engine %s, concurrency %s)", started["run_id"],
             preset.name, server, engine, concurrency if concurrency is not None else "the preset's")
    return RunHandle(session, started["run_id"], started, RunCollector(started["run_id"]), ctx, restore)


async def watch_running(session: Session) -> list[str]:
    """Ask for ``bench_progress`` events of every run still going on the host (after a reconnect)."""
    client = BenchClient(session)
    ids = [st["run_id"] for st in await client.list() if st.get("state") not in BENCH_FINAL_STATES]
    for run_id in ids:
        await client.watch(run_id)
    return ids


async def collect_unsaved(session: Session, store, *, only_finished: bool = True) -> list[RunResult]:
    """Runs on the host that history lacks (e.g. finished while disconnected): fetch and save them."""
    saved = []
    client = BenchClient(session)
    for st in await client.list():
        if only_finished and st.get("state") not in BENCH_FINAL_STATES:
            continue
        host = (st.get("labels") or {}).get("host") or host_label(session)
        if store.has_run(host, st["run_id"]):
            continue
        col = await RunCollector(st["run_id"]).wait(session)
        result = result_from(col, host=host)
        store.save_run(result)
        saved.append(result)
    return saved
