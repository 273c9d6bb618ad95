"""A live link to one host for the console: connect, stream, reconnect, act.

``HostLink.run()`` connects, re-adopts the host's servers, subscribes to GPU telemetry and
server frames, and keeps them in bounded buffers. When an established connection drops it
reconnects with exponential backoff on its own, leaving the last values in place (marked
stale by the console). Errors that need the user (host key, authentication, passphrase,
a first connection that fails) are raised out of ``run()`` for the console to show.
Nothing here imports Textual: the console reads :meth:`HostLink.snapshot`-style attributes
at its own refresh rate.
"""

from __future__ import annotations

import asyncio
import enum
import time
from dataclasses import dataclass, field

from spectui.core.errors import (
    AgentCallError,
    AuthFailed,
    ConnectError,
    Disconnected,
    HostKeyError,
    KeyPassphraseNeeded,
)
from spectui.core.profiles import Profile
from spectui.core.rpc import Event
from spectui.core.server_frames import ServerFrame, ServerSeries
from spectui.core.servers import ServerControl, is_external
from spectui.core.session import HostTarget, Session, open_session
from spectui.core.telemetry import GpuHistory, TelemetryFrame

NEEDS_USER = (HostKeyError, AuthFailed, KeyPassphraseNeeded)
BACKOFF_START_S = 1.0
BACKOFF_MAX_S = 30.0


class LinkState(enum.Enum):
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    CLOSED = "closed"


@dataclass
class SwitchProgress:
    target: str
    stage: str
    detail: object = None
    elapsed_s: float = 0.0
    history: list[tuple[str, float]] = field(default_factory=list)


class HostLink:
    def __init__(self, target: HostTarget, *, gpu_interval_s: float = 1.0, server_interval_s: float = 1.0,
                 history: int = 3600):
        self.target = target
        self.gpu_interval_s = gpu_interval_s
        self.server_interval_s = server_interval_s
        self.state = LinkState.CONNECTING
        self.message = "connecting"
        self.session: Session | None = None
        self.facts: dict = {}
        self.rtt_ms: float | None = None
        self.gpu: TelemetryFrame | None = None
        self.gpu_history = GpuHistory(capacity=history)
        self.servers: dict[str, dict] = {}
        self.series: dict[str, ServerSeries] = {}
        self.switch: SwitchProgress | None = None
        self.reconnect_at: float | None = None
        self.reconnects = 0
        self.version = 0  # bumped on every change the console may show
        self._history = history
        self._closing = False
        self._connected_once = False

    # --- reading -------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self.state is LinkState.CONNECTED

    def reconnect_in_s(self) -> float | None:
        return None if self.reconnect_at is None else max(0.0, self.reconnect_at - time.monotonic())

    def _changed(self) -> None:
        self.version += 1

    # --- events ----------------------------------------------------------------------------
    def _on_event(self, ev: Event) -> None:
        if ev.name == "gpu":
            frame = TelemetryFrame.from_event(ev.data, ev.received_at)
            self.gpu = frame
            self.gpu_history.add(frame)
        elif ev.name == "server":
            self.servers[ev.data["name"]] = ev.data
        elif ev.name == "server_frame":
            frame = ServerFrame.from_event(ev.data, ev.received_at)
            series = self.series.get(frame.name)
            if series is None:
                series = self.series[frame.name] = ServerSeries(capacity=self._history)
            series.add(frame)
        elif ev.name == "switch":
            d = ev.data
            if self.switch is None or self.switch.target != d["target"]:
                self.switch = SwitchProgress(d["target"], d["stage"])
            sp = self.switch
            sp.stage, sp.detail, sp.elapsed_s = d["stage"], d.get("detail"), d.get("elapsed_s", 0.0)
            if not sp.history or sp.history[-1][0] != d["stage"]:
                sp.history.append((d["stage"], sp.elapsed_s))
        self._changed()

    # --- connection --------------------------------------------------------------------------
    async def _connect(self) -> None:
        self.state = LinkState.CONNECTING if not self._connected_once else LinkState.RECONNECTING
        self.message = f"connecting to {self.target.label}"
        self._changed()
        session = await open_session(self.target)
        try:
            session.client.add_listener(self._on_event)
            self.facts = await session.client.call("host.facts")
            listed = (await session.client.call("servers.list"))["servers"]  # re-adopts on the host
            self.servers = {s["name"]: s for s in listed}
            await session.client.call("gpu.subscribe", {"interval_s": self.gpu_interval_s})
            try:
                await session.client.call("server.telemetry.subscribe", {"interval_s": self.server_interval_s})
            except AgentCallError as exc:
                if exc.code != "unknown_method":
                    raise
            self.rtt_ms = 1000 * await session.client.rtt()
        except BaseException:
            await session.close()
            raise
        self.session = session
        self.state = LinkState.CONNECTED
        self.message = f"connected to {self.target.label}"
        self.reconnect_at = None
        self._connected_once = True
        self._changed()

    async def run(self) -> None:
        """Stay connected until :meth:`close`. Raises what needs the user (see module doc)."""
        backoff = BACKOFF_START_S
        while not self._closing:
            try:
                await self._connect()
            except NEEDS_USER:
                raise
            except (ConnectError, Disconnected, AgentCallError, OSError) as exc:
                if not self._connected_once:
                    raise  # a first connection that fails is the user's to retry
                await self._wait_backoff(backoff, str(exc))
                backoff = min(BACKOFF_MAX_S, backoff * 2)
                continue
            backoff = BACKOFF_START_S
            pinger = asyncio.create_task(self._ping_loop())
            try:
                await self.session.client.closed.wait()
            finally:
                pinger.cancel()
            if self._closing:
                break
            reason = self.session.client.close_reason or "disconnected"
            await self.session.close()
            self.session = None
            self.reconnects += 1
            await self._wait_backoff(backoff, reason)
            backoff = min(BACKOFF_MAX_S, backoff * 2)
        self.state = LinkState.CLOSED
        self._changed()

    async def _wait_backoff(self, seconds: float, reason: str) -> None:
        self.state = LinkState.RECONNECTING
        self.message = reason
        self.reconnect_at = time.monotonic() + seconds
        self._changed()
        await asyncio.sleep(seconds)

    def reply_age_s(self) -> float | None:
        """Seconds since the host last sent anything on the current session (None when there is none)."""
        return self.session.client.reply_age_s() if self.session is not None else None

    async def _ping_loop(self) -> None:
        """Follow the session's keepalive (it pings, and ends a frozen session) for the header, each second."""
        while True:
            await asyncio.sleep(1)
            rtt = self.session.client.rtt_s if self.session is not None else None
            age = self.reply_age_s()
            if (rtt is not None and 1000 * rtt != self.rtt_ms) or (age is not None and age >= 2):
                self.rtt_ms = 1000 * rtt if rtt is not None else self.rtt_ms
                self._changed()

    async def close(self) -> None:
        self._closing = True
        if self.session is not None:
            await self.session.close()
            self.session = None
        self.state = LinkState.CLOSED
        self._changed()

    # --- actions ----------------------------------------------------------------------------
    def control(self) -> ServerControl:
        if self.session is None or not self.connected:
            raise Disconnected(f"Not connected to {self.target.label}: wait for the reconnection.")
        return ServerControl(self.session)

    async def switch_to(self, profile: Profile, *, force: bool = False,
                        stop_external: list[list[int]] | None = None) -> dict:
        """Switch to ``profile``; ``stop_external``: the confirmed processes of servers spectui did not start
        that hold its port or GPUs (see :meth:`ServerControl.switch`)."""
        self.switch = SwitchProgress(profile.name, "starting")
        self._changed()
        return await self.control().switch(profile, force=force, stop_external=stop_external)

    async def stop(self, name: str, *, confirmed: list[list[int]] | None = None) -> dict:
        return await self.control().stop(name, confirmed=confirmed)

    async def restart(self, profile: Profile) -> dict:
        ctl = self.control()
        if profile.name in self.servers and self.servers[profile.name]["state"] not in ("stopped", "failed", "crashed"):
            await ctl.stop(profile.name)
        return await self.switch_to(profile)

    async def stop_all(self) -> list[dict]:
        """Stop every live server spectui started or adopted; one it only found running is left alone."""
        ctl = self.control()
        out = []
        for s in await ctl.list():
            if s["state"] not in ("stopped", "failed", "crashed") and not is_external(s):
                out.append(await ctl.stop(s["name"]))
        return out
