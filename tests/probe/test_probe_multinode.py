"""The probe across nodes: the simulated host reads the simulator's multi-node hardware model (TP16 over two
8-GPU nodes, the inter-node all-reduce reported apart), the request carries the node count, and on real hosts
each node's agent starts its own ranks, which meet over torch.distributed's TCP rendezvous (here two "nodes"
of Gloo CPU ranks on this machine)."""

import dataclasses
import json
import socket
import sys
import threading
from types import SimpleNamespace

import pytest

from spectui.agent.probe import sim
from spectui.agent.probe.methods import ProbeRunner
from spectui.agent.probe.worker import ProbeFailed, node_layout, parse_addr
from spectui.agent.protocol import AgentError
from spectui.cli.main import main
from spectui.core.probe import ProbeOptions, predict, predict_for_settings, probe_params
from spectui.core.probe.predict import node_count, spread_text
from spectui.core.probe.run import progress_text
from spectui.core.profiles import load_profiles
from spectui.core.profiles.multinode import node_profile
from spectui.sim.hardware import cost_model

TWONODE = "twonode-kimi-eagle3"
KIMI = "moonshotai/Kimi-K2.5"
EAGLE3 = {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4}


def modelled(world, nnodes=1, preset=None):
    params = {"world_size": world, "model": KIMI, "tokens": [1, 2, 4, 8, 16]}
    if nnodes > 1:
        params["nnodes"] = nnodes
    if preset:
        params["sim_hardware"] = preset
    return sim.run(params)


def verify_step_ms(result, row):
    """The verify forward of the row's width: the plain decode step, plus what verifying more positions adds."""
    return predict(result).decode_step_ms + row.extra_comm_ms + row.extra_compute_ms


def test_two_nodes_verify_slower_than_one_and_100gbe_slower_than_ndr():
    one = modelled(8)
    eth = modelled(16, 2)
    ndr = modelled(16, 2, "pcie-2x8gpu-ndr400")
    assert eth["provenance"]["preset"] == "pcie-2x8gpu-100gbe"  # the simulator's default for --nnodes 2
    rows = {name: predict_for_settings(r, EAGLE3) for name, r in (("one", one), ("eth", eth), ("ndr", ndr))}
    # the verify step: its all-reduce and the whole forward
    assert rows["eth"].verify_comm_ms > rows["ndr"].verify_comm_ms > rows["one"].verify_comm_ms
    assert verify_step_ms(eth, rows["eth"]) > verify_step_ms(ndr, rows["ndr"]) > verify_step_ms(one, rows["one"])
    # the inter-node part, apart: none on one node, more over 100 GbE than over NDR
    assert rows["one"].verify_inter_node_ms is None
    assert rows["eth"].verify_inter_node_ms > rows["ndr"].verify_inter_node_ms > 0
    weights = 600.0
    assert rows["eth"].verify_inter_node_ms == pytest.approx(
        cost_model("pcie-2x8gpu-100gbe", 16, weights, nnodes=2).inter_node_ms(4))
    for size in eth["allreduce"]["sizes"]:
        assert size["intra_node_ms"] + size["inter_node_ms"] == pytest.approx(size["median_ms"])
    # L* is the simulator's own break-even for TP16 over two nodes. Plain decode there pays NCCL and the
    # inter-node all-reduce too (no custom all-reduce across nodes), so against TP16's own plain step it is
    # lower than TP8's on one node, although each verify step costs more
    for r, preset in ((eth, "pcie-2x8gpu-100gbe"), (ndr, "pcie-2x8gpu-ndr400")):
        cm = cost_model(preset, 16, weights, nnodes=2)
        assert predict_for_settings(r, EAGLE3).predicted == pytest.approx(
            cm.break_even_accept_length("EAGLE3", 3, 1, 4), rel=1e-9)
        ngram = predict_for_settings(r, {"algorithm": "NGRAM", "draft_tokens": 8})
        assert ngram.predicted == pytest.approx(cm.break_even_accept_length("NGRAM", 0, 1, 8), rel=1e-9)
        assert predict(r).decode_step_ms == pytest.approx(cm.decode_ms(1))
    assert rows["eth"].predicted < rows["one"].predicted
    # the provenance says it is across nodes
    assert eth["provenance"]["message"] == ("read from the simulator's hardware model (pcie-2x8gpu-100gbe: TP16 "
                                            "over 2 nodes, 100 GbE), not measured")
    assert spread_text(eth) == "TP16 over 2 nodes, 100 GbE (simulated)"
    assert spread_text(ndr) == "TP16 over 2 nodes, NDR InfiniBand 400 Gb/s (simulated)"
    assert spread_text(one) == "TP8" and node_count(one) == 1 and node_count(eth) == 2
    assert "no custom all-reduce across nodes" in eth["allreduce"]["decode_path"]["note"]
    assert predict(eth).notes[-1].startswith("TP16 over 2 nodes, 100 GbE (simulated): L* is against this "
                                             "deployment's own plain decode step")


def test_single_host_presets_refuse_several_nodes():
    with pytest.raises(AgentError, match="^the simulator has no model of this deployment: hardware preset "
                                         "'pcie-8gpu' has no network between nodes"):
        modelled(16, 2, "pcie-8gpu")


def test_the_request_carries_the_node_count():
    library = load_profiles()
    two = library.get(TWONODE)
    params = probe_params(two, ProbeOptions())
    assert (params["world_size"], params["nnodes"], params["sim_hardware"]) == (16, 2, "pcie-2x8gpu-100gbe")
    assert params["gpus"] == list(range(8))  # each node's eight
    # a node's own profile says --nnodes; without sim.hardware the simulator's multi-node default applies
    node1 = node_profile(dataclasses.replace(two, sim={}), 1)
    params = probe_params(node1, ProbeOptions())
    assert (params["world_size"], params["nnodes"], params["sim_hardware"]) == (16, 2, "pcie-2x8gpu-100gbe")
    assert "nnodes" not in probe_params(library.get("kimi-eagle3"), ProbeOptions())
    assert progress_text({"stage": "sim", "preset": "pcie-2x8gpu-100gbe", "nnodes": 2}) == \
        "reading the simulator's hardware model (pcie-2x8gpu-100gbe, over 2 nodes)"


def test_demo_cli_two_node_profile(capsys, state_dir):
    assert main(["probe", "--demo", "--state-dir", str(state_dir), "--profile", TWONODE, "--json", "--no-save"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["interconnect"] == "8x RTX PRO 6000 Blackwell per node, PCIe, no NVLink, 2 nodes over 100 GbE"
    row = report["profile_l_star"]
    assert row["predicted"] == pytest.approx(cost_model("pcie-2x8gpu-100gbe", 16, 600.0, nnodes=2)
                                             .break_even_accept_length("EAGLE3", 3, 1, 4))
    assert row["verify_inter_node_ms"] > 0 and report["prediction"]["nnodes"] == 2
    rec = report["history_record"]
    assert rec["provenance"]["nnodes"] == 2 and rec["allreduce"]["nnodes"] == 2
    assert rec["provenance"]["spread"] == "TP16 over 2 nodes, 100 GbE (simulated)"
    assert all(s["inter_node_ms"] > 0 for s in rec["allreduce"]["sizes"])


# -- real hosts: each node's worker starts its own ranks -------------------------------------------------------
def test_node_layout_checks():
    assert node_layout({}, 4) == (1, 0, 4, None)
    assert node_layout({"nnodes": 2, "node_rank": 1, "dist_init_addr": "[fd00::1]:20000"}, 16) == \
        (2, 1, 8, ("fd00::1", 20000))
    assert parse_addr("gpu-node-0:29500") == ("gpu-node-0", 29500)
    for config, world, text in (({"nnodes": 2, "dist_init_addr": "h:1"}, 3, "3 ranks do not split evenly over 2"),
                                ({"nnodes": 2, "node_rank": 2, "dist_init_addr": "h:1"}, 4, "node_rank must be in"),
                                ({"nnodes": 2}, 4, "needs dist_init_addr"),
                                ({"nnodes": 2, "dist_init_addr": "fd00::1:20000"}, 4, "must be HOST:PORT")):
        with pytest.raises(ProbeFailed, match=text):
            node_layout(config, world)


def free_port():
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


class FakeAgent:
    """What ProbeRunner needs of the agent: a real host, and a channel for progress events."""

    simulated = False

    def __init__(self):
        self.events = []
        self.channel = SimpleNamespace(event=lambda name, data: self.events.append((name, data)))


@pytest.mark.timeout(240)
def test_two_nodes_of_gloo_ranks_meet_and_report_the_slowest_of_all(monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "lo")  # both "nodes" are this machine
    addr = "127.0.0.1:%d" % free_port()
    job = {"python": sys.executable, "backend": "gloo", "device": "cpu", "world_size": 4, "hidden_size": 512,
           "layers": 4, "tokens": [1, 4], "iters": 12, "warmup": 2, "max_seconds": 2.0, "timeout_s": 180,
           "nnodes": 2, "dist_init_addr": addr}
    agents = [FakeAgent(), FakeAgent()]
    out = [None, None]

    def node(rank):
        try:
            out[rank] = ProbeRunner(agents[rank]).run(dict(job, node_rank=rank))
        except Exception as exc:  # reported below, with the node
            out[rank] = exc

    threads = [threading.Thread(target=node, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(200)
    for rank, result in enumerate(out):
        assert isinstance(result, dict), "node %d: %r" % (rank, result)
        prov = result["provenance"]
        assert (prov["nnodes"], prov["node_rank"], prov["ranks_per_node"], prov["world_size"]) == (2, rank, 2, 4)
        assert prov["checked"] is True and prov["dist_init_addr"] == addr  # every rank summed 4 ones
        ar = result["allreduce"]
        assert ar["nnodes"] == 2 and ar["combine"] == "slowest rank of all nodes per iteration"
        for s in ar["sizes"]:
            assert s["n"] == 12 and len(s["rank_median_ms"]) == 2 and s["median_ms"] > 0
        ranks = [d for name, d in agents[rank].events if d.get("stage") == "ranks"]
        assert ranks == [{"stage": "ranks", "world_size": 4, "backend": "gloo", "device": "cpu", "nnodes": 2,
                          "node_rank": rank, "local_ranks": 2, "dist_init_addr": addr}]
    # both nodes hold the same slowest-of-all times
    assert [s["median_ms"] for s in out[0]["allreduce"]["sizes"]] == [s["median_ms"] for s in out[1]["allreduce"]["sizes"]]
    assert progress_text(ranks[0]) == ("starting 2 of 4 ranks on node 1 of 2 (gloo on cpu, meeting at %s)" % addr)
