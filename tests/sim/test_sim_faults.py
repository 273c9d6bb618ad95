"""Failures on request: CUDA OOM at load, a crash while serving, a hang."""

import os
import re
import signal
import socket
import time
import urllib.error

import pytest

from tests.sim.shapes import PREFIX
from tests.sim.simproc import claims, live_claims, pid_alive, wait_for

pytestmark = pytest.mark.rank_processes  # its servers' ranks are real processes

SMALL = ["--model-path", "meta-llama/Llama-3.1-70B-Instruct", "--tp-size", "2", "--sim-load-time", "0.3"]


def test_oom_during_load(sim_server):
    sp = sim_server(*SMALL, "--sim-fail-load", "oom", ready=False)
    assert sp.proc.wait(30) == 1
    log = sp.log()
    assert re.search(PREFIX.replace(r"(?: TP\d+)?", r" TP0") + r"Scheduler hit an exception: Traceback \(most recent call last\):", log)
    assert "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate" in log
    assert "RuntimeError: Initialization failed. Please see the error messages above." in log
    assert "Loading safetensors checkpoint shards:" in log and "Load weight end" not in log
    assert "fired up" not in log
    assert wait_for(lambda: not sp.group_pids(), timeout=5)
    assert wait_for(lambda: live_claims(sp.state) == {}, timeout=3)


def test_weights_that_do_not_fit_fail_the_same_way(sim_server):
    sp = sim_server("--model-path", "moonshotai/Kimi-K2.5", "--tp-size", "4", "--sim-load-time", "0.3", ready=False)
    assert sp.proc.wait(30) == 1
    assert "torch.OutOfMemoryError: CUDA out of memory" in sp.log()


def test_static_fraction_too_small_for_the_kv_pool(sim_server):
    sp = sim_server(*SMALL, "--mem-fraction-static", "0.3", ready=False)
    assert sp.proc.wait(30) == 1
    assert "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static." in sp.log()


def test_crash_while_serving(sim_server):
    sp = sim_server(*SMALL, "--sim-crash-after", "0.5")
    ranks = list(claims(sp.state))
    assert len(ranks) == 2
    assert sp.proc.wait(15) == -signal.SIGKILL  # kill_process_tree kills the leader too
    log = sp.log()
    assert "Scheduler hit an exception: Traceback (most recent call last):" in log
    assert "torch.AcceleratorError: CUDA error: an illegal memory access was encountered" in log
    assert "Received sigquit from a child process. It usually means the child failed." in log
    assert wait_for(lambda: not any(pid_alive(p) for p in ranks), timeout=5)
    assert wait_for(lambda: live_claims(sp.state) == {}, timeout=3)
    with pytest.raises(OSError):
        sp.get("/health", timeout=1)


def test_hang_stops_answering_even_health(sim_server):
    sp = sim_server(*SMALL, "--sim-hang-after", "0.3")
    time.sleep(0.8)
    with pytest.raises((socket.timeout, urllib.error.URLError, TimeoutError)):
        sp.get("/health", timeout=1.5)
    assert sp.proc.poll() is None
    assert wait_for(lambda: all(c["util"] == 1.0 for c in claims(sp.state).values()), timeout=3)
    os.killpg(sp.pgid, signal.SIGTERM)
    assert wait_for(lambda: not sp.group_pids(), timeout=10)
    assert wait_for(lambda: live_claims(sp.state) == {}, timeout=3)
