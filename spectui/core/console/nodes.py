"""A multi-node server on every node's host at once: the one way the console and ``spectui servers start|stop``
start and stop it.

Every node starts together (each its own profile: ``--nnodes``, ``--node-rank``, ``--dist-init-addr``); when a
node fails, every node is stopped (one server: all of it, or none), and the answer names the node that failed by
its own cause (:func:`~spectui.core.profiles.multinode.node_failure`) with the last lines of its own log. A stop
stops every node at once: a node of rank 1 and up leaves when rank 0 goes (SGLang 0.5.23's only log a SIGTERM of
their own and wait for rank 0), so each is already being stopped when it does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from spectui.agent.protocol import LIVE_STATES, STOP_GRACE_S, ServerState
from spectui.core.profiles import Profile
from spectui.core.profiles.multinode import node_failure
from spectui.core.servers import ServerControl, failed_log_tail


@dataclass(frozen=True)
class NodeHost:
    """One node's host: its label, its control (a link's refuses while it is disconnected), how a node's server is
    started there (an answer ``{"server": record, ...}``), and whether a server runs there."""

    label: str
    control: Callable[[], ServerControl]
    start: Callable[[Profile], Awaitable[dict]]
    running: Callable[[str], Awaitable[bool]] | None = None  # default: the host's list says so

    async def runs(self, name: str) -> bool:
        if self.running is not None:
            return await self.running(name)
        return any(s["name"] == name and s["state"] in LIVE_STATES for s in await self.control().list())


def _ready(server: dict) -> bool:
    return server.get("state") == ServerState.READY


async def start_nodes(name: str, nodes: list[tuple[NodeHost, Profile]], *, ok: Callable[[dict], bool] = _ready,
                      grace_s: float = STOP_GRACE_S) -> dict:
    """Start ``name`` on every node at once; rank 0's answer (``{"server": ...}``) with ``nodes``, every node's
    answer. When a node is not ``ok``, every node is stopped and the answer's server is ``failed``, its reason
    naming the node that ended first (the others fail because it went), with ``failed_node`` (its rank and host),
    ``failed_reason`` and ``failed_log`` (the last lines of its log)."""
    results = await asyncio.gather(*(h.start(p) for h, p in nodes), return_exceptions=True)
    failure = node_failure(results, ok)
    if failure is None:
        return {**results[0], "nodes": results}
    await stop_nodes(name, [h for h, _ in nodes], grace_s=grace_s)  # one server: all of it, or none
    rank, reason = failure
    host = nodes[rank][0]
    try:
        tail = await failed_log_tail(host.control(), name)
    except Exception:  # a host that cannot give its log (disconnected): the answer goes without it
        tail = []
    first = results[0] if isinstance(results[0], dict) else {}
    return {**first, "server": {**(first.get("server") or {}), "name": name, "state": ServerState.FAILED,
                                "reason": f"node {rank} on {host.label}: {reason}"},
            "failed_node": (rank, host.label), "failed_reason": reason, "failed_log": tail, "nodes": results}


async def stop_nodes(name: str, hosts: list[NodeHost], *, grace_s: float = STOP_GRACE_S
                     ) -> list[dict | None | BaseException]:
    """Stop ``name`` on every host where it runs, all at once: per host, its answer, None where it was not
    running, or the error that stopped it."""
    async def one(host: NodeHost) -> dict | None:
        if not await host.runs(name):
            return None
        return await host.control().stop(name, grace_s=grace_s)
    return await asyncio.gather(*(one(h) for h in hosts), return_exceptions=True)
