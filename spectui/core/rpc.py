"""Client side of the agent protocol: requests with ids, replies, pushed events."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from spectui.core.errors import AgentCallError, AgentStartError, Disconnected
from spectui.core.transport.base import AgentPipe

PROTOCOL_VERSION = 1


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
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            raise AgentCallError("timeout", f"{method} got no answer from {self.host_label} within {timeout:g} s.") from None
        finally:
            self._pending.pop(req_id, None)

    async def rtt(self) -> float:
        """Round-trip time of a ping, in seconds."""
        t0 = time.perf_counter()
        await self.call("ping", timeout=10)
        return time.perf_counter() - t0

    async def _read_loop(self) -> None:
        reason = None
        try:
            while True:
                line = await self.pipe.readline()
                if not line:
                    break
                try:
                    msg = json.loads(line)
                except ValueError:
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
                    for fn in list(self._listeners):
                        fn(ev)
        except Exception as exc:  # a transport failing mid-read ends the session, cleanly
            reason = f"Disconnected from {self.host_label}: {exc}."
        self._finish(reason)

    def _finish(self, reason: str | None) -> None:
        if self.closed.is_set():
            return
        if reason is None:
            reason = (f"Disconnected from {self.host_label}." if not self._closing
                      else f"Closed the connection to {self.host_label}.")
        self.close_reason = reason
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(Disconnected(reason))
        self.closed.set()
        for fn in list(self._listeners):
            try:
                fn(Event("disconnected", {"reason": reason, "clean": self._closing}, time.time()))
            except Exception:
                pass

    async def close(self, timeout: float = 5.0) -> int | None:
        """Close stdin (the agent exits) and wait for it."""
        self._closing = True
        self.pipe.close_stdin()
        status = await self.pipe.wait_exit(timeout)
        if self._reader is not None:
            try:
                await asyncio.wait_for(self._reader, 2)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                self._reader.cancel()
        self._finish(None)
        return status
