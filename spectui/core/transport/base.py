"""The one interface both transports implement."""

from __future__ import annotations

import abc

from spectui.core.agent_bundle import AgentBundle


class AgentPipe(abc.ABC):
    """The agent's stdin/stdout (bytes), and how it ended."""

    @abc.abstractmethod
    async def readline(self) -> bytes:
        """One line, or ``b""`` at end of stream."""

    @abc.abstractmethod
    def write(self, data: bytes) -> None: ...

    @abc.abstractmethod
    async def drain(self) -> None: ...

    @abc.abstractmethod
    def close_stdin(self) -> None:
        """Closing stdin tells the agent to exit."""

    @abc.abstractmethod
    async def wait_exit(self, timeout: float) -> int | None:
        """Exit status once the agent has exited (``None`` if unknown or still running)."""

    @abc.abstractmethod
    async def stderr_tail(self) -> str:
        """What the agent printed on stderr (for a failed start), best effort."""


class Transport(abc.ABC):
    kind: str = "?"

    @property
    @abc.abstractmethod
    def destination(self) -> str:
        """How to name the host to a user (``root@gpu-host:22``, ``local``)."""

    @abc.abstractmethod
    async def connect(self) -> None: ...

    @abc.abstractmethod
    async def start_agent(self, bundle: AgentBundle, python: str, agent_args: list[str]) -> AgentPipe: ...

    @abc.abstractmethod
    async def close(self) -> None: ...
