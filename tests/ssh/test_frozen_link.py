"""A frozen link (the sshd serving the session stopped with SIGSTOP) is noticed in seconds, not minutes,
and the console header says how long the host has been silent instead of a stale latency (real sshd)."""

import asyncio
import os
import signal
import time

import psutil
import pytest

from spectui.core.errors import Disconnected
from spectui.core.live import HostLink, LinkState
from spectui.core.session import open_session
from spectui.ui import snapshots
from spectui.ui.draw import DEFAULT_STYLES
from spectui.ui.views import HeaderView
from spectui.ui.widgets.header import HeaderBar, header_row

pytestmark = [pytest.mark.sshd, pytest.mark.timeout(120)]

NOTICED_WITHIN_S = 10.0  # pings every 2 s, 5 s deadline: well under TCP's minutes


def sshd_session_processes(sshd) -> list[int]:
    """Every sshd process serving a connection (privileged monitor and its unprivileged child)."""
    out = []
    for pid in sshd.session_pids():
        try:
            proc = psutil.Process(pid)
            out += [pid] + [c.pid for c in proc.children(recursive=True) if "sshd" in c.name()]
        except psutil.NoSuchProcess:
            pass
    return out


def signal_all(pids, sig) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


async def test_a_frozen_link_ends_the_session_within_seconds(sshd, state_dir):
    s = await open_session(sshd.host_target(state_dir))
    frozen: list[int] = []
    try:
        assert await s.client.call("ping", timeout=10) is not None
        frozen = sshd_session_processes(sshd)
        assert frozen, "no sshd process serves the session"
        t0 = time.monotonic()
        signal_all(frozen, signal.SIGSTOP)
        # a call made now does not hang for its own 30 s timeout: the keepalive ends the session first
        with pytest.raises(Disconnected, match="stopped answering"):
            await s.client.call("servers.list", timeout=30)
        noticed = time.monotonic() - t0
        assert noticed < NOTICED_WITHIN_S, f"a frozen link took {noticed:.1f} s to notice"
        assert s.client.closed.is_set() and s.client.reply_age_s() >= 5
        t1 = time.monotonic()
        await s.close()  # closing a dead link does not wait on it
        assert time.monotonic() - t1 < 8
    finally:
        signal_all(frozen, signal.SIGCONT)
        await s.close()


async def test_a_live_but_quiet_link_is_not_given_up(sshd, state_dir):
    s = await open_session(sshd.host_target(state_dir))
    try:
        await asyncio.sleep(7)  # longer than the deadline, with no call of ours: the pings keep it alive
        assert not s.client.closed.is_set()
        assert s.client.reply_age_s() < 3 and s.client.rtt_s is not None
        assert await s.client.call("ping", timeout=10) is not None
    finally:
        await s.close()


def test_header_shows_how_long_the_host_has_been_silent():
    silent = HeaderView("gpu-box", "ssh", False, "NVIDIA H200", 8, "0.5.23", "connected", 1.2, reply_age_s=7)
    text = header_row(silent, DEFAULT_STYLES).plain
    assert "● connected last reply 7 s ago" in text and "1.2 ms" not in text
    narrow = HeaderBar().draw(silent, 60, DEFAULT_STYLES)[0].plain  # the silence stays when the row is short
    assert "last reply 7 s ago" in narrow
    fresh = HeaderView("gpu-box", "ssh", False, "NVIDIA H200", 8, "0.5.23", "connected", 1.2)
    assert "● connected 1.2 ms" in header_row(fresh, DEFAULT_STYLES).plain


async def test_console_link_header_goes_from_latency_to_silence_to_reconnecting(sshd, state_dir):
    link = HostLink(sshd.host_target(state_dir), gpu_interval_s=0.5)
    runner = asyncio.create_task(link.run())
    frozen: list[int] = []

    def header() -> str:
        view = snapshots.header_view(link, traffic=None, busy=None)
        return header_row(view, DEFAULT_STYLES).plain

    async def until(cond, within_s: float) -> float:
        t0 = time.monotonic()
        while not cond():
            assert time.monotonic() - t0 < within_s, header()
            await asyncio.sleep(0.1)
        return time.monotonic() - t0

    try:
        await until(lambda: link.connected and link.rtt_ms is not None, 60)
        assert " ms" in header() and "last reply" not in header()
        frozen = sshd_session_processes(sshd)
        signal_all(frozen, signal.SIGSTOP)
        await until(lambda: "last reply" in header(), 5)
        assert " ms" not in header()
        await until(lambda: link.state is LinkState.RECONNECTING, NOTICED_WITHIN_S)
        assert "stopped answering" in snapshots.banner_view(link).text
        signal_all(frozen, signal.SIGCONT)
        frozen = []
        await until(lambda: link.connected, 60)  # a new connection, with fresh replies
        await until(lambda: "last reply" not in header(), 10)
    finally:
        signal_all(frozen, signal.SIGCONT)
        await link.close()
        runner.cancel()
        try:
            await runner
        except (asyncio.CancelledError, Exception):  # noqa: S110  the runner was cancelled: how it ended is moot
            pass
