"""A benchmark a host's console runs (its :attr:`~spectui.core.console.HostConsole.bench_job`): a preset against
the ready server (``b``), or a comparison of the marked profiles (``B``). It holds its host's action seat for its
whole run and stays with its host whichever host the console shows.

The app's workers feed it (``bench_progress`` events through a ``ProgressBoard``, a
comparison's ``CompareEvent``s, the result); the benchmark screen and the banner read it at
their refresh. Plain data and text, no Textual: tested on its own.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

from spectui.core.bench import BenchProgress, CompareEvent, Preset, RunResult
from spectui.core.bench.positions import acceptance_from_pooled, position_line

ACTIVE = ("starting", "running", "cancelling")
LIVE_NO_COSTS = "the run is still measuring"


@dataclass
class Step:
    """One profile of a comparison."""

    name: str
    state: str = "waiting"        # waiting | switching | measuring | measured | failed
    detail: str | None = None
    runs_done: int = 0
    runs_total: int = 0
    states: list = field(default_factory=list)   # every state it went through, in order

    def __setattr__(self, key: str, value) -> None:
        if key == "state" and (not self.__dict__.get("states") or self.states[-1] != value):
            self.__dict__.setdefault("states", []).append(value)
        object.__setattr__(self, key, value)

    def __post_init__(self) -> None:
        self.states = [self.state]


class JobClock:
    """State and time of a job the console runs (``state``, ``started_at``, ``ended_at``)."""

    @property
    def active(self) -> bool:
        return self.state in ACTIVE

    def elapsed_s(self) -> float:
        return (self.ended_at or time.monotonic()) - self.started_at


@dataclass
class BenchJob(JobClock):
    kind: str                     # "run" (b) | "compare" (B)
    preset: Preset
    host: str
    server: str | None = None     # b: the server measured
    profiles: tuple[str, ...] = ()  # B: in order
    baseline: str | None = None
    state: str = "starting"       # starting | running | cancelling | done | interrupted | failed
    message: str | None = None
    steps: dict[str, Step] = field(default_factory=dict)
    run_id: str | None = None     # the run in flight (or the last one)
    current: str | None = None    # the profile being measured
    index: int = 0                # runs started so far, of ``total``
    total: int = 1
    progress: BenchProgress | None = None
    result: RunResult | None = None
    comparison: dict | None = None
    saved_id: str | None = None   # the history id: "12" (a run) or "c3" (a comparison)
    exported: str | None = None   # where ``e`` wrote the Markdown
    traffic_paused: bool = False  # the demo traffic is paused while it measures
    started_at: float = field(default_factory=time.monotonic)
    ended_at: float | None = None

    @classmethod
    def single(cls, preset: Preset, host: str, server: str) -> "BenchJob":
        return cls("run", preset, host, server=server, profiles=(server,), current=server, total=1)

    @classmethod
    def comparing(cls, preset: Preset, host: str, profiles: list[str], baseline: str) -> "BenchJob":
        per = len(preset.concurrency) * preset.repeats
        steps = {n: Step(n, runs_total=per) for n in profiles}
        return cls("compare", preset, host, profiles=tuple(profiles), baseline=baseline, steps=steps,
                   total=per * len(profiles))

    # --- state ------------------------------------------------------------------------------------
    def started(self, run_id: str) -> None:
        self.run_id = run_id
        self.index = max(self.index, 1)
        self.state = "running"

    def on_progress(self, p: BenchProgress | None) -> None:
        """The latest ``bench_progress`` of the run in flight (others are ignored)."""
        if p is None or p.run_id != self.run_id or p == self.progress:
            return
        self.progress = p

    def on_compare_event(self, ev: CompareEvent) -> None:
        step = self.steps.get(ev.profile) if ev.profile else None
        if ev.kind == "switching" and step:
            self.state = "running"
            self.current = ev.profile
            step.state, step.detail = "switching", None
        elif ev.kind == "switched" and step:
            step.state = "measuring"
        elif ev.kind == "switch_failed" and step:
            step.state, step.detail = "failed", str(ev.detail or "")
        elif ev.kind == "run_started":
            self.run_id, self.index, self.current = ev.run_id, ev.index, ev.profile
            self.progress = None
            if step:
                step.state = "measuring"
        elif ev.kind == "progress":
            if ev.progress is not None and ev.run_id == self.run_id:
                self.progress = ev.progress
        elif ev.kind == "run_finished" and step:
            step.runs_done += 1
            if step.runs_done >= step.runs_total:
                step.state = "measured"
        elif ev.kind == "finished" and isinstance(ev.detail, dict):
            self.comparison = ev.detail
            self.saved_id = ev.detail.get("id")
        elif ev.kind == "interrupted":
            self.message = str(ev.detail or "interrupted")

    def finish_run(self, result: RunResult, saved_id: str | None) -> None:
        self.result = result
        self.saved_id = saved_id
        self.state = "done" if result.state == "done" else "interrupted"
        if result.state != "done" and result.reason:
            self.message = result.reason
        self._end()

    def finish_comparison(self, comp: dict) -> None:
        self.comparison = comp
        self.saved_id = comp.get("id") or self.saved_id
        self.state = "done" if comp.get("state") == "complete" else "interrupted"
        if comp.get("reason"):
            self.message = comp["reason"]
        self._end()

    def interrupted(self, reason: str, comp: dict | None = None) -> None:
        if comp is not None:
            self.comparison = comp
            self.saved_id = comp.get("id") or self.saved_id
        self.state = "interrupted"
        self.message = reason
        self._end()

    def fail(self, message: str) -> None:
        self.state = "failed"
        self.message = message
        self._end()

    def _end(self) -> None:
        self.ended_at = time.monotonic()

    # --- a recording's copy ---------------------------------------------------------------------------------
    def snapshot(self) -> dict:
        """Everything the benchmark screen shows, as plain data (a recording keeps it; :meth:`from_snapshot`)."""
        return {"kind": self.kind, "preset": self.preset.to_dict(), "host": self.host, "server": self.server,
                "profiles": list(self.profiles), "baseline": self.baseline, "state": self.state,
                "message": self.message, "run_id": self.run_id, "current": self.current, "index": self.index,
                "total": self.total, "saved_id": self.saved_id, "comparison": self.comparison,
                "progress": dataclasses.asdict(self.progress) if self.progress is not None else None,
                "result": self.result.to_dict() if self.result is not None else None,
                "steps": {n: {"state": st.state, "detail": st.detail, "runs_done": st.runs_done,
                              "runs_total": st.runs_total, "states": list(st.states)} for n, st in self.steps.items()},
                "elapsed_s": round(self.elapsed_s(), 1)}

    @classmethod
    def from_snapshot(cls, d: dict) -> "BenchJob":
        """The job as a recording kept it (:meth:`snapshot`); its clock stands where the recording's did."""
        steps = {}
        for name, sd in (d.get("steps") or {}).items():
            step = Step(name, sd.get("state", "waiting"), sd.get("detail"), sd.get("runs_done", 0),
                        sd.get("runs_total", 0))
            step.__dict__["states"] = list(sd.get("states") or [step.state])
            steps[name] = step
        job = cls(d["kind"], Preset.from_dict(d["preset"]), d.get("host") or "?", server=d.get("server"),
                  profiles=tuple(d.get("profiles") or ()), baseline=d.get("baseline"), state=d.get("state", "done"),
                  message=d.get("message"), steps=steps, run_id=d.get("run_id"), current=d.get("current"),
                  index=d.get("index", 0), total=d.get("total", 1), saved_id=d.get("saved_id"),
                  comparison=d.get("comparison"),
                  progress=BenchProgress.from_event(d["progress"]) if d.get("progress") else None,
                  result=RunResult.from_dict(d["result"]) if d.get("result") else None)
        now = time.monotonic()
        job.started_at = now - float(d.get("elapsed_s") or 0.0)
        job.ended_at = None if job.active else now
        return job

    # --- text -------------------------------------------------------------------------------------------
    def title(self) -> str:
        if self.kind == "compare":
            return f"Comparison · {', '.join(self.profiles)} · {self.preset.name}"
        return f"Benchmark · {self.server} · {self.preset.name}"

    def what(self) -> str:
        """What is measured, in the words the notifications use."""
        if self.kind == "compare":
            return f"the comparison of {', '.join(self.profiles)}"
        return f"the {self.preset.name} run on {self.server}"

    def progress_text(self) -> str:
        """The run in flight: ``3/6 requests, 61.2 tok/s, accept 2.04, ETA 8 s``."""
        p = self.progress
        if p is None:
            return "starting the run on the host" if self.state != "cancelling" else "cancelling"
        return p.line()

    def positions_text(self) -> str | None:
        """While a speculative run measures, its acceptance per draft position over the requests finished so
        far: ``so far, 14 requests: P(accept) by position 1..3: 0.71 0.52 0.33 → accept length 2.56; ...``;
        ``None`` otherwise (a run without speculation, none finished yet, the job over)."""
        p = self.progress
        if not self.active or p is None or p.finished:
            return None
        obj = acceptance_from_pooled(p.positions, no_costs=LIVE_NO_COSTS)
        line = position_line(obj)
        if line is None:
            return None
        n = obj.get("requests")
        return f"so far, {n} request{'s' if n != 1 else ''}: {line}" if n else f"so far: {line}"

    def fraction(self) -> float | None:
        """How far the whole job is (0..1), counting finished runs and the one in flight."""
        p = self.progress
        inner = 0.0
        if p is not None and p.total:
            inner = min(1.0, p.done / p.total)
        done_runs = max(0, self.index - 1) + inner if self.index else 0.0
        if self.kind == "compare":
            done_runs = sum(s.runs_done for s in self.steps.values()) + (inner if self.state == "running" else 0.0)
        return min(1.0, done_runs / max(1, self.total))

    def banner_text(self) -> str:
        """One line for the dashboard while it runs: who, which run, and how far."""
        who = self.current or self.server or "?"
        if self.kind == "compare":
            text = f"comparing {', '.join(self.profiles)} with {self.preset.name}: {who}, run {self.index}/{self.total}"
            step = self.steps.get(who)
            if step is not None and step.state == "switching":
                return text + ": switching"
        else:
            text = f"benchmarking {who} with {self.preset.name}"
        if self.state == "cancelling":
            return text + ": cancelling"
        if self.message:
            text = f"{text}: {self.message}"
        else:
            text = f"{text}: {self.progress_text()}"
        return text + (" · demo traffic paused" if self.traffic_paused else "")
