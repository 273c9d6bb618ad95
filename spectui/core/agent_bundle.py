"""Packs the agent's modules into one payload that the host's Python runs from stdin.

Nothing is written on the host: the remote command is a short bootstrap
(``python3 -c '...exec(sys.stdin.buffer.read(N))' ARGS``) and the first N bytes on its
stdin are the payload, which installs the modules as package ``spectui_agent`` from memory
and runs it (see ``spectui/agent/bootstrap.py``). The protocol follows on the same stdin.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from spectui.agent.bootstrap import bootstrap_code, bundle_hash, make_payload, read_sources

__all__ = ["AgentBundle", "build_bundle", "bundle_hash", "bundle_sources"]


@dataclass(frozen=True)
class AgentBundle:
    payload: bytes
    hash: str

    def bootstrap_argv(self, python: str, agent_args: list[str]) -> list[str]:
        return [python, "-u", "-c", bootstrap_code(len(self.payload)), *agent_args]

    def remote_command(self, python: str, agent_args: list[str]) -> str:
        """The command line for a remote shell (the one place a shell string is unavoidable)."""
        return " ".join(shlex.quote(a) for a in self.bootstrap_argv(python, agent_args))


def bundle_sources() -> dict[str, str]:
    """The agent's module sources as the bundle ships them (see ``read_sources``)."""
    return read_sources(str(resources.files("spectui.agent")))


@lru_cache(maxsize=1)
def build_bundle() -> AgentBundle:
    sources = bundle_sources()
    return AgentBundle(payload=make_payload(sources), hash=bundle_hash(sources))
