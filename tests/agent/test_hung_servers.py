"""An agent on a real host crowded with other people's servers that accept a connection and never answer
(or answer one byte a second): its own server starts and stops as fast as on a quiet host, each hung
server only makes its own record ``unresponsive``, and a listing answers at once, saying which entries
it could not confirm."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

from spectui.core.session import HostTarget, open_session
from tests.agent.crowded_stubs import CrowdedHost
from tests.support.sshd import free_port

ROOT = Path(__file__).resolve().parents[2]
SLACK_S = 1.0  # what a crowd of eight may add, over 1.2 times the quiet time, on a loaded machine


def own_params(state, port):
    """A simulated server started through a real host's agent, as any launcher would be."""
    argv = [sys.executable, "-m", "spectui.sim.server", "--port", str(port), "--tp-size", "1", "--model-path",
            "sim/own", "--sim-load-time", "0.3", "--sim-state", str(state)]
    env = {"PYTHONPATH": str(ROOT), "SPECTUI_STATE_DIR": str(state), "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION": "false"}
    return {"name": "own", "argv": argv, "env": env, "host": "127.0.0.1", "port": port, "gpus": [0], "cwd": str(ROOT)}


async def start_and_stop(s, state):
    """Seconds the start request, the wait until ready and the stop request of the agent's own server took."""
    t = time.monotonic()
    started = await s.client.call("server.start", own_params(state, free_port()), timeout=120)
    start_s = time.monotonic() - t
    try:
        t = time.monotonic()
        ready = await s.client.call("server.wait", {"name": "own", "timeout_s": 90}, timeout=120)
        ready_s = time.monotonic() - t
        assert ready["state"] == "ready", ready
        t = time.monotonic()
        stopped = await s.client.call("server.stop", {"name": "own", "grace_s": 5}, timeout=120)
        stop_s = time.monotonic() - t
        assert stopped["state"] == "stopped", stopped
    finally:
        try:
            os.killpg(started["pgid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
    return start_s, ready_s, stop_s


async def test_own_server_starts_and_stops_beside_hung_servers_as_on_a_quiet_host(state_dir):
    s = await open_session(HostTarget(kind="local", state_dir=str(state_dir), gpu_source="none"))
    try:
        quiet = await start_and_stop(s, state_dir)
        with CrowdedHost(silent=6, trickling=2) as crowd:  # found by the agent's monitor, which asks them
            assert await asyncio.get_running_loop().run_in_executor(None, crowd.wait_asked)
            crowded = await start_and_stop(s, state_dir)
    finally:
        await s.close()
    for what, q, c in zip(("start", "ready", "stop"), quiet, crowded):
        assert c <= 1.2 * q + SLACK_S, (what, quiet, crowded)


async def test_each_hung_server_goes_unresponsive_alone_and_a_listing_answers_at_once(state_dir):
    s = await open_session(HostTarget(kind="local", state_dir=str(state_dir), gpu_source="none"))
    started = None
    try:
        started = await s.client.call("server.start", own_params(state_dir, free_port()), timeout=120)
        assert (await s.client.call("server.wait", {"name": "own", "timeout_s": 90}, timeout=120))["state"] == "ready"
        with CrowdedHost(silent=6, trickling=2) as crowd:
            names = set("ext-%d" % p for p in crowd.ports)
            deadline = time.monotonic() + 60
            while True:
                listed = {v["name"]: v for v in (await s.client.call("servers.list", timeout=10))["servers"]}
                hung = [listed.get(n) for n in names]
                if all(v is not None and v["state"] == "unresponsive" for v in hung) or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.5)
            assert all(v is not None and v["state"] == "unresponsive" for v in hung), hung
            for v in hung:  # each says why, in one sentence
                assert "no full answer" in v["reason"] and v["stale"], v
            assert listed["own"]["state"] == "ready" and not listed["own"]["stale"], listed["own"]
    finally:
        await s.close()
        if started is not None:
            try:
                os.killpg(started["pgid"], signal.SIGKILL)
            except ProcessLookupError:
                pass
