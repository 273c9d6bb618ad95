"""Server lifecycle from the console's side: a profile becomes a start request to the agent."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from spectui.agent.protocol import FINAL_STATES, ORIGINS, SERVER_STATES, STOP_GRACE_S, Event as WireEvent, Method
from spectui.core.profiles import Profile, ProfileError, build_argv, build_env, format_command
from spectui.core.errors import SpectuiError
from spectui.core.rpc import Event
from spectui.core.session import Session
from spectui.core.textsafe import one_line

log = logging.getLogger(__name__)

__all__ = ["FINAL_STATES", "ORIGINS", "RecordError", "ServerControl", "ServerRecord"]
# the agent's error codes for servers spectui did not start: no confirmation given, or the processes
# changed since the plan the operator confirmed
CONFIRM_NEEDED = "confirm_needed"
PLAN_CHANGED = "plan_changed"
# the agent's error code: a stop or switch would stop a server that a live benchmark run measures
SERVER_BENCHMARKED = "server_benchmarked"


class RecordError(ValueError):
    """A server record from the agent that is not one: the sentence says which field and why."""


def _optional_int(d: Mapping, key: str, name: str) -> int | None:
    value = d.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(f"The agent's record of server {name!r} has {key} {value!r}, not a whole number.")
    return value


@dataclass(frozen=True, eq=False)
class ServerRecord(Mapping[str, Any]):
    """A server's record as the agent sends it (``server`` events, ``servers.list``), checked once where
    it enters the console; ``wire`` is the whole record, read-only. The record is also that read-only
    mapping (``rec["state"]``, ``rec.get("reason")``, ``dict(rec)``, equality with the wire dict), so a
    reader of the wire record reads a checked one unchanged; the typed fields are the checked values
    (``origin`` defaulted for an older agent's record)."""

    name: str
    state: str
    origin: str
    pid: int | None
    port: int | None
    reason: str | None
    wire: Mapping[str, Any]

    @property
    def ended(self) -> bool:
        return self.state in FINAL_STATES

    def __getitem__(self, key: str) -> Any:
        return self.wire[key]

    def __iter__(self):
        return iter(self.wire)

    def __len__(self) -> int:
        return len(self.wire)

    @classmethod
    def from_wire(cls, d: Any) -> "ServerRecord":
        """The record ``d``, or :class:`RecordError` naming what is wrong with it."""
        if not isinstance(d, Mapping):
            raise RecordError(f"The agent sent a server record that is not an object: {d!r:.80}.")
        name = d.get("name")
        if not isinstance(name, str) or not name:
            raise RecordError(f"The agent sent a server record without a name: {dict(d)!r:.120}.")
        state = d.get("state")
        if state not in SERVER_STATES:
            raise RecordError(f"The agent's record of server {name!r} has state {state!r}, "
                              f"not one of {', '.join(SERVER_STATES)}.")
        origin = d.get("origin") or ORIGINS[0]  # a record without one (an older agent) is spectui's own
        if origin not in ORIGINS:
            raise RecordError(f"The agent's record of server {name!r} has origin {origin!r}, "
                              f"not one of {', '.join(ORIGINS)}.")
        reason = d.get("reason")
        return cls(name=name, state=state, origin=origin, pid=_optional_int(d, "pid", name),
                   port=_optional_int(d, "port", name), reason=None if reason is None else str(reason),
                   wire=MappingProxyType(dict(d)))


def profile_gpus(profile: Profile) -> list[int]:
    """GPU indices the server will use: the profile's ``gpus``, else none for a server on the CPU (``device: cpu``),
    else the first tp-size GPUs."""
    if profile.gpus is not None:
        return [int(g) for g in profile.gpus if str(g).isdigit()]
    if str(profile.args.get("device", "")).lower() == "cpu":
        return []
    tp = profile.args.get("tp-size", profile.args.get("tp", 1))
    try:
        return list(range(int(tp)))
    except (TypeError, ValueError):
        return [0]


def start_params(profile: Profile, session: Session, *, force: bool = False) -> dict:
    """What the agent needs to launch ``profile`` on this session's host."""
    if profile.nodes:
        hosts = " ".join(n.host for n in profile.nodes)
        raise ProfileError(f"{profile.name} runs on {len(profile.nodes)} nodes ({', '.join(n.host for n in profile.nodes)}); "
                           f"this starts single-host servers only: `spectui servers start {profile.name} --host "
                           f"{profile.nodes[0].host}` starts every node at once, a console on its nodes (`spectui "
                           f"connect {hosts}`) switches to it, or launch it with `spectui profiles render "
                           f"{profile.name} --for slurm|lws|shell`", profile=profile.name)
    simulated = session.target.simulated
    python = session.hello.get("python") if simulated else session.target.server_python(profile.python)
    argv = build_argv(profile, simulated=simulated, python=python)
    return {
        "name": profile.name,
        "argv": argv,
        "env": build_env(profile),
        "host": profile.host,
        "port": profile.port,
        "gpus": profile_gpus(profile),
        "profile_hash": profile.content_hash,
        "profile": profile.redacted(),
        "force": force,
    }


def origin(view: dict) -> str:
    """A server view's origin; a view without one (an older agent) is spectui's own."""
    return view.get("origin") or "spectui"


def is_external(view: dict) -> bool:
    return origin(view) == "external"


def confirmed_processes(plan: dict) -> list[list[int]]:
    """``[[pid, start_ticks], ...]`` of the processes a stop plan (``server.plan_stop``) or a switch
    holder (``server.plan_switch`` ``stops[]``) names: what the operator confirms by seeing it."""
    procs = plan.get("processes") or []
    return [[int(p["pid"]), int(p["start_ticks"])] if isinstance(p, dict) else [int(p[0]), int(p[1])]
            for p in procs]


def launch_command(profile: Profile, session: Session) -> str:
    """The exact command a start runs, shell-quoted for display (env values never shown)."""
    return format_command(start_params(profile, session)["argv"])


@dataclass
class ServerControl:
    session: Session

    async def list(self) -> list[dict]:
        return (await self.session.client.call(Method.SERVERS_LIST, timeout=30))["servers"]

    async def start(self, profile: Profile, *, force: bool = False) -> dict:
        log.info("starting server %s", profile.name)
        return await self.session.client.call(Method.SERVER_START, start_params(profile, self.session, force=force),
                                              timeout=60)

    async def wait(self, name: str, *, states: list[str] | None = None, timeout_s: float = 1800) -> dict:
        return await self.session.client.call(Method.SERVER_WAIT, {"name": name, "states": states,
                                                              "timeout_s": timeout_s}, timeout=timeout_s + 30)

    async def plan_stop(self, name: str) -> dict:
        """What stopping ``name`` would signal: every process (pid, start time, user, command), whether
        spectui may signal them (``allowed``, ``why_not``) and a note such as a systemd unit. Signals nothing."""
        return await self.session.client.call(Method.SERVER_PLAN_STOP, {"name": name}, timeout=30)

    async def stop(self, name: str, *, grace_s: float = STOP_GRACE_S, stop_benchmark: bool = False,
                   confirmed: list[list[int]] | None = None) -> dict:
        """Stop server ``name``. One that a live benchmark run measures is refused (:data:`SERVER_BENCHMARKED`,
        a sentence naming the run) unless ``stop_benchmark``: the run is then cancelled and ends interrupted.

        A server spectui did not start needs ``confirmed``: the ``[[pid, start_ticks], ...]`` of the plan
        the operator saw (:func:`confirmed_processes`); without it the agent answers :data:`CONFIRM_NEEDED`,
        and when the processes changed since, :data:`PLAN_CHANGED` (nothing is signalled either way)."""
        params = {"name": name, "grace_s": grace_s, "stop_benchmark": stop_benchmark}
        if confirmed is not None:
            params["confirmed"] = confirmed
        log.info("stopping server %s", name)
        return await self.session.client.call(Method.SERVER_STOP, params, timeout=grace_s + 150)

    async def adopt(self, name: str, *, confirmed: list[list[int]], as_name: str | None = None) -> dict:
        """Record the external server ``name`` as spectui's own (origin ``adopted``, named ``as_name`` or
        its ext name), confirmed like :meth:`stop`; from then on it is stopped and switched like one spectui
        started."""
        params = {"name": name, "confirmed": confirmed}
        if as_name:
            params["as"] = as_name
        return await self.session.client.call(Method.SERVER_ADOPT, params, timeout=60)

    def _switch_params(self, profile: Profile, *, force: bool, grace_s: float, timeout_s: float,
                       stop_benchmark: bool) -> dict:
        return dict(start_params(profile, self.session, force=force), grace_s=grace_s, timeout_s=timeout_s,
                    stop_benchmark=stop_benchmark)

    async def plan_switch(self, profile: Profile, *, force: bool = False, grace_s: float = STOP_GRACE_S,
                          timeout_s: float = 1800, stop_benchmark: bool = False) -> dict:
        """A dry run of :meth:`switch`: the servers it would stop (``stops``, external ones with their
        processes, user and argv) and the sentences it would refuse with. Stops and starts nothing."""
        params = self._switch_params(profile, force=force, grace_s=grace_s, timeout_s=timeout_s,
                                     stop_benchmark=stop_benchmark)
        return await self.session.client.call(Method.SERVER_PLAN_SWITCH, params, timeout=60)

    async def switch(self, profile: Profile, *, force: bool = False, grace_s: float = STOP_GRACE_S,
                     timeout_s: float = 1800, stop_benchmark: bool = False,
                     stop_external: list[list[int]] | None = None) -> dict:
        """Stop what holds the profile's GPUs or port, then start it; refused like :meth:`stop` when a live
        benchmark run measures a server it would stop. A server spectui did not start is stopped only when
        all its processes are in ``stop_external`` (``[[pid, start_ticks], ...]`` from :meth:`plan_switch`);
        otherwise the switch is refused with a sentence naming it."""
        params = self._switch_params(profile, force=force, grace_s=grace_s, timeout_s=timeout_s,
                                     stop_benchmark=stop_benchmark)
        if stop_external:
            params["stop_external"] = stop_external
        log.info("switching to %s", profile.name)
        return await self.session.client.call(Method.SERVER_SWITCH, params, timeout=None)

    async def logs(self, name: str, *, lines: int = 40, offset: int | None = None) -> dict:
        return await self.session.client.call(Method.SERVER_LOGS, {"name": name, "lines": lines, "offset": offset})

    def on_events(self, fn: Callable[[Event], None]) -> Callable[[], None]:
        """Listen to ``server`` (state changes) and ``switch`` (stages) events."""
        return self.session.client.add_listener(lambda ev: fn(ev) if ev.name in (WireEvent.SERVER, WireEvent.SWITCH) else None)


FAILED_LOG_LINES = 6    # a failed node's last log lines, in what says it failed
FAILED_LOG_CHARS = 160


async def failed_log_tail(ctl: ServerControl, name: str) -> list[str]:
    """The last non-blank lines of ``name``'s log on ``ctl``'s host (a failed node's own words), each made one
    visible line and cut to fit; none when the host cannot give them."""
    try:
        answer = await ctl.logs(name, lines=FAILED_LOG_LINES * 4)  # blank ones are left out
    except (SpectuiError, OSError, asyncio.TimeoutError):
        return []
    lines = [one_line(line) for line in answer.get("lines") or [] if line.strip()][-FAILED_LOG_LINES:]
    return [line if len(line) <= FAILED_LOG_CHARS else line[:FAILED_LOG_CHARS - 1] + "…" for line in lines]
