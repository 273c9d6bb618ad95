"""The agent as a local subprocess (``spectui status --demo``, a ``local`` host)."""

from __future__ import annotations

import asyncio
import sys

from spectui.core.agent_bundle import AgentBundle
from spectui.core.errors import AgentStartError
from spectui.core.transport.base import AgentPipe, Transport


class LocalPipe(AgentPipe):
    def __init__(self, proc: asyncio.subprocess.Process):
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


class LocalTransport(Transport):
    kind = "local"

    def __init__(self) -> None:
        self._procs: list[asyncio.subprocess.Process] = []

    @property
    def destination(self) -> str:
        return "local"

    async def connect(self) -> None:
        return None

    async def start_agent(self, bundle: AgentBundle, python: str, agent_args: list[str]) -> AgentPipe:
        argv = bundle.bootstrap_argv(python or sys.executable, agent_args)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, limit=16 * 1024 * 1024,
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
