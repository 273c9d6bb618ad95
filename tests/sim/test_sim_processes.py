"""TP ranks as real processes on virtual GPUs: memory, utilization, and what stopping leaves."""

import json
import os
import signal
import threading
import time

import pytest

from spectui.sim.vgpu import memory_in_use
from tests.sim.simproc import claims, live_claims, pid_alive, wait_for

pytestmark = pytest.mark.rank_processes  # its servers' ranks are real processes

SMALL = ["--model-path", "meta-llama/Llama-3.1-70B-Instruct", "--sim-load-time", "0.3"]


def test_ranks_hold_memory_and_follow_the_decode_loop(sim_server):
    sp = sim_server(*SMALL, "--tp-size", "4", "--mem-fraction-static", "0.8")
    c = claims(sp.state)
    assert len(c) == 4
    assert sorted(x["gpu"] for x in c.values()) == [0, 1, 2, 3]
    assert sorted(x["name"] for x in c.values()) == ["sglang::scheduler_TP%d" % i for i in range(4)]
    assert set(c) == set(sp.get_json("/sim/stats")["rank_pids"])
    for x in c.values():
        assert 0.75 * 98304 < x["memory_mib"] < 0.85 * 98304  # weights + KV pool at 0.8, plus graphs
        assert x["util"] < 0.2
        assert pid_alive(x["pid"]) and x["pid"] != sp.proc.pid
    # a long request keeps the decode loop busy: utilization follows
    done = threading.Event()

    def load():
        sp.post_json("/generate", {"text": "Alice", "sampling_params": {"max_new_tokens": 600, "ignore_eos": True}})
        done.set()

    threading.Thread(target=load, daemon=True).start()
    assert wait_for(lambda: all(x["util"] > 0.8 for x in claims(sp.state).values()), timeout=5)
    assert done.wait(30)
    assert wait_for(lambda: all(x["util"] < 0.2 for x in claims(sp.state).values()), timeout=5)


def test_cuda_visible_devices_maps_ranks_to_gpus(sim_server):
    sp = sim_server(*SMALL, "--tp-size", "2", env={"CUDA_VISIBLE_DEVICES": "5,3"})
    assert sorted(x["gpu"] for x in claims(sp.state).values()) == [3, 5]


def test_stopping_the_group_leaves_nothing(sim_server):
    sp = sim_server(*SMALL, "--tp-size", "2")
    pids = sp.group_pids()
    assert len(pids) == 3 and sp.proc.pid in pids
    os.killpg(sp.pgid, signal.SIGTERM)
    assert wait_for(lambda: not sp.group_pids(), timeout=10), sp.group_pids()
    assert sp.proc.wait(5) == 0
    assert claims(sp.state) == {}  # clean exits free their memory at once


def test_sigterm_to_the_leader_alone_stops_its_ranks(sim_server):
    sp = sim_server(*SMALL, "--tp-size", "2")
    ranks = list(claims(sp.state))
    os.kill(sp.proc.pid, signal.SIGTERM)
    assert sp.proc.wait(10) == 0
    assert wait_for(lambda: not any(pid_alive(p) for p in ranks), timeout=10)
    assert live_claims(sp.state) == {}


def test_killed_leader_leaves_ranks_holding_memory_until_their_orphan_timeout(sim_server):
    sp = sim_server(*SMALL, "--tp-size", "2", "--sim-orphan-timeout", "2")
    ranks = list(claims(sp.state))
    os.kill(sp.proc.pid, signal.SIGKILL)
    sp.proc.wait(5)
    time.sleep(1.0)
    held = live_claims(sp.state)
    assert sorted(held) == sorted(ranks)  # as with real SGLang: GPU memory still taken
    assert all(pid_alive(p) for p in ranks)
    assert all(c["memory_mib"] > 1000 and c["util"] == 0 for c in held.values())
    assert wait_for(lambda: not any(pid_alive(p) for p in ranks), timeout=10)
    assert wait_for(lambda: live_claims(sp.state) == {}, timeout=3)


def test_a_killed_rank_frees_its_memory_a_moment_later(sim_server):
    sp = sim_server(*SMALL, "--tp-size", "2")
    victim = sorted(claims(sp.state))[0]
    os.kill(victim, signal.SIGKILL)
    assert wait_for(lambda: not pid_alive(victim), timeout=5)
    assert victim in live_claims(sp.state)  # the driver has not freed it yet
    assert wait_for(lambda: victim not in live_claims(sp.state), timeout=3)


def test_memory_held_by_another_server_is_not_available(sim_server):
    first = sim_server(*SMALL, "--tp-size", "2")
    ranks = list(claims(first.state))
    second = sim_server(*SMALL, "--tp-size", "2", state=first.state, ready=False)
    assert second.proc.wait(30) == 1  # 70 GB of weights per GPU do not fit in what is left
    assert "torch.OutOfMemoryError: CUDA out of memory" in second.log()
    assert "GPU 0 has a total capacity of 96.00 GiB" in second.log()
    # a killed leader's orphaned ranks keep blocking the GPUs until they are gone
    os.kill(first.proc.pid, signal.SIGKILL)
    first.proc.wait(5)
    third = sim_server(*SMALL, "--tp-size", "2", state=first.state, ready=False)
    assert third.proc.wait(30) == 1
    for pid in ranks:
        os.kill(pid, signal.SIGTERM)
    assert wait_for(lambda: live_claims(first.state) == {}, timeout=5)
    fourth = sim_server(*SMALL, "--tp-size", "2", state=first.state)
    assert fourth.get("/health")[0] == 200


def claim_files(state):
    """Every GPU claim, one per file (the inline ranks' all carry the leader's pid), as a GPU reader reads them:
    not the hidden temporary file a claim is being written to before it replaces the old one."""
    out = []
    for f in sorted((state / "sim" / "procs").glob("*.json")):
        if not f.name.startswith("."):
            out.append(json.loads(f.read_text()))
    return out


def test_inline_ranks_report_the_same_gpu_usage_from_the_leader_alone(sim_server):
    """``SPECTUI_SIM_RANKS=inline``: no process per rank, the same memory, names and utilization on the same
    GPUs, each in the leader's name; a clean stop frees them at once."""
    flags = (*SMALL, "--tp-size", "2", "--mem-fraction-static", "0.8")
    procs = sim_server(*flags)
    inline = sim_server(*flags, env={"SPECTUI_SIM_RANKS": "inline"})
    assert inline.group_pids() == [inline.proc.pid] and len(procs.group_pids()) == 3
    assert inline.get_json("/sim/stats")["rank_pids"] == []

    def usage(sp):
        return sorted((c["gpu"], c["name"], c["memory_mib"]) for c in claim_files(sp.state))

    # the rank processes write their claims themselves: on a loaded machine a moment after the leader is ready
    assert wait_for(lambda: usage(inline) == usage(procs), timeout=10), (usage(inline), usage(procs))
    assert len(usage(inline)) == 2
    assert {c["pid"] for c in live_claims(inline.state).values()} == {inline.proc.pid}
    assert memory_in_use(inline.state, 0) == memory_in_use(procs.state, 0) > 1000

    def load(sp):
        sp.post_json("/generate", {"text": "Alice", "sampling_params": {"max_new_tokens": 600, "ignore_eos": True}})

    worker = threading.Thread(target=load, args=(inline,), daemon=True)
    worker.start()
    files = lambda: claim_files(inline.state)  # noqa: E731
    # the 600 tokens keep the decode loop busy for several seconds: the claims show it while they run
    busy = []

    def shown_busy():
        busy.append(all(c["util"] > 0.8 for c in files()))
        return busy[-1] or not worker.is_alive()

    assert wait_for(shown_busy, timeout=30) and any(busy), "the claims never showed the busy decode loop"
    worker.join(30)
    assert wait_for(lambda: all(c["util"] < 0.2 for c in files()), timeout=10)
    os.killpg(inline.pgid, signal.SIGTERM)
    assert inline.proc.wait(10) == 0
    assert claim_files(inline.state) == []  # a clean exit frees the memory at once
