"""Packs the agent's modules into one payload that the host's Python runs from stdin.

Nothing is written on the host: the remote command is a short bootstrap
(``python3 -c '...exec(sys.stdin.buffer.read(N))' ARGS``) and the first N bytes on its
stdin are the payload, which installs the modules as package ``spectui_agent`` from memory
and runs it (see ``spectui/agent/bootstrap.py``). The protocol follows on the same stdin. An agent on this
machine (the demo, ``local``) also gets the modules compiled by this Python, kept in the cache folder: it runs
them instead of compiling each module it imports, when its Python's compiled files have the same format.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from spectui.agent.bootstrap import bootstrap_code, bundle_hash, compiled_code, make_payload, read_sources
from spectui.core.paths import user_cache_dir
from spectui.core.privatecache import open_private, write_private

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


@lru_cache(maxsize=2)
def build_bundle(compiled: bool = False) -> AgentBundle:
    """The agent's bundle; ``compiled``: with its modules compiled by this Python, for an agent on this machine
    (the demo, ``local``), which then runs them instead of compiling each one it imports (tens of milliseconds of
    CPU at every start). The compiled modules are kept in the cache folder, made once per agent and Python."""
    sources = bundle_sources()
    digest = bundle_hash(sources)
    code = compiled_modules(sources, digest) if compiled else None
    return AgentBundle(payload=make_payload(sources, code=code), hash=digest)


def compiled_modules(sources: dict[str, str], digest: str) -> tuple[str, str]:
    """:func:`~spectui.agent.bootstrap.compiled_code` of ``sources``, from the cache folder when made there before for
    this bundle (``digest``) and this Python (its compiled files' magic number); it holds code the agent runs, so
    it is kept as a private cache file (:mod:`spectui.core.privatecache`)."""
    import importlib.util

    path = user_cache_dir() / "agent" / f"code-{digest[:32]}-{importlib.util.MAGIC_NUMBER.hex()}.b64"
    with open_private(path) as f:
        text = f.read().decode("ascii", "replace") if f is not None else ""
    magic, _, blob = text.partition("\n")
    if magic == importlib.util.MAGIC_NUMBER.hex() and blob:
        return magic, blob
    code = compiled_code(sources)
    write_private(path, lambda out: out.write(("%s\n%s" % code).encode("ascii")))
    return code
