"""Opening a session on a host: pick the transport, ship the agent, shake hands."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from spectui.core.agent_bundle import AgentBundle, build_bundle
from spectui.core.backoff import Backoff
from spectui.core.errors import AuthFailed, HostKeyError, KeyPassphraseNeeded, SpectuiError
from spectui.core.logsetup import agent_level
from spectui.core.paths import HOST_STATE_DEFAULT, demo_state_dir
from spectui.core.rpc import AgentClient
from spectui.core.transport.base import Transport
from spectui.core.transport.local import LocalTransport, start_early
from spectui.core.transport.ssh import SshOptions

if TYPE_CHECKING:
    from spectui.core.demo_ports import DemoPorts

log = logging.getLogger(__name__)

@dataclass
class HostTarget:
    """What to connect to: ``demo``, ``local`` or ``ssh``."""

    kind: str
    destination: str | None = None
    ssh: SshOptions = field(default_factory=SshOptions)
    python: str | None = None            # the host's interpreter; default python3 (ssh) or this one
    simulated: bool = False
    state_dir: str | None = None         # the host's state folder
    gpu_source: str = "auto"
    ports: DemoPorts | None = None       # the demo's profile ports moved off taken ones (spectui.core.demo_ports)
    name: str | None = None              # how the console names it among several (spectui demo --hosts 2: "demo-2")

    @classmethod
    def demo(cls, state_dir: str | None = None, ports: DemoPorts | None = None, name: str | None = None) -> "HostTarget":
        return cls(kind="demo", simulated=True, state_dir=state_dir or demo_state_dir(), ports=ports, name=name)

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        if self.kind in ("ssh", "replay"):
            return self.destination or "?"
        return "demo (simulated host)" if self.kind == "demo" else "local"

    @property
    def history_label(self) -> str:
        """The host's name in the history (benchmarks, probes, tunes): an SSH host's destination, else its label."""
        return self.destination if self.kind == "ssh" and self.destination else self.label

    def host_python(self) -> str:
        if self.python:
            return self.python
        return "python3" if self.kind == "ssh" else sys.executable

    def bundle(self) -> AgentBundle:
        """The agent's bundle for this host: an agent on this machine gets its modules compiled by this Python
        (it runs them when its own Python is of the same version, and compiles the sources otherwise); one over
        SSH gets the sources only (the host's Python is its own, and the payload crosses the network)."""
        return build_bundle(compiled=self.kind != "ssh")

    def server_python(self, profile_python: str | None) -> str | None:
        """The interpreter a server of a profile runs under on this host: the profile's own ``python``, else the
        host's ``--python`` (an SGLang venv given for the host serves every profile that names none), else None
        (the default, ``python3``)."""
        return profile_python or self.python

    def agent_args(self) -> list[str]:
        args = ["--state", self.state_dir or HOST_STATE_DEFAULT, "--gpu-source", self.gpu_source,
                "--log-level", agent_level()]  # the agent logs at the console's level (spectui.core.logsetup)
        if self.simulated:
            args.append("--sim")
        return args

    def make_transport(self) -> Transport:
        if self.kind == "ssh":
            # asyncssh is loaded here, by the first SSH connection, not by every command that imports sessions
            from spectui.core.transport.ssh_client import SshTransport

            return SshTransport(self.destination or "", self.ssh)
        return LocalTransport()


def start_agent_early(target: HostTarget) -> None:
    """Start the agent of a host on this machine (the demo, ``local``) now, for the session :func:`open_session`
    opens on it later in this process: the agent starts while the caller goes on (the console loads its code).
    Nothing for a host over SSH."""
    if target.kind in ("demo", "local"):
        start_early(target.bundle(), target.host_python(), target.agent_args())


@dataclass
class Session:
    target: HostTarget
    transport: Transport
    client: AgentClient

    @property
    def hello(self) -> dict:
        return self.client.hello or {}

    async def close(self) -> None:
        try:
            await self.client.close()
        finally:
            await self.transport.close()


async def open_session(target: HostTarget, *, handshake_timeout: float = 30.0, keepalive: bool = True) -> Session:
    """Connect, start the agent and shake hands; with ``keepalive`` the client pings every
    :data:`~spectui.core.rpc.PING_INTERVAL_S` and ends the session as disconnected when the host
    has sent nothing for :data:`~spectui.core.rpc.PING_DEADLINE_S` (a frozen link)."""
    transport = target.make_transport()
    log.info("connecting to %s (%s)", target.label, target.kind)
    await transport.connect()
    try:
        bundle = target.bundle()
        python = target.host_python()
        log.debug("starting the agent on %s with %s %s", transport.destination, python, target.agent_args())
        pipe = await transport.start_agent(bundle, python, target.agent_args())
        client = AgentClient(pipe, expected_hash=bundle.hash, host_label=transport.destination
                             if target.kind == "ssh" else target.label)
        hello = await client.handshake(python, timeout=handshake_timeout)
    except BaseException as exc:
        log.info("connecting to %s failed: %s", target.label, exc or type(exc).__name__)
        await transport.close()
        raise
    log.info("the agent runs on %s: pid %s, Python %s (%s)", transport.destination, hello.get("pid"),
             hello.get("python_version"), hello.get("python"))
    if keepalive:
        client.start_keepalive()
    return Session(target, transport, client)


RECONNECT_FIRST_WAIT_S = 1.0
RECONNECT_MAX_WAIT_S = 15.0


async def reopen_session(target: HostTarget, *, within_s: float,
                         on_retry: Callable[[str, float], None] | None = None) -> Session:
    """A new session on ``target`` after a drop: try now, then again with doubling waits (1, 2, 4 ... s,
    at most 15) until ``within_s`` has passed; raises the last attempt's error then.

    Errors that need the user (host key, authentication, passphrase) are raised at once. ``on_retry``
    hears each failed attempt's sentence and the wait before the next one.
    """
    deadline = time.monotonic() + max(0.0, within_s)
    backoff = Backoff(RECONNECT_FIRST_WAIT_S, cap_s=RECONNECT_MAX_WAIT_S)
    while True:
        try:
            return await open_session(target)
        except (HostKeyError, AuthFailed, KeyPassphraseNeeded):
            raise
        except (SpectuiError, OSError) as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning("gave up reconnecting to %s: %s", target.label, exc)
                raise
            pause = min(backoff.next(), left)
            log.info("reconnecting to %s: %s; trying again in %.0f s", target.label, exc, pause)
            if on_retry is not None:
                on_retry(str(exc), pause)
            await asyncio.sleep(pause)
