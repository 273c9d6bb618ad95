"""A live link to one host for the console: connect, stream, reconnect, act.

``HostLink.run()`` connects, re-adopts the host's servers, subscribes to GPU telemetry and
server frames, and keeps them in bounded buffers. When an established connection drops it
reconnects with exponential backoff on its own, leaving the last values in place (marked
stale by the console). Errors that need the user (host key, authentication, passphrase,
a first connection that fails) are raised out of ``run()`` for the console to show.
Nothing here imports Textual: the console reads the link's attributes at its own refresh rate,
and hears what changed from :attr:`HostLink.events` (:mod:`spectui.core.link_events`): a session
opened or lost, a server's record, a switch's stage, a frame. A session's events are published
once it is open (after its :class:`~spectui.core.link_events.SessionOpened`).
"""

from __future__ import annotations

import asyncio
import enum
import getpass
import logging
import time
from dataclasses import dataclass, field

from spectui.agent.protocol import FINAL_STATES, Event as WireEvent, Method, ServerState
from spectui.core.aio import within
from spectui.core.backoff import Backoff
from spectui.core.errors import (
    AgentCallError,
    AuthFailed,
    ConnectError,
    Disconnected,
    HostKeyError,
    KeyPassphraseNeeded,
)
from spectui.core.link_events import (
    FrameReceived,
    LinkEvents,
    LinkStateChanged,
    RttChanged,
    ServerChanged,
    ServersForgotten,
    SessionClosed,
    SessionOpened,
    SwitchStage,
)
from spectui.core.profiles import Profile
from spectui.core.rpc import Event
from spectui.core.server_frames import ServerFrame, ServerSeries
from spectui.core.servers import RecordError, ServerControl, ServerRecord, is_external
from spectui.core.session import HostTarget, Session, open_session
from spectui.core.telemetry import GpuHistory, TelemetryFrame

log = logging.getLogger(__name__)


def _checked_record(data: object) -> ServerRecord | None:
    """A server record from the agent, checked where it enters; a malformed one is logged (one sentence)
    and left out, never stored."""
    try:
        return ServerRecord.from_wire(data)
    except RecordError as exc:
        log.warning("%s", exc)
        return None

def _session_user(session: Session) -> str | None:
    """The user the host's agent runs as: the SSH login's, else (the demo, a local host) this machine's."""
    conn = getattr(getattr(session, "transport", None), "conn", None)
    if conn is not None:
        try:
            name = conn.get_extra_info("username")
        except Exception:  # a connection object that cannot tell: the user stays unknown
            name = None
        return str(name) if name else None
    if getattr(session.target, "kind", None) in ("demo", "local"):
        try:
            return getpass.getuser()
        except (KeyError, OSError):  # no name for this uid (a container without passwd entry)
            return None
    return None


NEEDS_USER = (HostKeyError, AuthFailed, KeyPassphraseNeeded)
BACKOFF_START_S = 1.0
BACKOFF_MAX_S = 30.0
OUTCOME_POLL_S = 0.2  # how often a switch cut by a drop looks at the server's record again
FOUND_GRACE_S = 300.0  # a server spectui only found is forgotten this long after it stopped or left the host


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
    read_only = False  # a replay's link (spectui.core.replay.ReplayLink) is read-only: nothing runs on a host

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
        self.servers: dict[str, ServerRecord] = {}  # the agent's records, checked where they enter
        self.series: dict[str, ServerSeries] = {}
        self.user: str | None = None  # the user the host's agent runs as ("mine" among found servers)
        self.found_grace_s = FOUND_GRACE_S
        self.gone_since: dict[str, float] = {}  # a found server's name -> time.monotonic() it was first seen gone
        self.switch: SwitchProgress | None = None
        self.reconnect_at: float | None = None
        self.reconnects = 0
        self.events = LinkEvents()  # what changed, as typed events (spectui.core.link_events)
        self.recorder = None  # a spectui.core.recording.RecordingWriter: every event received is written to it
        self._history = history
        self._closing = False
        self._connected_once = False
        self._backoff = Backoff(BACKOFF_START_S, cap_s=BACKOFF_MAX_S)  # the waits between reconnect attempts
        self._retry: asyncio.Event | None = None  # set while waiting to reconnect: retry_now() ends the wait

    @property
    def backoff_start_s(self) -> float:
        """The first wait after a drop; it doubles up to BACKOFF_MAX_S."""
        return self._backoff.start_s

    @backoff_start_s.setter
    def backoff_start_s(self, seconds: float) -> None:
        self._backoff.start_s = seconds

    # --- reading -------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        return self.state is LinkState.CONNECTED

    def reconnect_in_s(self) -> float | None:
        return None if self.reconnect_at is None else max(0.0, self.reconnect_at - time.monotonic())

    def retry_now(self) -> bool:
        """End the wait before the next reconnection attempt; False when the link is not waiting."""
        if self._retry is None or self._retry.is_set():
            return False
        self._retry.set()
        return True

    def _set_state(self, state: LinkState, message: str) -> None:
        if state is not self.state:
            log.info("link %s%s", state.value, "" if state is LinkState.CLOSED else f": {message}")
        self.state, self.message = state, message
        self.events.publish(LinkStateChanged(state.value, message))

    def _publish(self, event) -> None:
        """An event of the open session (none while a session is being set up or after it is lost)."""
        if self.state is LinkState.CONNECTED:
            self.events.publish(event)

    def _switch_stage(self, sp: SwitchProgress) -> None:
        self._publish(SwitchStage(sp.target, sp.stage, sp.detail, sp.elapsed_s))

    # --- events ----------------------------------------------------------------------------
    def _on_event(self, ev: Event) -> None:
        if self.recorder is not None:
            self.recorder.write(ev.name, ev.data, at=ev.received_at)
        if ev.name == WireEvent.GPU:
            frame = TelemetryFrame.from_event(ev.data, ev.received_at)
            self.gpu = frame
            self.gpu_history.add(frame)
            self._publish(FrameReceived("gpu", None, frame))
        elif ev.name == WireEvent.SERVER:
            rec = _checked_record(ev.data)
            if rec is not None:
                self.servers[rec.name] = rec
                self._publish(ServerChanged(rec.name, rec))
        elif ev.name == WireEvent.SERVER_FRAME:
            frame = ServerFrame.from_event(ev.data, ev.received_at)
            series = self.series.get(frame.name)
            if series is None:
                series = self.series[frame.name] = ServerSeries(capacity=self._history)
            series.add(frame)
            self._publish(FrameReceived("server", frame.name, frame))
        elif ev.name == WireEvent.SWITCH:
            d = ev.data
            if self.switch is None or self.switch.target != d["target"]:
                self.switch = SwitchProgress(d["target"], d["stage"])
            sp = self.switch
            sp.stage, sp.detail, sp.elapsed_s = d["stage"], d.get("detail"), d.get("elapsed_s", 0.0)
            if not sp.history or sp.history[-1][0] != d["stage"]:
                sp.history.append((d["stage"], sp.elapsed_s))
                log.info("switch to %s: %s (%.1f s)%s", sp.target, sp.stage, sp.elapsed_s,
                         f": {sp.detail}" if sp.detail else "")
            self._switch_stage(sp)

    # --- connection --------------------------------------------------------------------------
    async def _connect(self) -> None:
        self._set_state(LinkState.CONNECTING if not self._connected_once else LinkState.RECONNECTING,
                        f"connecting to {self.target.label}")
        session = await open_session(self.target)
        client = session.client

        async def telemetry() -> None:
            try:
                await client.call(Method.SERVER_TELEMETRY_SUBSCRIBE, {"interval_s": self.server_interval_s})
            except AgentCallError as exc:
                if exc.code != "unknown_method":
                    raise

        try:
            client.add_listener(self._on_event)
            # sent at once: one round trip before the link is connected, not four
            self.facts, listed, _, _ = await asyncio.gather(
                client.call(Method.HOST_FACTS), client.call(Method.SERVERS_LIST),  # the list re-adopts on the host
                client.call(Method.GPU_SUBSCRIBE, {"interval_s": self.gpu_interval_s}), telemetry())
            user = self.facts.get("user") if isinstance(self.facts, dict) else None
            self.user = str(user) if user else _session_user(session)
            self.servers = {rec.name: rec for s in listed["servers"] if (rec := _checked_record(s)) is not None}
            self.rtt_ms = 1000 * await client.rtt()  # alone, so that it is the link's and not the calls' time
        except BaseException:
            await session.close()
            raise
        self.session = session
        self.reconnect_at = None
        self._connected_once = True
        self._set_state(LinkState.CONNECTED, f"connected to {self.target.label}")
        if self.recorder is not None:  # where a replay starts showing events, at each (re)connection
            self.recorder.write("session", {"facts": self.facts, "servers": [dict(r) for r in self.servers.values()]})
        self.events.publish(SessionOpened(session, self.reconnects))

    async def run(self) -> None:
        """Stay connected until :meth:`close`. Raises what needs the user (see module doc)."""
        while not self._closing:
            try:
                await self._connect()
            except NEEDS_USER:
                raise
            except (ConnectError, Disconnected, AgentCallError, OSError) as exc:
                if not self._connected_once:
                    raise  # a first connection that fails is the user's to retry
                await self._wait_backoff(self._backoff.next(), str(exc))
                continue
            self._backoff.reset()
            pinger = asyncio.create_task(self._ping_loop())
            try:
                await self.session.client.closed.wait()
            finally:
                pinger.cancel()
            if self._closing:
                break
            reason = self.session.client.close_reason or "disconnected"
            lost = self.session
            await lost.close()
            self.session = None
            self.events.publish(SessionClosed(lost, reason))
            if self.recorder is not None:
                self.recorder.write("session_lost", {"reason": reason})
            self.reconnects += 1
            await self._wait_backoff(self._backoff.next(), reason)
        self._set_state(LinkState.CLOSED, self.message)

    async def _wait_backoff(self, seconds: float, reason: str) -> None:
        self.reconnect_at = time.monotonic() + seconds
        self._retry = asyncio.Event()
        self._set_state(LinkState.RECONNECTING, reason)
        try:
            await within(self._retry.wait(), seconds)
        except asyncio.TimeoutError:
            pass
        finally:
            self._retry = None
            self.reconnect_at = None

    def _gone(self, name: str) -> bool:
        """A server spectui only found that stopped, or frames of a server the host no longer lists."""
        rec = self.servers.get(name)
        if rec is None:
            return True
        return rec.get("origin") == "external" and rec.get("state") in FINAL_STATES

    def prune(self, now: float | None = None) -> list[str]:
        """Forget each server spectui only found (its record and frames) once it has been gone (stopped, or no
        longer listed) for :attr:`found_grace_s`, so that a long session with servers coming and going does
        not grow; the names forgotten. The operator's own servers stay: their last run is shown."""
        now = time.monotonic() if now is None else now
        names = set(self.servers) | set(self.series)
        for name in [n for n in self.gone_since if n not in names]:
            del self.gone_since[name]
        forgotten = []
        for name in sorted(names):
            if not self._gone(name):
                self.gone_since.pop(name, None)
                continue
            if now - self.gone_since.setdefault(name, now) >= self.found_grace_s:
                self.servers.pop(name, None)
                self.series.pop(name, None)
                del self.gone_since[name]
                forgotten.append(name)
        if forgotten:
            log.info("forgot %d server(s) gone for %g s: %s", len(forgotten), self.found_grace_s,
                     ", ".join(forgotten))
            self.events.publish(ServersForgotten(tuple(forgotten)))
        return forgotten

    def now(self) -> float:
        """The time the console shows this host at, on the clock frames are received by (``time.time()``): now,
        live; a replay's is the recording's time at its play head."""
        return time.time()

    def reply_age_s(self) -> float | None:
        """Seconds since the host last sent anything on the current session (None when there is none)."""
        return self.session.client.reply_age_s() if self.session is not None else None

    async def _ping_loop(self) -> None:
        """Follow the session's keepalive (it pings, and ends a frozen session) for the header, each second
        (:class:`~spectui.core.link_events.RttChanged`); forget the found servers gone for the grace period
        (:meth:`prune`)."""
        while True:
            await asyncio.sleep(1)
            self.prune()
            rtt = self.session.client.rtt_s if self.session is not None else None
            if rtt is not None and 1000 * rtt != self.rtt_ms:
                self.rtt_ms = 1000 * rtt
                self._publish(RttChanged(self.rtt_ms))
    
    async def close(self) -> None:
        self._closing = True
        if self.session is not None:
            await self.session.close()
            self.session = None
        self._set_state(LinkState.CLOSED, self.message)

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
        if self.recorder is not None:  # the console's own stage: recorded, as the agent's stages are
            self.recorder.write("switch_begin", {"target": profile.name})
        self._switch_stage(self.switch)
        control = self.control()
        prior = (self.servers.get(profile.name) or {}).get("started_at")  # a run of the same name before this one
        began = time.monotonic()
        try:
            return await control.switch(profile, force=force, stop_external=stop_external)
        except Disconnected:
            if self._closing:
                raise
            return await self._switch_outcome(profile.name, control.session, prior, began)

    async def _switch_outcome(self, name: str, dropped: Session, prior: float | None, began: float) -> dict:
        """A switch whose connection dropped: the server it launched is detached and goes on loading on the
        host, so the outcome is that server's record once the link is back (ready, failed, ...), not the drop."""
        while True:
            if self._closing or self.state is LinkState.CLOSED:
                raise Disconnected(f"The connection to {self.target.label} closed during the switch to {name}.")
            if not self.connected or self.session is None or self.session is dropped:
                await asyncio.sleep(OUTCOME_POLL_S)  # waiting for the reconnection
                continue
            rec = self.servers.get(name)  # from the new agent, which re-adopts the server; events keep it current
            if rec is None or rec.get("started_at") == prior:
                raise Disconnected(f"The connection to {self.target.label} dropped before {name} was started; "
                                   "switch to it again.")
            if rec.get("state") not in (ServerState.STARTING, ServerState.LOADING):
                break
            await asyncio.sleep(OUTCOME_POLL_S)
        total = time.monotonic() - began
        sw = self.switch
        if sw is not None and sw.target == name:
            sw.stage, sw.detail, sw.elapsed_s = rec["state"], None, total
            sw.history.append((rec["state"], total))
            if self.recorder is not None:
                self.recorder.write("switch", {"target": name, "stage": rec["state"], "elapsed_s": total})
            self._switch_stage(sw)
        return {"server": dict(rec), "total_s": total, "reconnected": True}

    async def set_gpu_interval(self, interval_s: float) -> float:
        """Change the GPU telemetry interval of the live stream (and of every reconnection); the agent's answer."""
        self.gpu_interval_s = interval_s
        if self.session is None or not self.connected:
            return interval_s  # the next connection subscribes at this rate
        reply = await self.session.client.call(Method.GPU_SUBSCRIBE, {"interval_s": interval_s})
        return float(reply.get("interval_s", interval_s))

    def record_server(self, record: dict) -> None:
        """A server's record an action's reply carries (ahead of the host's own event)."""
        rec = _checked_record(record)
        if rec is None:
            return
        self.servers[rec.name] = rec
        self._publish(ServerChanged(rec.name, rec))

    async def stop(self, name: str, *, confirmed: list[list[int]] | None = None) -> dict:
        return await self.control().stop(name, confirmed=confirmed)

    async def restart(self, profile: Profile) -> dict:
        ctl = self.control()
        if profile.name in self.servers and self.servers[profile.name]["state"] not in FINAL_STATES:
            await ctl.stop(profile.name)
        return await self.switch_to(profile)

    async def stop_all(self) -> list[dict]:
        """Stop every live server spectui started or adopted; one it only found running is left alone."""
        ctl = self.control()
        out = []
        for s in await ctl.list():
            if s["state"] not in FINAL_STATES and not is_external(s):
                out.append(await ctl.stop(s["name"]))
        return out
