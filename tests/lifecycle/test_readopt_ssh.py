"""Re-adoption after the SSH connection drops (real sshd)."""

import asyncio
import os
import signal

import pytest

from spectui.core.servers import ServerControl
from spectui.core.session import open_session
from tests.lifecycle.conftest import group_pids, library, write_profile

pytestmark = pytest.mark.sshd


async def test_server_outlives_a_dropped_connection_and_is_readopted(sshd, profiles_dir, state_dir):
    write_profile(profiles_dir, "alpha")
    s = await open_session(sshd.host_target(state_dir))
    ctl = ServerControl(s)
    await ctl.start(library().get("alpha"))
    r = await ctl.wait("alpha", timeout_s=60)
    try:
        for p in sshd.session_pids():
            os.kill(p, signal.SIGKILL)
        await asyncio.wait_for(s.client.closed.wait(), 10)
        await s.close()
        assert group_pids(r["pgid"]), "the server died with the connection"
        s2 = await open_session(sshd.host_target(state_dir))
        try:
            listed = {x["name"]: x for x in await ServerControl(s2).list()}
            assert listed["alpha"]["state"] == "ready" and listed["alpha"]["pid"] == r["pid"]
            await ServerControl(s2).stop("alpha", grace_s=5)
        finally:
            await s2.close()
        assert not group_pids(r["pgid"])
    finally:
        try:
            os.killpg(r["pgid"], signal.SIGKILL)
        except ProcessLookupError:
            pass
