"""Finding SGLang's version without importing it, as real releases lay it out."""

import json
import subprocess
import sys

import pytest

from spectui.agent.bootstrap import own_sources

# The shape of sglang 0.5.23's files: version.py only falls back to 0.0.0.dev0;
# the real number is in the generated _version.py and in the dist-info.
VERSION_PY = '''try:
    from sglang._version import __version__, __version_tuple__
except ImportError:
    __version__ = "0.0.0.dev0"
'''
UNDERSCORE_VERSION_PY = '''from __future__ import annotations
version: str
__version__: str
__version__ = version = '0.5.23'
__version_tuple__ = version_tuple = (0, 5, 23)
'''


def probe(path):
    r = subprocess.run([sys.executable, "-c", own_sources()["source.locate"]], capture_output=True, text=True,
                       env={"PYTHONPATH": str(path), "PATH": "/usr/bin:/bin"}, check=True)
    return json.loads(r.stdout)


def make_tree(root, *, dist_info_version=None):
    pkg = root / "sglang"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('importing sglang would load torch')\n")
    (pkg / "version.py").write_text(VERSION_PY)
    (pkg / "_version.py").write_text(UNDERSCORE_VERSION_PY)
    if dist_info_version:
        d = root / f"sglang-{dist_info_version}.dist-info"
        d.mkdir()
        (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: sglang\nVersion: {dist_info_version}\n")
    return pkg


def test_version_from_dist_info(tmp_path):
    pkg = make_tree(tmp_path, dist_info_version="0.5.23")
    info = probe(tmp_path)
    assert info == {**info, "installed": True, "version": "0.5.23", "path": str(pkg)}


def test_version_from_generated_file_in_a_checkout(tmp_path):
    make_tree(tmp_path)
    assert probe(tmp_path)["version"] == "0.5.23"  # not version.py's 0.0.0.dev0 fallback


def test_not_installed(tmp_path):
    info = probe(tmp_path)
    assert info["installed"] is False and "not installed" in info["message"]


def test_a_checkout_top_folder_is_not_sglang(tmp_path):
    (tmp_path / "sglang" / "python").mkdir(parents=True)  # a git clone: no __init__.py at its top
    info = probe(tmp_path)
    assert info["installed"] is False and info["path"] is None


def test_the_agent_asks_another_interpreter_the_same_question(tmp_path, monkeypatch):
    """``locate`` (``python.sglang``, ``source.locate``) runs the same code as the host facts, from ``/``."""
    from spectui.agent.protocol import AgentError
    from spectui.agent.source.locate import locate

    pkg = make_tree(tmp_path / "site", dist_info_version="0.5.23")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    found = locate(sys.executable)
    assert (found["installed"], found["version"], found["path"], found["asked"]) == (True, "0.5.23", str(pkg),
                                                                                     sys.executable)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "nothing"))
    assert "SGLang is not installed for " + sys.executable in locate(sys.executable)["message"]
    with pytest.raises(AgentError) as info:
        locate(str(tmp_path / "no-python"))
    assert info.value.code == "no_python"
