"""HostLink: stays connected, reconnects with backoff, keeps the last values."""

import asyncio
import os
import signal

import pytest

from spectui.core.errors import HostUnreachable
from spectui.core.live import HostLink, LinkState
from spectui.core.session import HostTarget


async def wait_until(cond, timeout=20.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.05)


async def test_reconnects_after_the_agent_dies(state_dir):
    link = HostLink(HostTarget.demo(str(state_dir)), gpu_interval_s=0.2)
    task = asyncio.create_task(link.run())
    try:
        await wait_until(lambda: link.connected and link.gpu is not None)
        assert len(link.gpu.gpus) == 8 and link.facts["simulated"]
        first_pid = link.session.hello["pid"]
        last_frame = link.gpu
        os.kill(first_pid, signal.SIGKILL)
        await wait_until(lambda: link.state is LinkState.RECONNECTING)
        assert link.gpu is last_frame  # the last values stay on screen
        assert link.reconnect_in_s() is not None
        await wait_until(lambda: link.connected and link.session.hello["pid"] != first_pid)
        await wait_until(lambda: link.gpu is not None and link.gpu.received_at > last_frame.received_at)
        assert link.reconnects == 1
    finally:
        await link.close()
        await asyncio.wait_for(task, 10)
    assert link.state is LinkState.CLOSED


async def test_first_connection_failure_is_raised(state_dir):
    from tests.support.sshd import free_port

    t = HostTarget(kind="ssh", destination=f"127.0.0.1:{free_port()}", state_dir=str(state_dir))
    link = HostLink(t)
    with pytest.raises(HostUnreachable, match="refused"):
        await link.run()
