"""What the demo-host benchmarks share (``soak.py``, ``record_cost.py``): a free port, waiting, and stopping
everything a run started even when it is interrupted. Imported by the scripts from their own folder."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
import time

from spectui.core.errors import SpectuiError
from spectui.core.servers import ServerControl
from spectui.core.session import HostTarget, open_session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def wait_for(cond, timeout: float, what: str, script: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit(f"{script}: {what} within {timeout:g} s did not happen")
        await asyncio.sleep(0.2)


async def stop_everything(link, target: HostTarget, script: str) -> None:
    """Stop the demo traffic and every server this run started: over the link while it lasts, else
    over a new session to the same simulated host (an interrupt may have ended the agent)."""
    session, fresh = link.session, None
    try:
        if session is None or session.client.closed.is_set():
            session = fresh = await open_session(target)
        else:
            try:
                await session.client.call("traffic.stop", timeout=5)
            except SpectuiError:
                session = fresh = await open_session(target)
        ctl = ServerControl(session)
        for srv in await ctl.list():
            if srv["state"] not in ("stopped", "failed", "crashed"):
                await ctl.stop(srv["name"])
    except SpectuiError as exc:
        print(f"{script}: could not stop the servers ({exc}); see `spectui servers list --demo --state-dir "
              f"{target.state_dir}`", file=sys.stderr)
    finally:
        if fresh is not None:
            await fresh.close()


async def interruptible(work, script: str, cleaned: str = "the servers it started were stopped") -> int:
    """Run ``work``; SIGTERM or SIGINT cancels it, so that its cleanup (``cleaned``: what it undoes) runs."""
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        print(f"{script}: interrupted; {cleaned}", file=sys.stderr)
        return 130
