"""HostLink: stays connected, reconnects with backoff, keeps the last values."""

import asyncio
import os
import signal

import pytest

from spectui.core.errors import HostUnreachable
from spectui.core.link_events import RttChanged, ServersForgotten
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


class _DroppedSession:
    """A session whose connection is already gone: the link waits, then reconnects."""

    def __init__(self):
        self.client = type("Client", (), {"closed": asyncio.Event(), "close_reason": "the host closed it"})()
        self.client.closed.set()

    async def close(self):
        pass


async def test_reconnect_waits_grow_to_the_cap_and_start_over_after_a_good_connection(state_dir, monkeypatch):
    from spectui.core import live
    from spectui.core.errors import ConnectError

    link = HostLink(HostTarget.demo(str(state_dir)))
    link.backoff_start_s = 8.0
    # a good connection, four failed attempts, a good one, one failed attempt, then the operator closes
    outcomes = ["ok", "fail", "fail", "fail", "fail", "ok", "fail", "close"]
    waits = []

    async def connect():
        outcome = outcomes.pop(0)
        if outcome == "close":
            link._closing = True
            raise ConnectError("closed")
        if outcome == "fail":
            raise ConnectError("refused")
        link._connected_once = True
        link.session = _DroppedSession()

    async def wait_backoff(seconds, reason):
        waits.append(seconds)

    async def no_pings():
        pass

    monkeypatch.setattr(link, "_connect", connect)
    monkeypatch.setattr(link, "_wait_backoff", wait_backoff)
    monkeypatch.setattr(link, "_ping_loop", no_pings)
    await asyncio.wait_for(link.run(), 10)
    cap = live.BACKOFF_MAX_S
    assert waits == [8.0, 16.0, min(cap, 32.0), min(cap, 64.0), cap, 8.0, 16.0, min(cap, 32.0)]


async def test_the_link_says_when_it_forgets_found_servers_and_when_the_round_trip_changes(state_dir):
    link = HostLink(HostTarget.demo(str(state_dir)), gpu_interval_s=0.2)
    heard: list = []
    link.events.subscribe(heard.append)
    task = asyncio.create_task(link.run())
    try:
        await wait_until(lambda: link.connected)
        link.servers["ext-9"] = {"name": "ext-9", "state": "stopped", "origin": "external"}
        link.found_grace_s = 0.0
        await wait_until(lambda: any(isinstance(e, ServersForgotten) for e in heard))  # the link's own prune
        assert [e for e in heard if isinstance(e, ServersForgotten)] == [ServersForgotten(("ext-9",))]
        link.rtt_ms = -1.0   # no round trip measures this: the next keepalive reading is a change
        await wait_until(lambda: any(isinstance(e, RttChanged) for e in heard))
        rtt = [e for e in heard if isinstance(e, RttChanged)][-1]
        assert rtt.rtt_ms == link.rtt_ms >= 0
    finally:
        await link.close()
        await asyncio.wait_for(task, 10)
