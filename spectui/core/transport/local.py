"""The agent as a local subprocess (``spectui status --demo``, a ``local`` host).

The console starts its own host's agent first (:func:`start_early`, before it loads its code) so that the agent
starts while the console loads; the session's :meth:`LocalTransport.start_agent` then takes that process up.
"""

from __future__ import annotations

import asyncio
import atexit
import subprocess
import sys
import threading

from spectui.core.agent_bundle import AgentBundle
from spectui.core.errors import AgentStartError
from spectui.core.transport.base import AgentPipe, Transport


class LocalPipe(AgentPipe):
    def __init__(self, proc: asyncio.subprocess.Process | EarlyAgent):
        self.proc = proc

    async def readline(self) -> bytes:
        try:
            return await self.proc.stdout.readline()
        except (ConnectionError, ValueError):
            return b""

    def write(self, data: bytes) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.write(data)

    async def drain(self) -> None:
        if self.proc.stdin is not None:
            try:
                await self.proc.stdin.drain()
            except (ConnectionError, BrokenPipeError):
                pass  # the agent exited; readline() sees the end and stderr says why

    def close_stdin(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()

    async def wait_exit(self, timeout: float) -> int | None:
        try:
            return await asyncio.wait_for(self.proc.wait(), timeout)
        except asyncio.TimeoutError:
            self.proc.kill()
            await self.proc.wait()
            return None

    async def stderr_tail(self) -> str:
        try:
            data = await asyncio.wait_for(self.proc.stderr.read(65536), 1.0)
        except (asyncio.TimeoutError, ConnectionError, ValueError):
            return ""
        return data.decode("utf-8", "replace")


class EarlyAgent:
    """An agent process started before its session (:func:`start_early`), as an ``asyncio.subprocess.Process``
    once :meth:`attach` has given it the running loop's streams."""

    def __init__(self, popen: subprocess.Popen, payload: bytes) -> None:
        self.popen = popen
        self.stdin: asyncio.StreamWriter | None = None
        self.stdout: asyncio.StreamReader | None = None
        self.stderr: asyncio.StreamReader | None = None
        # the payload goes in on a thread of its own: the agent reads it while the console goes on loading
        self._sent = threading.Thread(target=self._send, args=(payload,), name="agent-payload", daemon=True)
        self._sent.start()

    def _send(self, payload: bytes) -> None:
        try:
            self.popen.stdin.write(payload)
            self.popen.stdin.flush()
        except (OSError, ValueError):
            pass  # the agent ended before it read it: its session reads the end and what it said on stderr

    async def attach(self) -> EarlyAgent:
        loop = asyncio.get_running_loop()
        # its output is read first: an interpreter that writes more to stderr than a pipe holds before it reads its
        # stdin (a broken wrapper, say) would otherwise block the payload's write, and this wait on it, for ever
        self.stdout = asyncio.StreamReader(limit=STREAM_LIMIT, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(self.stdout, loop=loop), self.popen.stdout)
        self.stderr = asyncio.StreamReader(limit=STREAM_LIMIT, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(self.stderr, loop=loop), self.popen.stderr)
        while self._sent.is_alive():  # a poll, not a thread's join: the session's start stays cancellable
            await asyncio.sleep(0.01)
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, self.popen.stdin)
        self.stdin = asyncio.StreamWriter(transport, protocol, None, loop)
        return self

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    async def wait(self) -> int:
        while self.popen.poll() is None:
            await asyncio.sleep(0.02)
        return self.popen.returncode

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()

    def stop_unused(self, timeout: float = 3.0) -> None:
        """An early agent no session took up: close its stdin (it exits), else kill it."""
        self._sent.join(timeout)
        try:
            self.popen.stdin.close()
        except (OSError, ValueError):
            pass
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()


STREAM_LIMIT = 16 * 1024 * 1024
# agents started early, by (interpreter, agent arguments, bundle hash), until a session takes each up
_early: dict[tuple[str, tuple[str, ...], str], EarlyAgent] = {}


def _key(bundle: AgentBundle, python: str, agent_args: list[str]) -> tuple[str, tuple[str, ...], str]:
    return python or sys.executable, tuple(agent_args), bundle.hash


def start_early(bundle: AgentBundle, python: str, agent_args: list[str]) -> None:
    """Start the agent now, for a local session opened later in this process with the same interpreter and
    arguments. Nothing is said when it cannot start: the session's own start then says why, in one sentence."""
    key = _key(bundle, python, agent_args)
    if key in _early:
        return
    try:
        popen = subprocess.Popen(bundle.bootstrap_argv(key[0], agent_args), stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError:
        return
    if not _early:
        atexit.register(_stop_unused)
    _early[key] = EarlyAgent(popen, bundle.payload)


def _stop_unused() -> None:
    while _early:
        _early.popitem()[1].stop_unused()


class LocalTransport(Transport):
    kind = "local"

    def __init__(self) -> None:
        self._procs: list[asyncio.subprocess.Process | EarlyAgent] = []

    @property
    def destination(self) -> str:
        return "local"

    async def connect(self) -> None:
        return None

    async def start_agent(self, bundle: AgentBundle, python: str, agent_args: list[str]) -> AgentPipe:
        early = _early.pop(_key(bundle, python, agent_args), None)
        if early is not None:  # started before the session (start_early): its payload is in
            proc = await early.attach()
            self._procs.append(proc)
            return LocalPipe(proc)
        argv = bundle.bootstrap_argv(python or sys.executable, agent_args)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, limit=STREAM_LIMIT,
            )
        except FileNotFoundError:
            raise AgentStartError(f"No Python at {python!r} on this machine: give the interpreter with --python.") from None
        except PermissionError:
            raise AgentStartError(f"{python!r} is not executable: give the interpreter with --python.") from None
        self._procs.append(proc)
        proc.stdin.write(bundle.payload)
        return LocalPipe(proc)

    async def close(self) -> None:
        for proc in self._procs:
            if proc.returncode is None:
                if proc.stdin is not None and not proc.stdin.is_closing():
                    proc.stdin.close()
                try:
                    await asyncio.wait_for(proc.wait(), 3)
                except asyncio.TimeoutError:
                    proc.kill()
                    await proc.wait()
        self._procs.clear()
