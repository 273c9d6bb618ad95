"""Multi-node profiles: one SGLang server spread over several hosts, and each node's command line.

A profile that names ``nodes`` runs one ``sglang.launch_server`` per node, all with the same
arguments plus three that say where the node stands: ``--nnodes N``, ``--node-rank I`` and
``--dist-init-addr HOST0:PORT`` (rank 0's address, where the nodes meet). These are SGLang's own
flags (sglang 0.5.23 wheel, sglang/srt/arg_groups/fields/parallel.py:32-44; ``--nccl-init-addr`` is
an alias of ``--dist-init-addr``), read by ``ServerArgs.add_cli_args`` (sglang/srt/server_args.py:351).

``--tp-size`` is the total across the nodes, not per node: each node runs ``tp-size x pp-size /
nnodes`` ranks (sglang/srt/entrypoints/engine.py:757 and
sglang/srt/managers/data_parallel_controller.py:695-711 split it so), and SGLang refuses a
``tp-size x pp-size`` that the node count does not divide (sglang/srt/arg_groups/validation_hook.py:179)
and data-parallel replicas across nodes (validation_hook.py:199). ``check_multinode`` says so
before a server is started. An IPv6 meeting address is bracketed, ``[fd00::1]:20000``, as SGLang's
``NetworkAddress.parse`` requires (sglang/srt/utils/network.py:600).
"""

from __future__ import annotations

import dataclasses

import ipaddress
from typing import Any

from spectui.agent.protocol import ServerState
from spectui.core.errors import ConnectError
from spectui.core.profiles.argv import build_argv
from spectui.core.profiles.errors import ProfileError
from spectui.core.profiles.model import Node, Profile
from spectui.core.transport.ssh import parse_destination

#: Where the nodes meet when the profile does not say (the port SGLang's own multi-node examples use).
DEFAULT_DIST_INIT_PORT = 20000
#: The flags spectui writes for each node, as SGLang spells them.
NODE_FLAGS = ("nnodes", "node-rank", "dist-init-addr")
#: Every option string that sets one of them (``nccl-init-addr`` is an alias of ``dist-init-addr``),
#: with the shortest prefix argparse reads as that option alone in sglang 0.5.23 (``--dist`` could
#: also be ``--dist-timeout``, ``--nccl`` also ``--nccl-port``).
NODE_FLAG_OPTIONS = {"nnodes": "nn", "node-rank": "node", "dist-init-addr": "dist-i", "nccl-init-addr": "nccl-i"}
TP_KEYS = ("tp-size", "tensor-parallel-size", "tp")
PP_KEYS = ("pp-size", "pipeline-parallel-size")
DP_KEYS = ("dp-size", "data-parallel-size", "dp")


def node_count(profile: Profile) -> int:
    """How many nodes the server spans (1 for a single-host profile)."""
    return max(1, len(profile.nodes))


def dist_init_port(profile: Profile) -> int:
    return profile.dist_init_port if profile.dist_init_port is not None else DEFAULT_DIST_INIT_PORT


def host_port(host: str, port: int | str) -> str:
    """``host:port``, with an IPv6 host bracketed."""
    try:
        bracket = isinstance(ipaddress.ip_address(host), ipaddress.IPv6Address)
    except ValueError:
        bracket = False
    return f"[{host}]:{port}" if bracket else f"{host}:{port}"


def dist_init_addr(profile: Profile) -> str:
    """Rank 0's meeting address, ``HOST0:PORT``."""
    if not profile.nodes:
        raise ValueError(f"profile '{profile.name}' names no nodes")
    return host_port(profile.nodes[0].dist_address, dist_init_port(profile))


def node_flag_words(nnodes: Any, rank: Any, addr: str) -> list[str]:
    """The three per-node flags as argv words (values may be placeholders a scheduler fills in)."""
    return ["--nnodes", str(nnodes), "--node-rank", str(rank), "--dist-init-addr", addr]


def node_argv(profile: Profile, rank: int, *, simulated: bool = False, python: str | None = None) -> list[str]:
    """Node ``rank``'s command line: the profile's, plus where this node stands among the others."""
    if not 0 <= rank < len(profile.nodes):
        raise ValueError(f"profile '{profile.name}' has {len(profile.nodes)} nodes, not a rank {rank}")
    argv = build_argv(profile, simulated=simulated, python=python)
    return argv + node_flag_words(len(profile.nodes), rank, dist_init_addr(profile))


def node_profile(profile: Profile, rank: int, *, rank0_address: str | None = None) -> Profile:
    """Node ``rank``'s server as the single-host profile its host starts: the profile with the three per-node
    flags set (``rank0_address``: where the others reach rank 0, when not the first node's own address, e.g.
    the demo's hosts, which are all this machine)."""
    if not 0 <= rank < len(profile.nodes):
        raise ValueError(f"profile '{profile.name}' has {len(profile.nodes)} nodes, not a rank {rank}")
    addr = host_port(rank0_address, dist_init_port(profile)) if rank0_address else dist_init_addr(profile)
    args = dict(profile.args)
    args.update({"nnodes": len(profile.nodes), "node-rank": rank, "dist-init-addr": addr})
    return dataclasses.replace(profile, nodes=(), dist_init_port=None, args=args)


def int_arg(profile: Profile, keys: tuple[str, ...], default: int = 1) -> int | None:
    """The integer value of the first of ``keys`` the profile sets; ``default`` when none is set,
    None when the value is not a whole number (the host's parser says why)."""
    for key in keys:
        if key in profile.args:
            value = profile.args[key]
            if isinstance(value, bool):
                return None
            try:
                return int(str(value))
            except ValueError:
                return None
    return default


def first_key(profile: Profile, keys: tuple[str, ...]) -> str | None:
    return next((key for key in keys if key in profile.args), None)


def ranks_per_node(profile: Profile) -> int | None:
    """GPUs (tensor x pipeline ranks) each node runs; None when the sizes are not whole numbers."""
    tp, pp = int_arg(profile, TP_KEYS), int_arg(profile, PP_KEYS)
    if tp is None or pp is None:
        return None
    return max(1, tp * pp // node_count(profile))


def _node_flag(key: str) -> str | None:
    """The node flag ``key`` sets (itself, its alias or an abbreviation of it), if any."""
    for option, shortest in NODE_FLAG_OPTIONS.items():
        if option.startswith(key) and key.startswith(shortest):
            return option
    return None


def _error(profile: Profile, fields: tuple[str, ...], message: str, *, at_key: bool = False) -> ProfileError:
    """An error at the first of ``fields`` written in the profile's own file (else the first)."""
    own = [f for f in fields if (loc := profile.location_of(f)) is not None and loc.path == profile.source]
    from spectui.core.profiles.flags import located_error  # the flag parser loads when a profile is refused

    return located_error(profile, (own or list(fields))[0], message, at_key=at_key)


def check_multinode(profile: Profile) -> list[ProfileError]:
    """What SGLang would refuse, or spectui could not fill in, in a profile's multi-node settings."""
    errors: list[ProfileError] = []
    if not profile.nodes:
        if profile.dist_init_port is not None:
            errors.append(_error(profile, ("dist-init-port",), "field 'dist-init-port' is where the nodes of a "
                                 "multi-node profile meet, and this profile names no 'nodes'; add them or remove it"))
        return errors
    n = len(profile.nodes)
    for key in profile.args:
        option = _node_flag(key)
        if option is not None:
            origin = profile.location_of(f"args.{key}")
            inherited = f", in {origin.path}" if origin and origin.path != profile.source else ""
            errors.append(_error(profile, (f"args.{key}", "nodes"), f"profile '{profile.name}' names its nodes, so spectui "
                                 f"writes --nnodes, --node-rank and --dist-init-addr for each node; remove "
                                 f"'args.{key}' (it sets --{option}{inherited})", at_key=True))
    tp, pp = int_arg(profile, TP_KEYS), int_arg(profile, PP_KEYS)
    tp_key = first_key(profile, TP_KEYS)
    if tp is not None and pp is not None and (tp * pp) % n:
        where = (f"args.{tp_key}", "nodes") if tp_key else ("nodes",)
        size = f"tp-size {tp}" + (f" x pp-size {pp}" if pp != 1 else "")
        hint = "" if tp_key else " (unset, so 1)"
        errors.append(_error(profile, where, f"{size}{hint} is the total across the {n} nodes and SGLang splits it "
                             f"evenly, so it must be a multiple of {n}; set args.tp-size to the GPUs of all nodes "
                             f"together (e.g. {8 * n} for {n} nodes of 8)"))
    dp = int_arg(profile, DP_KEYS)
    dp_key = first_key(profile, DP_KEYS)
    if dp_key and dp is not None and dp > 1:
        errors.append(_error(profile, (f"args.{dp_key}",), f"SGLang runs no data-parallel replicas across nodes "
                             f"(dp-size {dp} with {n} nodes); remove args.{dp_key} or use attention DP "
                             "(args.attn-dp-size)"))
    per_node = ranks_per_node(profile)
    if profile.gpus is not None and per_node is not None and not errors and len(profile.gpus) < per_node:
        errors.append(_error(profile, ("gpus",), f"field 'gpus' lists {len(profile.gpus)} GPUs, but each of the "
                             f"{n} nodes runs {per_node} ranks (tp-size {tp} x pp-size {pp} / {n} nodes); "
                             f"list {per_node} GPUs or remove 'gpus'"))
    if dist_init_port(profile) == profile.port:
        errors.append(_error(profile, ("dist-init-port", "port"), f"the nodes meet on port {profile.port}, which "
                             "is also the server's HTTP port on rank 0; set 'dist-init-port' to another port"))
    return errors


def is_node_host(node: Node, target) -> bool:
    """Whether ``target`` is how the console reaches ``node``: its name or destination as the profile writes the
    node's host, or the same [user@]host with the node's ``ssh-port`` (``user@10.0.0.2:2222``)."""
    if node.host in (target.destination, target.name):
        return True
    if target.kind != "ssh" or not target.destination:
        return False
    try:
        user, host, port = parse_destination(target.destination)
    except ConnectError:
        return False
    return node.host == (f"{user}@{host}" if user else host) and node.ssh_port is not None and \
        (port or target.ssh.port) == node.ssh_port


# How torch says a rank lost another (gloo's pair.cc, NCCL's remote error, the store's client socket): a node
# failing with these failed because another node went first.
PEER_LOST = ("Connection closed by peer", "remote worker", "Connection reset by peer", "remote process exited",
             "DistNetworkError", "Broken pipe")


def lost_peers(reason: str) -> bool:
    """Whether a node's failure only says that another node went first (a symptom, not the cause)."""
    text = reason.lower()
    return any(words.lower() in text for words in PEER_LOST)


def node_failure(results: list, ok=lambda server: server.get("state") == ServerState.READY) -> tuple[int, str] | None:
    """Of each node's answer to its start, rank 0 first (``{"server": {...}}``, or the exception it raised), the
    node that failed by its own cause and why; None when every node is ``ok``. A node that lost its peers failed
    because another went: torch's words for that come last, then the node that ended first (each host's agent
    notices on its own clock, so time alone cannot say)."""
    def reason_of(r) -> str:
        return str(r) if isinstance(r, BaseException) else \
            (r["server"].get("reason") or r["server"].get("state") or "it did not start")

    failed = [(rank, r) for rank, r in enumerate(results)
              if isinstance(r, BaseException) or not ok((r or {}).get("server") or {})]
    if not failed:
        return None

    def cause_first(f) -> tuple:
        r = f[1]
        ended = (r["server"].get("ended_at") or float("inf")) if isinstance(r, dict) and r.get("server") \
            else float("inf")
        return lost_peers(reason_of(r)), ended

    rank, r = min(failed, key=cause_first)
    return rank, reason_of(r)
