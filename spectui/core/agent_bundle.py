"""Packs the agent's modules into one payload that the host's Python runs from stdin.

Nothing is written on the host: the remote command is a short bootstrap
(``python3 -c '...exec(sys.stdin.buffer.read(N))' ARGS``) and the first N bytes on its
stdin are the payload, which installs the modules as package ``spectui_agent`` from memory
and runs it (see ``spectui/agent/bootstrap.py``). The protocol follows on the same stdin. An agent on this
machine (the demo, ``local``) also gets the modules' code from the compiled files Python keeps beside spectui's
sources: it runs that instead of compiling each module it imports, when its Python's compiled files have the same
format.
"""

from __future__ import annotations

import os
import py_compile
import shlex
import sys
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


@lru_cache(maxsize=2)
def build_bundle(compiled: bool = False) -> AgentBundle:
    """The agent's bundle; ``compiled``: with its modules' code as Python keeps it beside spectui's sources, for an
    agent on this machine (the demo, ``local``), which then runs it instead of compiling each module it imports
    (tens of milliseconds of CPU at every start)."""
    sources = bundle_sources()
    code = compiled_modules(str(resources.files("spectui.agent")), sources) if compiled else None
    return AgentBundle(payload=make_payload(sources, code=code), hash=bundle_hash(sources))


def compiled_modules(directory: str, sources: dict[str, str]) -> tuple[str, str] | None:
    """The code of the modules of ``sources`` (read from ``directory``) from the compiled files Python keeps beside
    them (``__pycache__``, written by pip at install and by Python at import), each taken only while it matches its
    source (its size and time, or its hash), as the loader takes it: this Python's magic number and the modules'
    code, marshalled and in base64 (not compressed: on a local pipe that costs more than it saves). A module
    without a current compiled file gets one made the way Python makes them (unless this Python writes none,
    ``PYTHONDONTWRITEBYTECODE``); one that still has none is left out, and the agent compiles its source. None: no
    module has one."""
    import base64
    import importlib.util
    import marshal

    packages = {n.rsplit(".", 1)[0] for n in sources if "." in n}
    bodies = {}
    for name in sources:
        path = os.path.join(directory, *name.split(".")) + (os.sep + "__init__.py" if name in packages else ".py")
        body = _compiled_body(path)
        if body is None and not sys.dont_write_bytecode:
            try:
                py_compile.compile(path, doraise=True)
            except (py_compile.PyCompileError, OSError):
                pass  # a read-only install: the agent compiles this one
            body = _compiled_body(path)
        if body is not None:
            bodies[name] = body
    if not bodies:
        return None
    return importlib.util.MAGIC_NUMBER.hex(), base64.b64encode(marshal.dumps(bodies)).decode("ascii")


def _compiled_body(path: str) -> bytes | None:
    """The marshalled code in the compiled file of source ``path`` (PEP 3147, 552) when it is this Python's and
    matches the source; None otherwise."""
    import importlib.util

    try:
        with open(importlib.util.cache_from_source(path), "rb") as f:
            data = f.read()
        st = os.stat(path)
    except (OSError, NotImplementedError, ValueError):
        return None
    if len(data) < 16 or data[:4] != importlib.util.MAGIC_NUMBER:
        return None
    flags = int.from_bytes(data[4:8], "little")
    if flags == 0:  # checked by the source's time and size
        if (int.from_bytes(data[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
                or int.from_bytes(data[12:16], "little") != st.st_size & 0xFFFFFFFF):
            return None
    else:  # checked by the source's hash
        try:
            with open(path, "rb") as f:
                if importlib.util.source_hash(f.read()) != data[8:16]:
                    return None
        except OSError:
            return None
    return data[16:]
