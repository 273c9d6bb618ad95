"""An agent on this machine (the demo, ``local``) gets its modules compiled by the console's Python and runs them
instead of compiling each module it imports; a Python of another version, or a payload whose compiled part is
damaged, compiles the sources as before. The compiled modules are kept as a private cache file."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from spectui.agent import bootstrap
from spectui.agent.bootstrap import bootstrap_code, compiled_code, make_payload
from spectui.core import agent_bundle
from spectui.core.session import HostTarget
from tests.support.pythons import find_python

SOURCE = "def run_and_exit(argv):\n    print('ran the source')\n    raise SystemExit(0)\n"
OTHER = "def run_and_exit(argv):\n    print('ran the compiled code')\n    raise SystemExit(0)\n"


def run_payload(payload: bytes, python: str = sys.executable) -> str:
    r = subprocess.run([python, "-I", "-c", bootstrap_code(len(payload))], input=payload, capture_output=True,
                       timeout=60, check=False)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode().strip()


def test_the_compiled_modules_run_where_the_magic_number_matches_and_the_sources_elsewhere():
    """A payload whose compiled part was made from other text shows which of the two ran."""
    magic, blob = compiled_code({"hello": OTHER})
    assert magic == importlib.util.MAGIC_NUMBER.hex()
    assert run_payload(make_payload({"hello": SOURCE}, "hello", code=(magic, blob))) == "ran the compiled code"
    assert run_payload(make_payload({"hello": SOURCE}, "hello", code=("00000000", blob))) == "ran the source"
    assert run_payload(make_payload({"hello": SOURCE}, "hello", code=(magic, blob[:40]))) == "ran the source"
    assert run_payload(make_payload({"hello": SOURCE}, "hello")) == "ran the source"


@pytest.mark.skipif(find_python("3.8") is None, reason="no Python 3.8 interpreter on this machine")
def test_a_python_of_another_version_compiles_the_sources():
    payload = make_payload({"hello": SOURCE}, "hello", code=compiled_code({"hello": OTHER}))
    assert run_payload(payload, find_python("3.8")) == "ran the source"


def test_tracebacks_of_compiled_modules_name_the_module_as_the_sources_do():
    failing = "def run_and_exit(argv):\n    raise RuntimeError('where am I')\n"
    sources = {"tools": "", "tools.fail": failing}
    for code in (None, compiled_code(sources)):
        payload = make_payload({**sources, "entry": "from .tools.fail import run_and_exit\n"}, "entry", code=code)
        r = subprocess.run([sys.executable, "-I", "-c", bootstrap_code(len(payload))], input=payload,
                           capture_output=True, timeout=60, check=False)
        assert 'File "<spectui-agent>/tools/fail.py", line 2, in run_and_exit' in r.stderr.decode(), code is None


def test_an_agent_on_this_machine_gets_compiled_modules_and_one_over_ssh_the_sources(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTUI_CACHE_DIR", str(tmp_path / "cache"))
    agent_bundle.build_bundle.cache_clear()
    try:
        local, ssh = HostTarget(kind="local").bundle(), HostTarget(kind="ssh", destination="gpu-host").bundle()
    finally:
        agent_bundle.build_bundle.cache_clear()
    assert local.hash == ssh.hash  # the same agent: the handshake checks the sources' hash
    assert importlib.util.MAGIC_NUMBER.hex().encode() in local.payload
    assert b"CODE = ()" in ssh.payload and b"CODE = ()" not in local.payload


def test_the_compiled_modules_are_made_once_and_a_cache_others_may_write_is_not_run(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTUI_CACHE_DIR", str(tmp_path / "cache"))
    made = []
    real = agent_bundle.compiled_code
    monkeypatch.setattr(agent_bundle, "compiled_code", lambda s: made.append(1) or real(s))
    sources = agent_bundle.bundle_sources()
    digest = agent_bundle.bundle_hash(sources)
    first = agent_bundle.compiled_modules(sources, digest)
    assert agent_bundle.compiled_modules(sources, digest) == first and len(made) == 1
    [cached] = (tmp_path / "cache" / "agent").iterdir()
    assert cached.stat().st_mode & 0o777 == 0o600
    os.chmod(cached, 0o664)  # another member of the group could have put code there
    assert agent_bundle.compiled_modules(sources, digest) == first and len(made) == 2
    assert cached.stat().st_mode & 0o777 == 0o600  # made again, private


def test_the_agent_ships_no_compiled_code_to_the_processes_it_starts():
    """The agent's own helpers (a detached benchmark runner, probe ranks) get the sources it holds."""
    assert b"CODE = ()" in make_payload(bootstrap.own_sources(), "main")
