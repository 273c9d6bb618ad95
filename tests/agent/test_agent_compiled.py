"""An agent on this machine (the demo, ``local``) gets its modules' code from the compiled files Python keeps beside
spectui's sources (``__pycache__``) and runs it instead of compiling each module it imports; a compiled file that
does not match its source is not taken, a Python of another version compiles the sources, and so does the loader
when the compiled part of its payload is damaged."""

from __future__ import annotations

import base64
import importlib.util
import marshal
import os
import py_compile
import subprocess
import sys

import pytest

from spectui.agent import bootstrap
from spectui.agent.bootstrap import bootstrap_code, make_payload
from spectui.core import agent_bundle
from spectui.core.agent_bundle import compiled_modules
from spectui.core.session import HostTarget
from tests.support.pythons import find_python

SOURCE = "def run_and_exit(argv):\n    print('ran the source')\n    raise SystemExit(0)\n"
OTHER = "def run_and_exit(argv):\n    print('ran the compiled code')\n    raise SystemExit(0)\n"


def code_of(sources: dict[str, str]) -> tuple[str, str]:
    """What :func:`compiled_modules` gives, made here from ``sources``' text."""
    bodies = {n: marshal.dumps(compile(text, n, "exec")) for n, text in sources.items()}
    return importlib.util.MAGIC_NUMBER.hex(), base64.b64encode(marshal.dumps(bodies)).decode("ascii")


def run_payload(payload: bytes, python: str = sys.executable) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-I", "-c", bootstrap_code(len(payload))], input=payload, capture_output=True,
                          timeout=60, check=False)


def test_the_compiled_code_runs_where_the_magic_number_matches_and_the_sources_elsewhere():
    """A payload whose compiled part was made from other text shows which of the two ran."""
    magic, blob = code_of({"hello": OTHER})
    for code, ran in (((magic, blob), "ran the compiled code"), (("00000000", blob), "ran the source"),
                      ((magic, blob[:40]), "ran the source"), (None, "ran the source")):
        r = run_payload(make_payload({"hello": SOURCE}, "hello", code=code))
        assert (r.returncode, r.stdout.decode().strip()) == (0, ran), r.stderr.decode()


@pytest.mark.skipif(find_python("3.8") is None, reason="no Python 3.8 interpreter on this machine")
def test_a_python_of_another_version_compiles_the_sources():
    r = run_payload(make_payload({"hello": SOURCE}, "hello", code=code_of({"hello": OTHER})), find_python("3.8"))
    assert r.stdout.decode().strip() == "ran the source", r.stderr.decode()


def package(tmp_path, files: dict[str, str]) -> str:
    root = tmp_path / "agentpkg"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return str(root)


def test_the_code_comes_from_current_compiled_files_and_a_stale_one_is_made_again(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    root = package(tmp_path, {"tools/__init__.py": "", "tools/fail.py": "x = 1\n", "main.py": "y = 2\n"})
    sources = bootstrap.read_sources(root)
    assert set(sources) == {"tools", "tools.fail", "main"}
    magic, blob = compiled_modules(root, sources)
    bodies = marshal.loads(base64.b64decode(blob))
    assert magic == importlib.util.MAGIC_NUMBER.hex() and set(bodies) == set(sources)
    made = importlib.util.cache_from_source(os.path.join(root, "tools", "fail.py"))
    assert os.path.exists(made)  # made as Python makes them, where Python looks for them
    ns = {}
    exec(marshal.loads(bodies["tools.fail"]), ns)
    assert ns["x"] == 1
    (tmp_path / "agentpkg" / "tools" / "fail.py").write_text("x = 100\n")  # edited: the compiled file is stale
    _, blob = compiled_modules(root, bootstrap.read_sources(root))
    ns = {}
    exec(marshal.loads(marshal.loads(base64.b64decode(blob))["tools.fail"]), ns)
    assert ns["x"] == 100


def test_where_no_compiled_file_may_be_written_the_agent_compiles_the_sources(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    root = package(tmp_path, {"main.py": "y = 2\n"})
    assert compiled_modules(root, bootstrap.read_sources(root)) is None
    py_compile.compile(os.path.join(root, "main.py"), doraise=True)  # one Python made before is taken
    assert compiled_modules(root, bootstrap.read_sources(root)) is not None


def test_tracebacks_of_compiled_modules_name_the_module_as_the_sources_do(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    root = package(tmp_path, {"tools/__init__.py": "", "tools/fail.py": "def run_and_exit(argv):\n"
                                                                         "    raise RuntimeError('where am I')\n",
                              "entry.py": "from .tools.fail import run_and_exit\n"})
    sources = bootstrap.read_sources(root)
    for code in (None, compiled_modules(root, sources)):
        r = run_payload(make_payload(sources, "entry", code=code))
        assert 'File "<spectui-agent>/tools/fail.py", line 2, in run_and_exit' in r.stderr.decode(), code is None


def test_an_agent_on_this_machine_gets_compiled_code_and_one_over_ssh_the_sources(monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    agent_bundle.build_bundle.cache_clear()
    try:
        local, ssh = HostTarget(kind="local").bundle(), HostTarget(kind="ssh", destination="gpu-host").bundle()
    finally:
        agent_bundle.build_bundle.cache_clear()
    assert local.hash == ssh.hash  # the same agent: the handshake checks the sources' hash
    assert importlib.util.MAGIC_NUMBER.hex().encode() in local.payload
    assert b"CODE = ()" in ssh.payload and b"CODE = ()" not in local.payload


def test_the_agent_ships_no_compiled_code_to_the_processes_it_starts():
    """The agent's own helpers (a detached benchmark runner, probe ranks) get the sources it holds."""
    assert b"CODE = ()" in make_payload(bootstrap.own_sources(), "main")
