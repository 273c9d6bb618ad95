"""Client side of the agent protocol: requests with ids, replies, pushed events."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from spectui.agent.protocol import EVENT_AGENT_LOG, PROTOCOL_VERSION, Method
from spectui.core.aio import within
from spectui.core.errors import AgentCallError, AgentStartError, Disconnected
from spectui.core.logsetup import replay_agent_record
from spectui.core.transport.base import AgentPipe

PING_INTERVAL_S = 2.0   # a ping this often while the link is idle
PING_DEADLINE_S = 5.0   # nothing at all from the agent for this long, a ping outstanding: the link is dead

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Event:
    name: str
    data: dict
    received_at: float  # client's time.time() when the line arrived


EventListener = Callable[[Event], None]


class AgentClient:
    """Talks to one running agent through an :class:`AgentPipe`."""

    def __init__(self, pipe: AgentPipe, *, expected_hash: str, host_label: str = "the host"):
        self.pipe = pipe
        self.expected_hash = expected_hash
        self.host_label = host_label
        self.hello: dict | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future] = {}
        self._listeners: list[EventListener] = []
        self._reader: asyncio.Task | None = None
        self.closed = asyncio.Event()
        self.close_reason: str | None = None
        self._closing = False
        self.last_reply_at: float | None = None  # time.monotonic() when the agent last sent anything
        self.rtt_s: float | None = None          # the latest ping's round trip
        self._keepalive: asyncio.Task | None = None

    # --- start -----------------------------------------------------------------------
    async def handshake(self, python: str, timeout: float = 20.0) -> dict:
        """Wait for the agent's hello; a start failure becomes one clear sentence."""
        await self.pipe.drain()
        try:
            line = await asyncio.wait_for(self.pipe.readline(), timeout)
        except asyncio.TimeoutError:
            raise AgentStartError(f"The agent on {self.host_label} did not answer within {timeout:g} s.") from None
        hello = None
        if line:
            try:
                hello = json.loads(line)
            except ValueError:
                hello = None
        if not isinstance(hello, dict) or hello.get("type") != "hello":
            err = (await self.pipe.stderr_tail()).strip()
            last = err.splitlines()[-1] if err else (line.decode("utf-8", "replace").strip() or "no output")
            if "not found" in err or "No such file" in err:
                raise AgentStartError(f"No Python at {python!r} on {self.host_label} ({last}); "
                                      f"give the interpreter with --python.")
            if "needs Python 3.8 or newer" in err or "SyntaxError" in err:
                raise AgentStartError(f"{python!r} on {self.host_label} is too old to run the agent "
                                      f"(Python 3.8 or newer is needed): {last}")
            raise AgentStartError(f"The agent could not start on {self.host_label} with {python!r}: {last}")
        if hello.get("protocol") != PROTOCOL_VERSION:
            raise AgentStartError(f"The agent on {self.host_label} speaks protocol {hello.get('protocol')}, "
                                  f"this spectui speaks {PROTOCOL_VERSION}.")
        if hello.get("agent_hash") != self.expected_hash:
            raise AgentStartError(f"The agent on {self.host_label} is not the one sent (hash mismatch).")
        self.hello = hello
        self.last_reply_at = time.monotonic()
        self._reader = asyncio.create_task(self._read_loop(), name="agent-reader")
        return hello

    # --- traffic ---------------------------------------------------------------------
    def add_listener(self, fn: EventListener) -> Callable[[], None]:
        self._listeners.append(fn)
        return lambda: self._listeners.remove(fn) if fn in self._listeners else None

    async def call(self, method: str, params: dict | None = None, *, timeout: float | None = 30.0):
        if self.closed.is_set():
            raise Disconnected(self.close_reason or f"Disconnected from {self.host_label}.")
        req_id = next(self._ids)
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._pending[req_id] = fut
        line = json.dumps({"id": req_id, "method": method, "params": params or {}}) + "\n"
        self.pipe.write(line.encode())
        try:
            await self.pipe.drain()
            return await within(fut, timeout)
        except asyncio.TimeoutError:
            raise AgentCallError("timeout", f"{method} got no answer from {self.host_label} within {timeout:g} s.") from None
        finally:
            self._pending.pop(req_id, None)

    async def rtt(self, timeout: float = 10.0) -> float:
        """Round-trip time of a ping, in seconds."""
        t0 = time.perf_counter()
        await self.call(Method.PING, timeout=timeout)
        self.rtt_s = time.perf_counter() - t0
        return self.rtt_s

    # --- liveness ----------------------------------------------------------------------
    def reply_age_s(self) -> float | None:
        """Seconds since the agent last sent anything (a reply, an event, a pong)."""
        return None if self.last_reply_at is None else max(0.0, time.monotonic() - self.last_reply_at)

    def start_keepalive(self, interval_s: float = PING_INTERVAL_S, deadline_s: float = PING_DEADLINE_S) -> None:
        """Ping every ``interval_s``; when nothing at all has come from the agent for ``deadline_s`` while
        a ping waits, end the session as disconnected (a frozen link: TCP alone takes minutes to say)."""
        if self._keepalive is None and self._reader is not None:
            self._keepalive = asyncio.create_task(self._keepalive_loop(interval_s, deadline_s), name="agent-keepalive")

    async def _keepalive_loop(self, interval_s: float, deadline_s: float) -> None:
        while not self.closed.is_set():
            try:
                await self.rtt(timeout=deadline_s)
            except Disconnected:
                return
            except AgentCallError:
                age = self.reply_age_s()
                if age is not None and age >= deadline_s:
                    self._lost(f"{self.host_label} stopped answering: nothing received for {age:.0f} s "
                               f"(the link or the host is frozen).")
                    return
                continue  # something else arrived meanwhile: alive, only slow to answer pings
            await asyncio.sleep(interval_s)

    def _lost(self, reason: str) -> None:
        """Give up on a link that stopped answering: waiters fail with :class:`Disconnected` now."""
        self._finish(reason)
        if self._reader is not None:
            self._reader.cancel()

    async def _read_loop(self) -> None:
        reason = None
        try:
            while True:
                line = await self.pipe.readline()
                if not line:
                    break
                self.last_reply_at = time.monotonic()
                try:
                    msg = json.loads(line)
                except ValueError:
                    log.debug("an unreadable line from the agent on %s: %.200r", self.host_label, line)
                    continue
                kind = msg.get("type")
                if kind == "reply":
                    fut = self._pending.get(msg.get("id"))
                    if fut is not None and not fut.done():
                        if "error" in msg:
                            err = msg["error"] or {}
                            fut.set_exception(AgentCallError(err.get("code", "error"), err.get("message", "error")))
                        else:
                            fut.set_result(msg.get("result"))
                elif kind == "event":
                    ev = Event(msg.get("event", ""), msg.get("data") or {}, time.time())
                    if ev.name == EVENT_AGENT_LOG:
                        replay_agent_record(ev.data, self.host_label)
                    for fn in list(self._listeners):
                        fn(ev)
        except asyncio.CancelledError:
            return  # given up on (:meth:`_lost`) or closed
        except Exception as exc:  # a transport failing mid-read ends the session, cleanly
            reason = f"Disconnected from {self.host_label}: {exc}."
            log.warning("reading from the agent on %s failed", self.host_label, exc_info=True)
        self._finish(reason)

    def _finish(self, reason: str | None) -> None:
        if self.closed.is_set():
            return
        if reason is None:
            reason = (f"Disconnected from {self.host_label}." if not self._closing
                      else f"Closed the connection to {self.host_label}.")
        self.close_reason = reason
        log.info("%s", reason)
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(Disconnected(reason))
        self.closed.set()
        for fn in list(self._listeners):
            try:
                fn(Event("disconnected", {"reason": reason, "clean": self._closing}, time.time()))
            except Exception:  # one listener's failure must not keep the others from hearing it
                log.exception("a listener failed on the disconnect from %s", self.host_label)

    async def close(self, timeout: float = 5.0) -> int | None:
        """Close stdin (the agent exits) and wait for it."""
        lost = self.closed.is_set()  # the link died first: no agent is there to wait for
        self._closing = True
        if self._keepalive is not None:
            self._keepalive.cancel()
        self.pipe.close_stdin()
        status = await self.pipe.wait_exit(min(timeout, 1.0) if lost else timeout)
        if self._reader is not None:
            try:
                await asyncio.wait_for(self._reader, 2)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                self._reader.cancel()
        self._finish(None)
        return status
