"""Multi-node profiles: the ``nodes`` and ``dist-init-port`` fields, their checks, each node's argv."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from spectui.core.profiles import ProfileLayer, build_argv, load_profile, load_profiles
from spectui.core.profiles.model import Node
from spectui.core.profiles.multinode import (
    DEFAULT_DIST_INIT_PORT,
    dist_init_addr,
    node_argv,
    node_profile,
    ranks_per_node,
)

ROOT = Path(__file__).resolve().parents[2]


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def load(tmp_path: Path, text: str, name: str = "p.yaml"):
    """The library of one profile file (no shipped or user profiles)."""
    return load_profiles([write(tmp_path, name, text)], layers=[])


def only_error(tmp_path: Path, text: str):
    library = load(tmp_path, text)
    assert len(library.errors) == 1, [str(e) for e in library.errors]
    assert library.profiles == {}
    return library.errors[0]


TWO_NODES = """\
    name: p
    model: org/m
    nodes:
      - root@gpu-a
      - {host: gpu-b, address: 10.0.0.2, ssh-port: 2222}
    args:
      tp-size: 16
      trust-remote-code: true
    """


def test_nodes_as_names_or_maps(tmp_path):
    library = load(tmp_path, TWO_NODES)
    assert library.errors == []
    p = library.get("p")
    assert p.nodes == (Node("root@gpu-a"), Node("gpu-b", "10.0.0.2", 2222))
    assert [n.dist_address for n in p.nodes] == ["gpu-a", "10.0.0.2"]
    assert p.dist_init_port is None and dist_init_addr(p) == f"gpu-a:{DEFAULT_DIST_INIT_PORT}"
    assert ranks_per_node(p) == 8


def test_each_node_runs_the_profile_argv_plus_its_place(tmp_path):
    p = load(tmp_path, TWO_NODES.replace("args:", "dist-init-port: 25000\n    args:")).get("p")
    base = build_argv(p, simulated=False)
    for rank in range(len(p.nodes)):
        # what a node's host starts: the single-host profile node_profile makes for its rank
        started = build_argv(node_profile(p, rank), simulated=False)
        assert started == base + ["--nnodes", "2", "--node-rank", str(rank), "--dist-init-addr", "gpu-a:25000"]
        assert started == node_argv(p, rank)
    with pytest.raises(ValueError, match="not a rank 2"):
        node_argv(p, 2)


def test_ipv6_meeting_address_is_bracketed(tmp_path):
    p = load(tmp_path, """\
        name: p
        model: org/m
        nodes: [{host: "root@[fd00::1]"}, gpu-b]
        args: {tp-size: 2}
        """).get("p")
    assert p.nodes[0].dist_address == "fd00::1"
    assert dist_init_addr(p) == "[fd00::1]:20000"


def test_single_host_profiles_keep_their_hash(tmp_path):
    """The new fields enter the launch spec only when set, so history keeps matching old profiles."""
    p = load(tmp_path, "name: p\nmodel: org/m\n").get("p")
    assert "nodes" not in p.launch_spec() and "dist_init_port" not in p.launch_spec()
    assert "nodes" not in p.redacted()
    multi = load(tmp_path, TWO_NODES, "q.yaml").get("p")
    other = load(tmp_path, TWO_NODES.replace("root@gpu-a", "root@gpu-z"), "r.yaml").get("p")
    assert multi.content_hash != other.content_hash
    assert multi.redacted()["nodes"] == [{"host": "root@gpu-a"}, {"host": "gpu-b", "address": "10.0.0.2",
                                                                  "ssh_port": 2222}]


def test_a_child_can_drop_the_nodes(tmp_path):
    write(tmp_path, "base.yaml", TWO_NODES)
    child = write(tmp_path, "child.yaml", """\
        name: one
        extends: p
        nodes: null
        args: {tp-size: 8}
        """)
    p = load_profile(child, layers=[ProfileLayer("t", (tmp_path,))])
    argv = build_argv(p, simulated=False)
    assert p.nodes == () and argv[argv.index("--tp-size") + 1] == "8" and "--nnodes" not in argv


@pytest.mark.parametrize("nodes, message, where", [
    ("nodes: gpu-a", "field 'nodes' must be a list of hosts, rank 0 first; did you mean 'nodes: [gpu-a, ...]'?", (3, 8)),
    ("nodes: [gpu-a]", "needs at least two; for one host, leave 'nodes' out", (3, 8)),
    ("nodes: [gpu-a, 'gpu b']", "node 'gpu b' is not an SSH destination; write it as host or user@host", (3, 16)),
    ("nodes: [gpu-a, '-oProxyCommand=x']", "node '-oProxyCommand=x' is not an SSH destination", (3, 16)),
    ("nodes: [gpu-a, 'gpu-b:2222']", "node 'gpu-b:2222' has a port; write the SSH port as 'ssh-port'", (3, 16)),
    ("nodes: [gpu-a, gpu-a]", "node 'gpu-a' is listed twice (entries 1 and 2)", (3, 16)),
    ("nodes: [gpu-a, {host: gpu-b, adress: 10.0.0.2}]", "unknown node field 'adress'; did you mean 'address'?",
     (3, 30)),
    ("nodes: [gpu-a, {address: 10.0.0.2}]", "a node written as a map needs 'host'", (3, 16)),
    ("nodes: [gpu-a, {host: gpu-b, address: '10.0.0.2:20000'}]",
     "node address '10.0.0.2:20000' has a port; give the address alone", (3, 39)),
    ("nodes: [gpu-a, {host: gpu-b, ssh-port: 70000}]", "field 'ssh-port' must be between 1 and 65535", (3, 40)),
    ("nodes: [gpu-a, 7]", "each node must be a host name or a map with 'host', not a number", (3, 16)),
])
def test_bad_nodes_are_located(tmp_path, nodes, message, where):
    error = only_error(tmp_path, f"name: p\nmodel: org/m\n{nodes}\nargs: {{tp-size: 2}}\n")
    assert message in error.message
    assert (error.line, error.column) == where


def test_dist_init_port_is_checked(tmp_path):
    error = only_error(tmp_path, "name: p\nmodel: org/m\nnodes: [a, b]\ndist-init-port: '20000'\n"
                                 "args: {tp-size: 2}\n")
    assert error.message == "field 'dist-init-port' must be a number, not a string; did you mean 20000 (without quotes)?"
    error = only_error(tmp_path, "name: p\nmodel: org/m\ndist-init-port: 20000\n")
    assert "names no 'nodes'" in error.message and (error.line, error.field) == (3, "dist-init-port")
    error = only_error(tmp_path, "name: p\nmodel: org/m\nport: 20000\nnodes: [a, b]\nargs: {tp-size: 2}\n")
    assert "also the server's HTTP port" in error.message


@pytest.mark.parametrize("key", ["nnodes", "node-rank", "dist-init-addr", "nccl-init-addr", "node", "dist-init"])
def test_node_flags_in_args_are_refused_when_nodes_are_named(tmp_path, key):
    error = only_error(tmp_path, f"name: p\nmodel: org/m\nnodes: [a, b]\nargs:\n  tp-size: 2\n  {key}: 2\n")
    assert error.field == f"args.{key}" and (error.line, error.column) == (6, 3)
    assert error.message.startswith("profile 'p' names its nodes, so spectui writes --nnodes, --node-rank and "
                                    f"--dist-init-addr for each node; remove 'args.{key}'")


def test_node_flags_by_hand_are_fine_without_nodes(tmp_path):
    library = load(tmp_path, "name: p\nmodel: org/m\nargs: {nnodes: 2, node-rank: 1, dist-init-addr: 'a:1'}\n")
    assert library.errors == [] and library.get("p").nodes == ()


def test_ambiguous_prefix_is_left_to_the_host_parser(tmp_path):
    """``--dist`` could be --dist-timeout too: the host's parser calls it ambiguous, not this check."""
    library = load(tmp_path, "name: p\nmodel: org/m\nnodes: [a, b]\nargs: {tp-size: 2, dist: 1}\n")
    assert library.errors == []


def test_conflict_inherited_from_a_parent_is_reported_in_the_child(tmp_path):
    write(tmp_path, "base.yaml", "name: base\nmodel: org/m\nargs: {nnodes: 2, tp-size: 2}\n")
    child = write(tmp_path, "child.yaml", "name: child\nextends: base\nnodes: [a, b]\n")
    library = load_profiles([child], layers=[ProfileLayer("t", (tmp_path,))])
    [error] = library.errors
    assert error.path == str(child) and error.field == "nodes" and error.line == 3
    assert f"remove 'args.nnodes' (it sets --nnodes, in {tmp_path / 'base.yaml'})" in error.message


@pytest.mark.parametrize("args, message, field", [
    ("{tp-size: 12}", "tp-size 12 is the total across the 5 nodes and SGLang splits it evenly, so it must be a "
     "multiple of 5", "args.tp-size"),
    ("{trust-remote-code: true}", "tp-size 1 (unset, so 1) is the total across the 5 nodes", "nodes"),
    ("{tp: 7, pipeline-parallel-size: 3}", "tp-size 7 x pp-size 3 is the total", "args.tp"),
    ("{tp-size: 10, dp-size: 2}", "SGLang runs no data-parallel replicas across nodes (dp-size 2 with 5 nodes)",
     "args.dp-size"),
])
def test_parallel_sizes_are_checked_as_sglang_does(tmp_path, args, message, field):
    error = only_error(tmp_path, f"name: p\nmodel: org/m\nnodes: [a, b, c, d, e]\nargs: {args}\n")
    assert message in error.message and error.field == field


def test_total_tp_over_nodes_is_accepted(tmp_path):
    library = load(tmp_path, "name: p\nmodel: org/m\nnodes: [a, b, c, d, e]\nargs: {tp: 10, pp-size: 3}\n")
    assert library.errors == [] and ranks_per_node(library.get("p")) == 6


def test_gpus_must_hold_each_nodes_ranks(tmp_path):
    error = only_error(tmp_path, "name: p\nmodel: org/m\nnodes: [a, b]\ngpus: [0, 1, 2]\nargs: {tp-size: 8}\n")
    assert error.message == ("field 'gpus' lists 3 GPUs, but each of the 2 nodes runs 4 ranks (tp-size 8 x pp-size 1 "
                             "/ 2 nodes); list 4 GPUs or remove 'gpus'")
    assert (error.line, error.field) == (4, "gpus")


def test_the_shipped_multinode_example():
    library = load_profiles(layers=[ProfileLayer("shipped", (ROOT / "spectui" / "data" / "profiles",))])
    assert library.errors == []
    p = library.get("twonode-kimi-eagle3")
    assert len(p.nodes) == 2 and p.args["tp-size"] == 16 and ranks_per_node(p) == len(p.gpus) == 8
    assert p.algorithm == "EAGLE3" and p.chain[-2:] == ("kimi-eagle3", "twonode-kimi-eagle3")
