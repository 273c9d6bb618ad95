"""SGLang multi-node tensor parallelism on the simulator: the inter-node cost term, and servers
spread over two simulated hosts (two state folders on this machine), one process per node.

The bands of the cost model follow from ``spectui.sim.hardware`` (Kimi-K2.5, 600 GB, batch 1,
EAGLE-3 with 3 steps, top-k 1, 4 draft tokens):

* one inter-node all-reduce of a token is 2 messages (2 (N - 1) with N = 2) of ``msg_us``: 100 GbE
  30 us + 2 PCIe hops of 9.26 us = 48.5 us, NDR 10 + 18.5 = 28.5 us; a forward has 123 of them,
  11.9 ms (100 GbE) and 7.0 ms (NDR), plus 123 x 7168 x 2 B through the NIC per token (0.31 ms at
  5.6 GB/s, 0.04 ms at 47.5 GB/s);
* TP8 on one box: decode 12.2 ms, verify 29.4 ms, EAGLE-3 step 34.0 ms;
* TP16 over two boxes: the weights per rank halve (9.0 -> 4.5 ms, drafts 1.15 -> 0.58 ms), the
  intra-node all-reduce stays what TP8's costs (hierarchical: reduce-scatter + all-gather over 8
  ranks) but is NCCL's even for decode (no custom all-reduce across nodes), and the inter-node
  term comes on top: decode 33.8 / 28.6 ms, verify 38.0 / 31.9 ms, step 41.9 / 35.6 ms (100 GbE /
  NDR), so TP16 is slower than TP8 on both links, NDR by 5% a step, 100 GbE by 23%.
"""

import os
import re
import signal
import threading
import time

import pytest

from spectui.sim import dist
from spectui.sim import hardware as hw
from spectui.sim.faults import SITE
from spectui.sim.logfmt import VERSIONS
from spectui.sim.server.cli import parse_args
from spectui.sim.server.config import ConfigError, resolve
from spectui.sim.server.startup import custom_all_reduce_off
from tests.sim.simproc import claims, free_port, live_claims, pid_alive, wait_for
from tests.support.wheels import release_tree

pytestmark = pytest.mark.rank_processes  # its servers' ranks are real processes

KIMI = 600.0
EAGLE3 = ("EAGLE3", 1, 3, 1, 4)
NETS = ("pcie-2x8gpu-100gbe", "pcie-2x8gpu-ndr400")
# per preset: (inter-node ms per forward, verify ratio, step ratio, decode ratio) bands, TP16 / TP8
BANDS = {
    "pcie-2x8gpu-100gbe": ((11.5, 13.0), (1.20, 1.40), (1.15, 1.32), (2.5, 3.0)),
    "pcie-2x8gpu-ndr400": ((6.5, 7.5), (1.04, 1.14), (1.02, 1.09), (2.1, 2.6)),
}


def tp8(preset="pcie-8gpu"):
    return hw.cost_model(preset, 8, KIMI)


def tp16(preset):
    return hw.cost_model(preset, 16, KIMI, nnodes=2)


# -- the cost model ----------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", NETS)
def test_tp16_over_two_nodes_is_slower_than_tp8_on_one(preset):
    one, two = tp8(), tp16(preset)
    inter, verify, step, decode = BANDS[preset]
    assert inter[0] < two.inter_node_ms(1) < inter[1]
    assert verify[0] < two.verify_ms(1, 4) / one.verify_ms(1, 4) < verify[1]
    assert step[0] < two.step_ms(*EAGLE3) / one.step_ms(*EAGLE3) < step[1]
    assert decode[0] < two.decode_ms(1) / one.decode_ms(1) < decode[1]
    for batch in (1, 2, 4, 8, 16, 32, 64):
        assert two.step_ms("EAGLE3", batch, 3, 1, 4) > one.step_ms("EAGLE3", batch, 3, 1, 4)
        assert two.step_ms("NGRAM", batch, 0, 8, 8) > one.step_ms("NGRAM", batch, 0, 8, 8)
        assert two.decode_ms(batch) > one.decode_ms(batch)
    for tokens in (1, 16, 256):
        assert two.prefill_ms(tokens) > one.prefill_ms(tokens)
    d = two.describe()
    assert (d["nnodes"], d["tp_per_node"], d["custom_all_reduce"]) == (2, 8, False)
    assert d["weight_scale"] == 0.5 and d["ar_scale"] == 1.0  # half the weights, TP8's intra-node all-reduce


def test_infiniband_beats_100gbe_and_both_keep_one_node_as_it_was():
    eth, ib = tp16("pcie-2x8gpu-100gbe"), tp16("pcie-2x8gpu-ndr400")
    assert ib.step_ms(*EAGLE3) < eth.step_ms(*EAGLE3)
    assert ib.decode_ms(1) < eth.decode_ms(1)
    assert ib.prefill_ms(4096) < eth.prefill_ms(4096)
    # the bandwidth term: 2 (N-1)/N of the bytes through each NIC, 100 GbE 0.45 x 12.5 GB/s, NDR 0.95 x 50 GB/s
    per_token = lambda m: m.inter_node_ms(1001) - m.inter_node_ms(1)
    assert 0.30 < per_token(eth) / 1000 < 0.33 and 0.035 < per_token(ib) / 1000 < 0.04
    assert hw.ETHERNET_100G.line_gbytes_s == 12.5 and hw.INFINIBAND_NDR.line_gbytes_s == 50.0
    for preset in NETS:  # on one node the multi-node presets are pcie-8gpu
        one, base = tp8(preset), tp8()
        assert one.inter_node_ms(8) == 0.0
        assert one.step_ms(*EAGLE3) == base.step_ms(*EAGLE3) and one.decode_ms(4) == base.decode_ms(4)


def test_long_prefills_gain_from_the_halved_compute_only_over_infiniband():
    # 0.05 ms a token of prefill compute saved against 0.31 (100 GbE) or 0.037 (NDR) ms of NIC time
    assert tp16("pcie-2x8gpu-ndr400").prefill_ms(4096) < tp8().prefill_ms(4096)
    assert tp16("pcie-2x8gpu-100gbe").prefill_ms(4096) > 2 * tp8().prefill_ms(4096)


def test_speculation_pays_off_against_tp16s_own_baseline():
    # without the custom all-reduce, plain decode pays NCCL too: EAGLE-3 breaks even at about 1.24
    for preset in NETS:
        assert 1.15 < tp16(preset).break_even_accept_length("EAGLE3", 3, 1, 4) < 1.35
    assert 2.7 < tp8().break_even_accept_length("EAGLE3", 3, 1, 4) < 2.85


def test_presets_without_a_network_refuse_several_nodes():
    with pytest.raises(ValueError, match="has no network between nodes"):
        hw.cost_model("pcie-8gpu", 16, KIMI, nnodes=2)
    with pytest.raises(ValueError, match="does not split over 3 nodes"):
        hw.cost_model("pcie-2x8gpu-ndr400", 16, KIMI, nnodes=3)


def test_node_flags_resolve_as_sglang_checks_them():
    base = ["--model-path", "moonshotai/Kimi-K2.5", "--tp-size", "16", "--nnodes", "2"]
    cfg = resolve(parse_args(base + ["--node-rank", "1", "--dist-init-addr", "10.0.0.1:20000"]))
    assert (cfg.tp_per_node, cfg.first_rank, cfg.dist_host, cfg.dist_port) == (8, 8, "10.0.0.1", 20000)
    assert cfg.hardware == hw.DEFAULT_MULTINODE_PRESET and cfg.dist_timeout_s == 600.0
    cfg = resolve(parse_args(base + ["--dist-init-addr", "[fd00::1]:20000", "--dist-timeout", "30"]))
    assert (cfg.dist_host, cfg.dist_port, cfg.dist_timeout_s) == ("fd00::1", 20000, 30.0)
    assert resolve(parse_args(base[:4])).hardware == hw.DEFAULT_PRESET
    with pytest.raises(ConfigError, match="^tp_size must be divisible by number of nodes$"):
        resolve(parse_args(["--model-path", "m", "--tp-size", "12", "--nnodes", "5"]))
    with pytest.raises(ConfigError, match="no network between nodes"):
        resolve(parse_args(base + ["--sim-hardware", "pcie-8gpu"]))
    with pytest.raises(ConfigError, match="node_rank must be in"):
        resolve(parse_args(base + ["--node-rank", "2"]))
    with pytest.raises(ConfigError, match="Missing port in address"):
        resolve(parse_args(base + ["--dist-init-addr", "10.0.0.1"]))


# -- two simulated hosts ---------------------------------------------------------------------------------
FAST = ["--model-path", "moonshotai/Kimi-K2.5", "--sim-load-time", "0.5"]


def node_args(rank, port, *extra, nnodes=2, tp=16):
    return FAST + ["--tp-size", str(tp), "--nnodes", str(nnodes), "--node-rank", str(rank),
                   "--dist-init-addr", "127.0.0.1:%d" % port] + list(extra)


def names(state):
    return sorted((c["name"] for c in claims(state).values()), key=lambda n: int(n.rsplit("TP", 1)[1]))


def test_two_nodes_meet_serve_and_node0_dies_when_node1_is_killed(sim_server):
    port = free_port()
    node0 = sim_server(*node_args(0, port, "--dist-timeout", "60"), ready=False, name="node0")
    single = sim_server(*FAST, "--tp-size", "8", "--sim-hardware", "pcie-2x8gpu-100gbe", ready=False, name="tp8")
    # node 0 loads its ranks, then waits in the distributed init for node 1: not ready
    assert wait_for(lambda: len(claims(node0.state)) == 8 and "TP7] Init torch distributed begin." in node0.log(),
                    timeout=15)
    time.sleep(1.5)  # three times its load time
    assert node0.get("/health")[0] == 503 and "fired up" not in node0.log()
    assert names(node0.state) == ["sglang::scheduler_TP%d" % i for i in range(8)]

    node1 = sim_server(*node_args(1, port, "--dist-timeout", "60"), ready=False, name="node1")
    node0.wait_ready(30)
    single.wait_ready(30)
    # each host's virtual GPUs are claimed by its own node's ranks
    assert wait_for(lambda: names(node1.state) == ["sglang::scheduler_TP%d" % i for i in range(8, 16)], timeout=10)
    assert names(node0.state) == ["sglang::scheduler_TP%d" % i for i in range(8)]
    assert sorted(c["gpu"] for c in claims(node1.state).values()) == list(range(8))
    stats = node0.get_json("/sim/stats")
    joined = stats["nodes"]["joined"]
    assert [j["node_rank"] for j in joined] == [1] and joined[0]["pid"] == node1.proc.pid
    assert sorted(joined[0]["rank_pids"]) == sorted(claims(node1.state))
    assert stats["hardware"]["custom_all_reduce"] is False and stats["hardware"]["tp_per_node"] == 8
    # node 1 serves the dummy health check only
    assert wait_for(lambda: node1.get("/health")[0] == 200, timeout=10)
    assert node1.get("/ping")[0] == 200
    assert node1.get("/generate")[0] == 404 and node1.get("/server_info")[0] == 404
    log1 = node1.log()
    assert "TP8] Init torch distributed begin." in log1
    assert "TP15] CustomAllreduce is disabled because this process group spans across nodes." in log1
    assert "TP0]" not in log1 and "max_total_num_tokens=" not in log1 and "Uvicorn running" not in log1
    assert "TP7] CustomAllreduce is disabled because this process group spans across nodes." in node0.log()

    # /generate through node 0, at the inter-node step time; node 1's GPUs are busy meanwhile
    busy = []
    watch = threading.Thread(target=lambda: busy.append(wait_for(
        lambda: claims(node1.state) and all(c["util"] > 0.5 for c in claims(node1.state).values()), timeout=10)))
    watch.start()
    body = {"text": "The capital city of France is", "sampling_params": {"max_new_tokens": 48, "ignore_eos": True}}
    out = node0.post_json("/generate", body)
    assert out["meta_info"]["completion_tokens"] == 48
    watch.join()
    assert busy == [True]
    single.post_json("/generate", body)
    two = node0.get_json("/sim/stats")["counters"]
    one = single.get_json("/sim/stats")["counters"]
    step_two, step_one = two["decode_s"] / two["decode_steps"], one["decode_s"] / one["decode_steps"]
    assert 0.030 < step_two < 0.037 and 0.0118 < step_one < 0.0126  # 33.8 ms (batch 1) vs 12.2 ms
    assert step_two / step_one > 2.5

    # node 1 dies: node 0's request broadcast fails and its tree is killed
    node0_ranks = list(claims(node0.state))
    os.killpg(node1.pgid, signal.SIGKILL)
    assert node0.proc.wait(10) == -signal.SIGKILL
    log0 = node0.log()
    assert "TP0] Scheduler hit an exception: Traceback (most recent call last):" in log0
    assert "recv_reqs = broadcast_pyobj(" in log0
    assert "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:" in log0
    assert "Received sigquit from a child process. It usually means the child failed." in log0
    assert wait_for(lambda: not any(pid_alive(p) for p in node0_ranks), timeout=5)
    assert wait_for(lambda: live_claims(node0.state) == {}, timeout=3)


@pytest.mark.parametrize("era", ["0.5.23", "2025"])
def test_stopping_node0_ends_node1(sim_server, era):
    port = free_port()
    extra = ("--sim-log-format", era, "--dist-timeout", "60", "--enable-metrics")
    node1 = sim_server(*node_args(1, port, *extra), ready=False, name="node1")  # the order does not matter
    time.sleep(1.0)
    node0 = sim_server(*node_args(0, port, *extra), ready=False, name="node0")
    node0.wait_ready(30)
    assert wait_for(lambda: node1.get("/health")[0] == 200, timeout=10)
    assert node1.get("/metrics") == (200, b"") and node1.get("/health_generate") == (200, b"")
    assert b"sglang:num_running_reqs" in node0.get("/metrics")[1]
    ranks1 = list(claims(node1.state))
    if era == "0.5.23":
        # a SIGTERM to node 1 alone is only logged: its schedulers wait for rank 0's ShutdownReq
        os.kill(node1.proc.pid, signal.SIGTERM)
        assert wait_for(lambda: "SIGTERM received on node_rank 1; waiting for the rank-0 ShutdownReq broadcast to stop "
                                "the schedulers." in node1.log(), timeout=5)
        time.sleep(0.3)
        assert node1.proc.poll() is None and node1.get("/health")[0] == 200
    os.kill(node0.proc.pid, signal.SIGTERM)
    assert node0.proc.wait(10) == 0
    if era == "0.5.23":  # the ShutdownReq broadcast: every scheduler exits, node 1 with them
        assert node1.proc.wait(10) == 0
        for pid in ranks1:
            assert "Scheduler or DataParallelController %d terminated with 0" % pid in node1.log()
        assert claims(node1.state) == {}
    else:  # node 1 loses rank 0: its broadcast fails and kill_process_tree ends it
        assert node1.proc.wait(10) == -signal.SIGKILL
        log1 = node1.log()
        assert "TP8] Scheduler hit an exception: Traceback (most recent call last):" in log1
        assert "Connection closed by peer [127.0.0.1]:%d." % port in log1
        assert "Received sigquit from a child process. It usually means the child failed." in log1
    assert wait_for(lambda: not any(pid_alive(p) for p in ranks1), timeout=5)
    assert wait_for(lambda: live_claims(node1.state) == {}, timeout=3)


def test_node1_with_a_wrong_address_fails_like_torch(sim_server):
    import socket

    with socket.socket() as hold:  # bound, never listening: nothing answers there, and no other test can take it
        hold.bind(("127.0.0.1", 0))
        nobody = hold.getsockname()[1]
        t0 = time.monotonic()
        node1 = sim_server(*node_args(1, nobody, "--sim-dist-timeout", "1"), ready=False, name="node1")
        assert node1.proc.wait(20) == -signal.SIGKILL
    took = time.monotonic() - t0
    assert took < 12  # two tries of 1 s, at most 1.2 s between them, and the start
    log = node1.log()
    target = "(127.0.0.1, %d)." % nobody
    assert "socket.cpp:1028] [c10d] The client socket has timed out after 1000ms while trying to connect to " + target in log
    assert ("TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host 127.0.0.1:%d - retrying (try=0, "
            "timeout=1000ms, delay=" % nobody) in log
    assert "- timed out (try=1, timeout=1000ms)" in log
    assert "TP8] Scheduler hit an exception: Traceback (most recent call last):" in log
    assert "torch.distributed.DistNetworkError: The client socket has timed out after 1000ms while trying to connect to " \
        + target in log
    assert "Received sigquit from a child process" in log and "Load weight begin" not in log
    assert wait_for(lambda: live_claims(node1.state) == {}, timeout=5)
    with pytest.raises(OSError):
        node1.get("/health", timeout=1)


def test_node0_gives_up_on_a_node_that_never_joins(sim_server):
    node0 = sim_server(*node_args(0, free_port(), "--sim-dist-timeout", "1.5"), ready=False, name="node0")
    assert node0.proc.wait(20) == 1
    log = node0.log()
    assert "TP0] Scheduler hit an exception: Traceback (most recent call last):" in log
    assert "torch.distributed.DistStoreError: Timed out after 1 seconds waiting for clients. 8/16 clients joined." in log
    assert "RuntimeError: Initialization failed. Please see the error messages above." in log
    assert "Load weight begin" not in log and "fired up" not in log
    assert wait_for(lambda: live_claims(node0.state) == {}, timeout=5)


def test_node0_whose_store_port_is_taken_fails_at_once(sim_server):
    import socket

    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        port = s.getsockname()[1]
        node0 = sim_server(*node_args(0, port, "--sim-dist-timeout", "30"), ready=False, name="node0")
        assert node0.proc.wait(20) == 1
    assert ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
            "port: %d, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use" % port) in node0.log()


# -- held to the real releases -----------------------------------------------------------------------------
@pytest.mark.timeout(600)  # the first use of a release downloads its wheel
def test_the_sglang_frames_and_lines_are_the_wheels():
    root = release_tree("0.5.23")
    frames = [f for f in dist._INIT_FRAMES + dist._SERVING_FRAMES if f[0].startswith(SITE)]
    frames += [(SITE + "/utils/common.py", line, "broadcast_pyobj", "dist.broadcast(tensor_size, src=src, group=dist_group)")
               for line in (2715, 2730)]
    for path, line, func, code in frames:
        lines = (root / "srt" / path[len(SITE) + 1:]).read_text().splitlines()
        assert lines[line - 1].strip() == code, (path, line)
        indent = len(lines[line - 1]) - len(lines[line - 1].lstrip())
        for above in reversed(lines[:line - 1]):  # up the blocks that hold the line, to its def
            depth = len(above) - len(above.lstrip())
            if above.strip() and depth < indent:
                indent = depth
                m = re.match(r"\s*def (\w+)\(", above)
                if m:
                    assert m.group(1) == func, (path, line)
                    break
    engine = (root / "srt/entrypoints/engine.py").read_text()
    for text in ("SIGTERM received on node_rank ", "waiting for the rank-0 ShutdownReq broadcast to stop ",
                 '"Scheduler or DataParallelController {proc.pid} "', "launch_dummy_health_check_server("):
        assert text in engine
    assert '"tp_size must be divisible by number of nodes"' in (root / "srt/arg_groups/validation_hook.py").read_text()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("era", list(VERSIONS))
def test_the_custom_all_reduce_warning_and_the_dummy_routes_are_each_releases(era):
    root = release_tree(VERSIONS[era])
    comm = root / "srt/distributed/device_communicators"
    src = (comm / ("custom_all_reduce_utils.py" if era == "0.5.23" else "custom_all_reduce.py")).read_text()
    joined = re.sub(r'"\s+"', "", src)  # adjacent string literals as Python joins them
    if era == "0.5.23":
        assert 'f"{cls_name} is disabled because this process group spans across nodes."' in joined
        assert 'cls_name="CustomAllreduce"' in (comm / "custom_all_reduce.py").read_text()
    else:
        assert '"%s"' % custom_all_reduce_off(era) in joined
    utils = root / ("srt/utils.py" if era == "0.4" else "srt/utils/common.py")
    text = utils.read_text()
    dummy = text[text.index("def launch_dummy_health_check_server"):]
    dummy = dummy[:dummy.index("\ndef ")]
    routes = set(re.findall(r'@app\.get\("(/[a-z_]+)"\)', dummy))
    assert routes == ({"/health", "/health_generate"} if era == "0.4" else {"/health", "/health_generate", "/ping"})
    assert ("add_prometheus_middleware(app)" in dummy) == (era != "0.4")
