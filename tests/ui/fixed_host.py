"""A host that answers the console from fixed inputs, for snapshot tests whose SVG must not change run to run.

The real :class:`~spectui.ui.app.SpectuiApp` and :class:`~spectui.core.live.HostLink` run unchanged; only the
session is this module's: its client answers the agent's methods from values built here (host facts, the
servers, a switch plan, a log) and sends GPU frames, server records and server frames computed from fixed
formulas at fixed times. :func:`frozen_clock` stops the console's clock (and a link's :meth:`HostLink.now`) at
:data:`NOW`, so ages, the switch's elapsed time and the header's clock read the same on every run and every xdist worker.
"""

from __future__ import annotations

import asyncio
import importlib
import math
import pkgutil
import sys
import time
import types
from dataclasses import dataclass, field

from spectui.core.errors import AgentCallError
from spectui.core.live import HostLink
from spectui.core.profiles import Profile
from spectui.core.rpc import Event
from spectui.core.session import HostTarget

NOW = 1_796_000_000.0          # the console's frozen time.time() (a fixed date in 2026)
MONOTONIC = 50_000.0           # the console's frozen time.monotonic()
PYTHON = "/usr/bin/python3"    # the host's interpreter, as the agent's hello names it
STATE = "/home/op/.cache/spectui"
GPU_NAME = "NVIDIA RTX PRO 6000 Blackwell"
GPU_MIB = 98304.0
GPUS = 8


def console_modules():
    """The console's modules (``spectui.ui`` and below), all loaded: the console loads a screen or a job when it is
    first used, so each is imported here, not only what importing the App loads."""
    package = importlib.import_module("spectui.ui")
    for found in pkgutil.walk_packages(package.__path__, "spectui.ui."):
        importlib.import_module(found.name)
    return [m for n, m in sorted(sys.modules.items()) if m is not None and (n == "spectui.ui" or
                                                                            n.startswith("spectui.ui."))]


def replace_in_console(monkeypatch, name: str, value, where=lambda current: True) -> None:
    """Replace the global ``name`` in every console module that has one (``where`` it is what is meant)."""
    for module in console_modules():
        current = getattr(module, name, None)
        if current is not None and where(current):
            monkeypatch.setattr(module, name, value)


def frozen_clock(monkeypatch) -> None:
    """Stop the clock the console draws with (its panels' ages, the switch's elapsed time, the header's time),
    in UTC; Textual's own timers keep running."""
    clock = types.SimpleNamespace(time=lambda: NOW, monotonic=lambda: MONOTONIC, strftime=time.strftime,
                                  localtime=time.gmtime, gmtime=time.gmtime, perf_counter=time.perf_counter,
                                  sleep=time.sleep)
    replace_in_console(monkeypatch, "time", clock, where=lambda current: current is time)
    monkeypatch.setattr(HostLink, "now", lambda self: NOW)  # the time the console shows a live host at


# --- what the host sends -------------------------------------------------------------------------------------------
def gpu_event(seq: int, t: float, load: float, used_mib: float, pgid: int | None) -> dict:
    """One GPU frame of the 8-GPU host; ``load`` 0..1 sets utilization, power and temperature."""
    gpus = []
    for i in range(GPUS):
        wobble = 0.04 * math.sin(seq / 3.0 + i)
        util = max(0.0, min(100.0, 100.0 * (load + wobble))) if load else 0.0
        procs = [{"pid": 4100 + i, "used_mib": used_mib, "user": "op", "command": "sglang::scheduler_TP%d" % i,
                  "pgid": pgid}] if pgid else []
        gpus.append({"index": i, "name": GPU_NAME, "uuid": "GPU-5e1a0000-0000-4000-8000-%012d" % i,
                     "util_pct": round(util, 1), "mem_used_mib": used_mib, "mem_total_mib": GPU_MIB,
                     "power_w": round(32.0 + 4.5 * util, 1), "power_limit_w": 600.0,
                     "temp_c": round(31.0 + 0.35 * util, 1), "sm_clock_mhz": 2400.0 if util else 180.0,
                     "processes": procs})
    return {"seq": seq, "t": t, "source": "sim", "gpus": gpus, "missing": [], "interval_s": 1.0}


def server_frame(name: str, seq: int, t: float, *, speculative: dict | None, accept: float | None, tok_s: float,
                 running: float = 1.0) -> dict:
    """One server frame as the agent sends it: a speculative server's accept length and rates, or a plain one's."""
    rates = []
    if speculative and accept is not None:
        steps, drafts = speculative["num_steps"], speculative["draft_tokens"]
        rates = [{"value": round((accept - 1) / steps, 3), "formula": "drafts-only", "source": "derived",
                  "stale": False},
                 {"value": round(accept / drafts, 3), "formula": "incl-bonus/draft-tokens", "source": "derived",
                  "stale": False}]
    return {
        "name": name, "seq": seq, "t": t, "state": "ready", "window_s": 1.0,
        "accept_length": {"value": accept, "source": "metrics-counters", "stale": False} if accept else None,
        "accept_rate": rates,
        "cumulative_accept_length": ({"value": 2.04, "source": "server_info", "cumulative": True}
                                     if speculative else None),
        "gen_throughput": {"value": tok_s, "source": "realtime-counter", "stale": False, "window_s": 2.0,
                           "age_s": 0.0},
        "per_stream": {"value": tok_s / max(running, 1.0), "source": "itl-histogram", "stale": False,
                       "window_s": 5.0, "age_s": 0.0},
        "running_req": running, "queue_req": 0.0, "token_usage": 0.02,
        "ttft_ms": {"p50": 100.0, "p50_rel": "<", "p99": 250.0, "p99_rel": "<", "mean": 61.0, "count": 40,
                    "source": "metrics-histogram", "window_s": 30.0},
        "itl_ms": ({"p50": 35.0, "p50_rel": "<", "p99": 50.0, "p99_rel": "<", "mean": 33.1, "count": 4000,
                    "source": "metrics-histogram", "window_s": 30.0} if speculative else
                   {"p50": 15.0, "p50_rel": "<", "p99": 25.0, "p99_rel": "<", "mean": 12.2, "count": 4000,
                    "source": "metrics-histogram", "window_s": 30.0}),
        "speculative": speculative or {"algorithm": None},
        "dp_ranks": None, "version": "0.5.23", "sources": {"server_info": "ok", "metrics": "ok", "log": "ok"},
    }


def speculative_of(profile: Profile) -> dict | None:
    args = profile.args
    algo = args.get("speculative-algorithm")
    if not algo:
        return None
    return {"algorithm": algo, "num_steps": args.get("speculative-num-steps"),
            "topk": args.get("speculative-eagle-topk"), "draft_tokens": args.get("speculative-num-draft-tokens")}


def server_record(profile: Profile, state: str, *, pid: int, started_at: float, ready_at: float | None = None,
                  ended_at: float | None = None, progress: dict | None = None) -> dict:
    """A server as the agent lists it (``servers.list`` and ``server`` events)."""
    gpus = [int(g) for g in profile.gpus]
    live = state not in ("stopped", "failed", "crashed")
    return {
        "name": profile.name, "state": state, "pid": pid if live else None, "pgid": pid if live else None,
        "host": profile.host, "port": profile.port, "gpus": gpus, "profile_hash": profile.content_hash,
        "argv": [PYTHON, "-m", "spectui.sim.server", "--model-path", profile.model, "--port", str(profile.port)],
        "env_keys": ["CUDA_VISIBLE_DEVICES"], "started_at": started_at, "ready_at": ready_at,
        "ended_at": ended_at, "progress": progress, "reason": None, "exit_status": None,
        "log_path": f"{STATE}/servers/{profile.name}.log", "profile": profile.redacted(), "stop": None,
        "load_s": (ready_at - started_at) if ready_at else None, "origin": "spectui", "user": "op", "uid": 1000,
        "started_by": None,
        "log_source": {"kind": "file", "readable": True, "text": f"following {STATE}/servers/{profile.name}.log"},
        "metrics_note": None, "can_signal": True, "why_not": None, "model": profile.model,
        "tp_size": profile.args.get("tp-size"), "speculative": speculative_of(profile) or {}, "sid": None,
        "start_ticks": 5_000_000 + pid,
    }


def log_lines(name: str, accept: bool, n: int = 60) -> list[str]:
    """A server's log as SGLang writes it: requests served, decode batches with (speculative) accept length."""
    lines = []
    for i in range(n):
        ts = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(NOW - n + i))
        if i % 3 == 0:
            lines.append(f'[{ts}] INFO:     127.0.0.1:{41000 + i} - "POST /generate HTTP/1.1" 200')
        elif i % 3 == 1:
            lines.append(f"[{ts} TP0] Prefill batch, #new-seq: 1, #new-token: {60 + i}, #cached-token: 0, "
                         f"token usage: 0.02, #running-req: 0, #queue-req: 0")
        else:
            spec = f"accept len: {2.0 + 0.3 * math.sin(i / 4):.2f}, accept rate: {0.34 + 0.1 * math.sin(i / 4):.2f}, " \
                if accept else ""
            lines.append(f"[{ts} TP0] Decode batch, #running-req: 1, #token: {150 + i}, token usage: 0.02, {spec}"
                         f"cuda graph: True, gen throughput (token/s): {62.0 + 4 * math.sin(i / 5):.2f}, #queue-req: 0")
    return lines


# --- the session ---------------------------------------------------------------------------------------------------
TOPOLOGY = {"available": True, "gpus": [{"index": i, "name": GPU_NAME} for i in range(GPUS)],
            "interconnect": {"kind": "pcie", "pcie_gen": 5, "pcie_width": 16}}


class FixedClient:
    """The agent client's surface the console uses, answered from :class:`FixedHost`."""

    def __init__(self, host: "FixedHost") -> None:
        self.host = host
        self.hello = {"type": "hello", "protocol": 1, "pid": 4000, "python": PYTHON, "python_version": "3.11.7"}
        self.closed = asyncio.Event()
        self.close_reason: str | None = None
        self.rtt_s: float | None = 0.0004
        self.host_label = "demo (simulated host)"
        self._listeners: list = []

    def add_listener(self, fn):
        self._listeners.append(fn)
        return lambda: self._listeners.remove(fn) if fn in self._listeners else None

    def emit(self, name: str, data: dict, received_at: float) -> None:
        ev = Event(name, data, received_at)
        for fn in list(self._listeners):
            fn(ev)

    async def call(self, method: str, params: dict | None = None, *, timeout: float | None = 30.0):
        answer = self.host.answers.get(method)
        if answer is None:
            raise AgentCallError("unknown_method", f"{method} is not answered on this host")
        result = answer(self, params or {})
        return await result if asyncio.iscoroutine(result) else result

    async def rtt(self, timeout: float = 10.0) -> float:
        return self.rtt_s

    def reply_age_s(self) -> float | None:
        return 0.0

    async def close(self) -> None:
        self.closed.set()


@dataclass
class FixedSession:
    target: HostTarget
    client: FixedClient

    @property
    def hello(self) -> dict:
        return self.client.hello

    async def close(self) -> None:
        await self.client.close()


@dataclass
class FixedHost:
    """The host's servers and what it sends once the console subscribes.

    ``serving``: the server that is ready and serving the demo traffic (its frames fill the panels);
    ``served_before``: a server that ran before it, at one request (its frames give the break-even L*).
    """

    profiles: dict[str, Profile]
    serving: str | None = None
    served_before: str | None = None
    frames: int = 120
    plan: dict | None = None
    answers: dict = field(default_factory=dict)
    switching: list[dict] = field(default_factory=list)   # switch/server events sent while server.switch runs
    client: FixedClient | None = None

    def __post_init__(self) -> None:
        self.answers.update({
            "host.facts": lambda c, p: self.facts(),
            "servers.list": lambda c, p: {"servers": list(self.records().values())},
            "gpu.subscribe": lambda c, p: {"interval_s": p.get("interval_s", 1.0)},
            "server.telemetry.subscribe": self._subscribe,
            "traffic.start": lambda c, p: {"running": True, "concurrency": p.get("concurrency", 1)},
            "traffic.stop": lambda c, p: {"running": False},
            "probe.topology": lambda c, p: TOPOLOGY,
            "server.plan_switch": lambda c, p: self.plan or {"target": p.get("name"), "stops": [], "refusals": []},
            "server.switch": self._switch,
            "server.logs": self._logs,
        })

    def session(self, target: HostTarget) -> FixedSession:
        self.client = FixedClient(self)
        return FixedSession(target, self.client)

    def facts(self) -> dict:
        return {"hostname": "gpu-host", "os": "Debian GNU/Linux 12 (bookworm)", "kernel": "6.1.0", "arch": "x86_64",
                "cpu_count": 64, "python": {"path": PYTHON, "version": "3.11.7"},
                "sglang": {"python": PYTHON, "python_version": "3.11.7", "installed": False, "path": None,
                           "version": None, "message": f"SGLang is not installed for {PYTHON}"},
                "nvidia_driver": "580.95.05", "simulated": True,
                "gpus": [{"index": i, "name": GPU_NAME, "uuid": "GPU-5e1a0000-0000-4000-8000-%012d" % i,
                          "mem_total_mib": GPU_MIB} for i in range(GPUS)]}

    def _speculative(self, name: str) -> bool:
        p = self.profiles.get(name)
        return bool(p and speculative_of(p))

    def records(self) -> dict[str, dict]:
        out = {}
        start = NOW - self.frames - 30
        if self.served_before:
            out[self.served_before] = server_record(self.profiles[self.served_before], "stopped", pid=3900,
                                                    started_at=start - 200, ready_at=start - 190, ended_at=start - 5)
        if self.serving:
            out[self.serving] = server_record(self.profiles[self.serving], "ready", pid=4000, started_at=start,
                                              ready_at=start + 4)
        return out

    def _logs(self, client: FixedClient, params: dict) -> dict:
        """The log's last lines once; a poll from the end after that finds nothing new."""
        if params.get("offset") is not None:
            return {"lines": [], "offset": params["offset"], "reset": False}
        return {"lines": log_lines(params["name"], self._speculative(params["name"])), "offset": 4096, "reset": False}

    def _subscribe(self, client: FixedClient, params: dict) -> dict:
        """Send the history a console that had been watching would hold: GPU and server frames, one a second."""
        n = self.frames
        if self.served_before:
            prior = self.profiles[self.served_before]
            for i in range(n // 2):
                t = NOW - 2 * n + i
                client.emit("server_frame", server_frame(prior.name, i + 1, t, speculative=speculative_of(prior),
                                                         accept=None, tok_s=round(80.5 + 1.5 * math.sin(i / 4), 2)),
                            t)
        serving = self.profiles.get(self.serving) if self.serving else None
        spec = speculative_of(serving) if serving else None
        for i in range(n):
            t = NOW - n + 1 + i
            client.emit("gpu", gpu_event(i + 1, t, 0.62 if serving else 0.0, 71_300.0 if serving else 0.0,
                                         4000 if serving else None), t)
            if serving is not None:
                accept = round(2.05 + 0.35 * math.sin(i / 6.0) + 0.1 * math.sin(i / 1.7), 2) if spec else None
                tok_s = round(31.0 * (accept or 2.6) + 2.0 * math.sin(i / 3.0), 2)
                client.emit("server_frame", server_frame(serving.name, i + 1, t, speculative=spec, accept=accept,
                                                         tok_s=tok_s), t)
        return {"interval_s": params.get("interval_s", 1.0)}

    async def _switch(self, client: FixedClient, params: dict):
        """A switch that stays where :attr:`switching` leaves it (the stages are what is drawn)."""
        for ev in self.switching:
            client.emit(ev["event"], ev["data"], NOW)
        await asyncio.Event().wait()
