"""An agent watching a server whose log path is replaced by something that never ends (a link to /dev/zero) or
never opens (a FIFO): it reads none of it, says so in the server's ``log_source``, and keeps answering; a
tail is read from the end of the log within a byte budget, and says when the budget cut it."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from spectui.core.errors import AgentCallError
from spectui.core.session import HostTarget, open_session
from tests.support.sshd import free_port

ROOT = Path(__file__).resolve().parents[2]
# the agent's address space: far above what it needs, far below what reading /dev/zero into memory takes
MEMORY_LIMIT = 3 * 1024 ** 3


def own_params(state, port):
    argv = [sys.executable, "-m", "spectui.sim.server", "--port", str(port), "--tp-size", "1", "--model-path",
            "sim/own", "--sim-load-time", "0.3", "--sim-state", str(state)]
    env = {"PYTHONPATH": str(ROOT), "SPECTUI_STATE_DIR": str(state), "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION": "false"}
    return {"name": "own", "argv": argv, "env": env, "host": "127.0.0.1", "port": port, "gpus": [0], "cwd": str(ROOT)}


@pytest.fixture
async def session(state_dir, tmp_path):
    """A local agent under :data:`MEMORY_LIMIT` (a wrapper interpreter), its servers killed at teardown."""
    python = tmp_path / "python-limited"
    python.write_text(f'#!/bin/sh\nexec prlimit --as={MEMORY_LIMIT} {sys.executable} "$@"\n')
    python.chmod(0o755)
    s = await open_session(HostTarget(kind="local", state_dir=str(state_dir), gpu_source="none", python=str(python)))
    pgids = []
    s.pgids = pgids
    yield s
    await s.close()
    for pgid in pgids:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


async def own_view(s):
    listed = await s.client.call("servers.list", timeout=10)  # answers at once, whatever the log is
    return {v["name"]: v for v in listed["servers"]}["own"]


async def until_log_source(s, words, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        v = await own_view(s)
        source = v.get("log_source") or {}
        if source.get("readable") is False and words in (source.get("text") or ""):
            return v
        assert time.monotonic() < deadline, v
        await asyncio.sleep(0.2)


async def test_a_watched_log_that_becomes_endless_or_a_fifo_is_not_read(session, state_dir):
    s = session
    started = await s.client.call("server.start", own_params(state_dir, free_port()), timeout=60)
    s.pgids.append(started["pgid"])
    assert (await s.client.call("server.wait", {"name": "own", "timeout_s": 60}, timeout=90))["state"] == "ready"
    log = Path(started["log_path"])
    log.unlink()
    log.symlink_to("/dev/zero")
    v = await until_log_source(s, "symbolic link")
    assert v["state"] == "ready" and str(log) in v["log_source"]["text"]
    with pytest.raises(AgentCallError) as got:
        await s.client.call("server.logs", {"name": "own", "lines": 40}, timeout=30)
    assert "symbolic link" in str(got.value) and str(log) in str(got.value)
    log.unlink()
    os.mkfifo(log, 0o600)
    v = await until_log_source(s, "FIFO")
    assert v["state"] == "ready"
    with pytest.raises(AgentCallError) as got:
        await s.client.call("server.logs", {"name": "own", "lines": 40}, timeout=30)
    assert "FIFO" in str(got.value)
    stopped = await s.client.call("server.stop", {"name": "own", "grace_s": 5}, timeout=60)
    assert stopped["state"] == "stopped"


async def test_a_tail_stops_at_its_byte_budget_and_says_so(session, state_dir):
    s = session
    started = await s.client.call("server.start", own_params(state_dir, free_port()), timeout=60)
    s.pgids.append(started["pgid"])
    stopped = await s.client.call("server.stop", {"name": "own", "grace_s": 5}, timeout=60)
    assert stopped["state"] == "stopped"
    log = Path(started["log_path"])
    line = "y" * 110
    count = 120000  # 100000 of them are 11 MiB: more than a tail reads at once
    with open(log, "w") as fh:
        for i in range(count):
            fh.write(f"{i:08d} {line}\n")
    got = await s.client.call("server.logs", {"name": "own", "lines": 100000}, timeout=60)
    lines = got["lines"]
    assert 0 < len(lines) < 100000 and lines[-1] == f"{count - 1:08d} {line}"
    assert [int(x.split()[0]) for x in lines] == list(range(count - len(lines), count))
    assert got.get("capped") and str(log) in got["capped"], got.get("capped")
