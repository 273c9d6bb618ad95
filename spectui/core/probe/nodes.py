"""The probe across nodes on real hosts: every node's agent starts its ranks together, and they meet.

A multi-node profile's all-reduce spans ``--tp-size`` ranks over its ``nodes``. Each node's agent gets
the same ``probe.run`` request plus ``nnodes``, its ``node_rank`` and ``dist_init_addr``: node 0's
dist address (the profile's ``address``, else its SSH host) and a port free on node 0 now
(``probe.port``), where node 0's first rank serves torch.distributed's TCP store and the other nodes'
ranks connect. Every rank ends up with the slowest rank of all nodes per iteration, so node 0's result
is the probe's (``provenance.hosts`` names the nodes).

When one node fails, the others are cancelled (``probe.cancel``) instead of waiting out their
rendezvous, and the failure is reported by its root cause: the node that failed first on its own;
a node whose ranks only lost their peers, or was cancelled, is named after it. A node that only lost
its peers does not cancel the others at once: they get ``CAUSE_GRACE_S`` to fail with their own cause.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from spectui.agent.protocol import Method
from spectui.core.errors import SpectuiError
from spectui.core.probe.run import run_probe
from spectui.core.profiles.multinode import host_port, lost_peers
from spectui.core.session import Session



# After a node failed only because it lost its peers, how long the others have to fail with their own cause
# before they are cancelled.
CAUSE_GRACE_S = 10.0


@dataclass(frozen=True)
class ProbeNode:
    """One node of a probe across nodes: how to reach its agent and what it runs."""

    label: str              # the node's host, as the console and history name it
    session: Session
    params: dict            # its ``probe.run`` request, without the node fields


class NodesProbeError(SpectuiError):
    """A probe across nodes failed; ``failures`` is ``[(label, sentence)]``, the root cause first."""

    def __init__(self, message: str, failures: list[tuple[str, str]]):
        super().__init__(message)
        self.failures = failures


def _is_symptom(exc: BaseException) -> bool:
    """A node that was cancelled (``probe.cancel``), or whose ranks lost their peers, failed because another
    went first."""
    return getattr(exc, "code", None) == "cancelled" or lost_peers(str(exc))


def node_requests(nodes: Sequence[ProbeNode], dist_init_addr: str) -> list[dict]:
    """Each node's ``probe.run`` request: its own, plus where it stands among the nodes."""
    n = len(nodes)
    return [dict(node.params, nnodes=n, node_rank=rank, dist_init_addr=dist_init_addr)
            for rank, node in enumerate(nodes)]


async def _cancel_until_done(node: ProbeNode, task: asyncio.Task) -> None:
    """Cancel a node's probe until its ``probe.run`` has answered (a worker not started yet when the first
    cancel arrives is ended when it starts); never raises."""
    while not task.done():
        try:
            await node.session.client.call(Method.PROBE_CANCEL, {}, timeout=10)
        except (SpectuiError, OSError, asyncio.TimeoutError):
            return
        await asyncio.wait([task], timeout=1.0)


async def run_probe_nodes(nodes: Sequence[ProbeNode], dist_address: str, *,
                          on_progress: Callable[[dict], None] | None = None) -> dict:
    """Probe across ``nodes`` (rank 0 first), meeting at ``dist_address`` on node 0; node 0's result,
    with ``provenance.hosts``. Raises NodesProbeError naming the node that failed first by cause."""
    if len(nodes) < 2:
        raise ValueError("a probe across nodes needs two nodes or more")
    answer = await nodes[0].session.client.call(Method.PROBE_PORT, {}, timeout=30)
    addr = host_port(dist_address, int(answer["port"]))
    requests = node_requests(nodes, addr)
    loop = asyncio.get_running_loop()
    tasks = [asyncio.ensure_future(run_probe(node.session, req, on_progress=on_progress if rank == 0 else None))
             for rank, (node, req) in enumerate(zip(nodes, requests))]
    failed_at: dict[int, int] = {}   # node -> order in which its failure was seen

    def note(finished) -> None:
        for t in finished:
            if t.exception() is not None and tasks.index(t) not in failed_at:
                failed_at[tasks.index(t)] = len(failed_at)

    pending = set(tasks)
    grace_until = None               # after a node lost its peers: how long the others may fail by themselves
    try:
        while pending:
            timeout = None if grace_until is None else max(0.0, grace_until - loop.time())
            done, pending = await asyncio.wait(pending, timeout=timeout, return_when=asyncio.FIRST_EXCEPTION)
            note(done)
            if not failed_at or not pending:
                continue
            causes = [i for i in failed_at if not _is_symptom(tasks[i].exception())]
            if not causes and grace_until is None:
                # a node whose ranks lost their peers: the node that went first says why within moments
                grace_until = loop.time() + CAUSE_GRACE_S
                continue
            if causes or loop.time() >= grace_until:
                await asyncio.gather(*(_cancel_until_done(nodes[tasks.index(t)], t) for t in pending))
                await asyncio.wait(pending)
                note(pending)
                pending = set()
    finally:
        for t in tasks:
            if not t.done():
                t.cancel()
    if failed_at:
        ordered = sorted(failed_at, key=lambda i: (_is_symptom(tasks[i].exception()), failed_at[i]))
        failures = [(nodes[i].label, str(tasks[i].exception())) for i in ordered]
        first_label, first_text = failures[0]
        rank = ordered[0]
        more = ""
        if len(failures) > 1:
            more = "".join(f"; then node {ordered[k]} ({label}): {text}"
                           for k, (label, text) in enumerate(failures[1:], start=1))
        raise NodesProbeError(f"node {rank} ({first_label}) failed: {first_text}{more}", failures)
    result = tasks[0].result()
    result.setdefault("provenance", {})["hosts"] = [node.label for node in nodes]
    return result
