"""``spectui servers start|stop P`` for a multi-node profile: every node's host at once.

``--host`` names any one of the profile's nodes; the others are reached with the same host and SSH options
(``hostopts.node_targets``). A start checks each node's flags against its host's SGLang, starts every node's
server together (each node's own profile: ``--nnodes``, ``--node-rank``, ``--dist-init-addr``) and waits for
all of them; when one fails, every node is stopped (one server: all of it, or none) and the node that failed by
its own cause is named with the last lines of its own log. A stop stops every node at once, as the nodes end
together.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from spectui.agent.protocol import DOWN_STATES, STOP_GRACE_S, ServerState
from spectui.cli.hostopts import open_sessions, refuse_on_problems
from spectui.core.flagcheck import check_on_host
from spectui.core.profiles import Profile
from spectui.core.console import nodes as cluster
from spectui.core.console.nodes import NodeHost
from spectui.core.profiles.multinode import node_profile
from spectui.core.profiles.secret_flags import redact_server_records
from spectui.core.servers import ServerControl
from spectui.core.session import HostTarget
from spectui.core.textsafe import for_stream

SCHEMA = "spectui.servers.nodes/1"


def _node_hosts(sessions, labels: list[str], start=None) -> list[NodeHost]:
    """Each node's session as a node host; ``start(control, node_profile)`` starts a node there."""
    def host(ctl: ServerControl, label: str) -> NodeHost:
        return NodeHost(label, lambda: ctl, lambda p: start(ctl, p))
    return [host(ServerControl(s), label) for s, label in zip(sessions, labels)]


async def start_nodes(args: argparse.Namespace, profile: Profile, targets: list[HostTarget]) -> int:
    sessions = await open_sessions(targets)
    labels = [t.destination or t.label for t in targets]
    try:
        nodes = [node_profile(profile, rank) for rank in range(len(targets))]
        for rank, (session, node) in enumerate(zip(sessions, nodes)):
            if refuse_on_problems(await check_on_host(session, node), f"{profile.name} was not launched on any "
                                  f"node: fix the profile for node {rank} on {labels[rank]} first."):
                return 1

        async def one(ctl: ServerControl, node: Profile) -> dict:
            server = await ctl.start(node, force=args.force)
            if not args.no_wait and not server.get("already_running"):
                server = await ctl.wait(node.name, timeout_s=args.timeout)
            return {"server": server}

        ok = (lambda s: s.get("state") not in DOWN_STATES + (ServerState.STOPPED,)) if args.no_wait else \
            (lambda s: s.get("state") == ServerState.READY)
        hosts = _node_hosts(sessions, labels, one)
        answer = await cluster.start_nodes(profile.name, list(zip(hosts, nodes)), ok=ok,
                                           grace_s=getattr(args, "grace", STOP_GRACE_S))
        if "failed_node" in answer:
            (rank, _), reason, tail = answer["failed_node"], answer["failed_reason"], answer["failed_log"]
            said = [f"spectui: {profile.name}: node {rank} on {labels[rank]}: {reason}; every node was stopped"]
            if tail:
                said.append(f"The last lines of node {rank}'s log on {labels[rank]}:")
                said += [f"  {line}" for line in tail]
            if args.json:
                print(json.dumps({"schema": SCHEMA, "profile": profile.name, "failed_node": rank,
                                  "host": labels[rank], "reason": reason, "log": tail}, indent=2))
            print(for_stream("\n".join(said), sys.stderr), file=sys.stderr)
            return 1
        results = answer["nodes"]
        servers = [r["server"] for r in results]
        if args.json:
            print(json.dumps({"schema": SCHEMA, "profile": profile.name,
                              "nodes": [{"rank": rank, "host": labels[rank], "server": redact_server_records(s)}
                                        for rank, s in enumerate(servers)]}, indent=2))
            return 0
        print(f"{profile.name}: {servers[0]['state']} on {len(servers)} nodes")
        for rank, s in enumerate(servers):
            print(f"  node {rank} on {labels[rank]}: {s['state']} (pid {s.get('pid')}"
                  + (f", port {s.get('port')})" if rank == 0 else ")"))
        return 0
    finally:
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)


async def stop_nodes(args: argparse.Namespace, profile: Profile, targets: list[HostTarget]) -> int:
    sessions = await open_sessions(targets)
    labels = [t.destination or t.label for t in targets]
    try:
        done = await cluster.stop_nodes(profile.name, _node_hosts(sessions, labels), grace_s=args.grace)
        code = 0
        for rank, r in enumerate(done):
            if isinstance(r, BaseException):
                print(f"spectui: stopping {profile.name} on node {rank} ({labels[rank]}): {r}", file=sys.stderr)
                code = 1
            else:
                print(f"node {rank} on {labels[rank]}: " + (f"{r['state']}" if r else "not running"))
        return code
    finally:
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)
