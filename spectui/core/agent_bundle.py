"""Packs the agent's modules into one payload that the host's Python runs from stdin.

Nothing is written on the host: the remote command is a short bootstrap
(``python3 -c '...exec(sys.stdin.buffer.read(N))' ARGS``) and the first N bytes on
its stdin are the payload, which installs the modules as package ``spectui_agent`` from
memory and runs it. The protocol follows on the same stdin.
"""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

PACKAGE = "spectui_agent"

_LOADER = r'''
import sys, types, hashlib, importlib.util
PKG = %(pkg)r
SOURCES = %(sources)r
_h = hashlib.sha256()
for _n in sorted(SOURCES):
    _h.update(_n.encode() + b"\0" + SOURCES[_n].encode("utf-8") + b"\0")
_pkg = types.ModuleType(PKG)
_pkg.__path__ = []
_pkg.__package__ = PKG
_pkg.__bundle_hash__ = _h.hexdigest()
sys.modules[PKG] = _pkg

class _BundleLoader(object):
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        short = module.__name__[len(PKG) + 1:]
        exec(compile(SOURCES[short], "<spectui-agent>/%%s.py" %% short, "exec"), module.__dict__)

class _BundleFinder(object):
    def find_spec(self, name, path=None, target=None):
        if name.startswith(PKG + ".") and name[len(PKG) + 1:] in SOURCES:
            return importlib.util.spec_from_loader(name, _BundleLoader())
        return None

sys.meta_path.insert(0, _BundleFinder())
import importlib
importlib.import_module(PKG + ".main").run_and_exit(sys.argv[1:])
'''


@dataclass(frozen=True)
class AgentBundle:
    payload: bytes
    hash: str

    def bootstrap_argv(self, python: str, agent_args: list[str]) -> list[str]:
        code = ("import sys\n"
                "if sys.version_info < (3, 8): sys.exit('spectui agent needs Python 3.8 or newer, this is ' + "
                "sys.version.split()[0])\n"
                "exec(sys.stdin.buffer.read(%d))" % len(self.payload))
        return [python, "-u", "-c", code, *agent_args]

    def remote_command(self, python: str, agent_args: list[str]) -> str:
        """The command line for a remote shell (the one place a shell string is unavoidable)."""
        return " ".join(shlex.quote(a) for a in self.bootstrap_argv(python, agent_args))


def _sources() -> dict[str, str]:
    out = {}
    for entry in resources.files("spectui.agent").iterdir():
        name = entry.name
        if name.endswith(".py") and name != "__init__.py":
            out[name[:-3]] = entry.read_text(encoding="utf-8")
    return out


def bundle_hash(sources: dict[str, str]) -> str:
    h = hashlib.sha256()
    for n in sorted(sources):
        h.update(n.encode() + b"\0" + sources[n].encode("utf-8") + b"\0")
    return h.hexdigest()


@lru_cache(maxsize=1)
def build_bundle() -> AgentBundle:
    sources = _sources()
    payload = (_LOADER % {"pkg": PACKAGE, "sources": sources}).encode("utf-8")
    return AgentBundle(payload=payload, hash=bundle_hash(sources))
