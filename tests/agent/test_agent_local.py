"""The agent run as a local subprocess, through the same bundle the SSH path ships."""

import asyncio
import os
import sys

import pytest

from spectui.core.agent_bundle import build_bundle
from spectui.core.errors import AgentCallError, AgentStartError
from spectui.core.session import HostTarget, open_session
from tests.support.procs import pid_alive


async def test_hello_carries_protocol_and_the_shipped_hash(state_dir):
    s = await open_session(HostTarget.demo(str(state_dir)))
    try:
        assert s.hello["protocol"] == 1
        assert s.hello["agent_hash"] == build_bundle().hash
        assert s.hello["python"]
    finally:
        await s.close()


async def test_host_facts_and_idle_sim_gpus(state_dir):
    s = await open_session(HostTarget.demo(str(state_dir)))
    try:
        facts = await s.client.call("host.facts")
        frame = await s.client.call("gpu.sample")
    finally:
        await s.close()
    assert facts["cpu_count"] == os.cpu_count()
    assert facts["python"]["path"]
    assert facts["sglang"]["installed"] is False and "not installed" in facts["sglang"]["message"]
    assert facts["simulated"] is True
    assert len(facts["gpus"]) == 8 and facts["nvidia_driver"]
    assert frame["source"] == "sim"
    assert [g["index"] for g in frame["gpus"]] == list(range(8))
    for g in frame["gpus"]:
        assert g["name"] == "NVIDIA RTX PRO 6000 Blackwell"
        assert g["mem_total_mib"] == 96 * 1024
        assert g["util_pct"] == 0 and g["mem_used_mib"] == 0 and g["processes"] == []
        assert g["power_w"] < 0.1 * g["power_limit_w"]


async def test_stream_at_requested_rate_with_increasing_seq(state_dir):
    s = await open_session(HostTarget.demo(str(state_dir)))
    frames = []
    s.client.add_listener(lambda ev: frames.append(ev) if ev.name == "gpu" else None)
    try:
        r = await s.client.call("gpu.subscribe", {"interval_s": 0.1})
        assert r["source"] == "sim"
        await asyncio.sleep(1.05)
        await s.client.call("gpu.unsubscribe")
        n = len(frames)
        await asyncio.sleep(0.3)
        assert len(frames) <= n + 1  # stopped
    finally:
        await s.close()
    assert 7 <= n <= 13, n
    seqs = [f.data["seq"] for f in frames]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    # arrival soon after sampling (same clock on a local host)
    assert max(f.received_at - f.data["t"] for f in frames) < 0.5


async def test_interval_floor_and_unknown_method_are_clear_errors(state_dir):
    s = await open_session(HostTarget.demo(str(state_dir)))
    try:
        with pytest.raises(AgentCallError, match="at least 0.1 s"):
            await s.client.call("gpu.subscribe", {"interval_s": 0.01})
        with pytest.raises(AgentCallError, match="no method"):
            await s.client.call("no.such.method")
        # the agent is still fine afterwards
        assert (await s.client.call("ping", {"echo": 7}))["echo"] == 7
    finally:
        await s.close()


async def test_agent_exits_when_stdin_closes_and_leaves_nothing(state_dir):
    s = await open_session(HostTarget.demo(str(state_dir)))
    pid = s.hello["pid"]
    await s.client.call("gpu.subscribe", {"interval_s": 0.1})
    assert pid_alive(pid)
    status = await s.client.close(timeout=5)
    await s.transport.close()
    assert status == 0
    assert not pid_alive(pid)
    assert s.client.closed.is_set()


async def test_missing_python_is_one_sentence(state_dir):
    t = HostTarget.demo(str(state_dir))
    t.python = "/nonexistent/python3"
    with pytest.raises(AgentStartError, match="No Python at '/nonexistent/python3'"):
        await open_session(t)


async def test_bare_python_without_pynvml_or_nvidia_smi_has_no_gpu_telemetry(tmp_path, state_dir, monkeypatch):
    """A host Python with nothing installed, and no nvidia-smi on PATH."""
    venv = tmp_path / "bare"
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "venv", "--without-pip", str(venv))
    assert await proc.wait() == 0
    monkeypatch.setenv("PATH", "/nonexistent-bin")
    t = HostTarget(kind="local", python=str(venv / "bin" / "python"), state_dir=str(state_dir))
    s = await open_session(t)
    try:
        frame = await s.client.call("gpu.sample")
        facts = await s.client.call("host.facts")
    finally:
        await s.close()
    assert frame["source"] == "none" and frame["gpus"] == []
    msg = frame["message"]
    assert msg.startswith("no GPU telemetry: ")
    assert "nvml: pynvml is not installed" in msg
    assert "nvidia-smi: nvidia-smi is not on PATH" in msg
    assert "sim: no simulated GPUs" in msg
    assert facts["gpus"] == [] and facts["nvidia_driver"] is None
