"""The agent bundle ships every agent module, subpackages included, and runs them from memory."""

import json
from pathlib import Path

from spectui.agent import bootstrap
from spectui.core.agent_bundle import build_bundle, bundle_hash, bundle_sources
from tests.support.bundle import run_in_bundle

AGENT = Path(bootstrap.__file__).resolve().parent


def test_bundle_holds_every_agent_module_and_subpackage_module():
    expected = set()
    for path in AGENT.rglob("*.py"):
        rel = path.relative_to(AGENT).with_suffix("")
        parts = list(rel.parts)
        if parts == ["__init__"] or "__pycache__" in parts:
            continue
        if parts[-1] == "__init__":
            parts.pop()  # a subpackage: its __init__.py under the package's name
        expected.add(".".join(parts))
    sources = bundle_sources()
    assert "logs" in sources and "logs.parser" in sources and "logs.fastpath" in sources
    assert set(sources) == expected
    assert sources["logs.parser"] == (AGENT / "logs" / "parser.py").read_text()
    # The agent's own copy (what it ships to the processes it starts) is the same list.
    assert bootstrap.own_sources() == sources
    assert build_bundle().hash == bundle_hash(sources)


SUBPACKAGE_ENTRY = """
import json, sys
from . import logs
from .logs import parser
from .logs.parser import LogParser

def run_and_exit(argv):
    rec = LogParser().parse_line(argv[0])
    json.dump({
        "record": rec,
        "package_path": list(logs.__path__),
        "package": parser.__package__,
        "file": parser.parse_line.__code__.co_filename,
        "init_file": logs.line_time.__module__,
        "spectui_loaded": sorted(m for m in sys.modules if m == "spectui" or m.startswith("spectui.")),
    }, sys.stdout)
    sys.stdout.flush()
"""


def test_subpackage_modules_are_imported_from_the_payload(tmp_path):
    line = "[2026-11-30 10:00:00 TP0] Decode batch, #running-req: 1, #token: 290, token usage: 0.00, #queue-req: 0"
    done = run_in_bundle(SUBPACKAGE_ENTRY, [line], cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    got = json.loads(done.stdout)
    assert got["record"]["kind"] == "decode" and got["record"]["num_token"] == 290 and got["record"]["tp_rank"] == 0
    assert got["package_path"] == [] and got["package"] == "spectui_agent.logs"
    assert got["file"] == "<spectui-agent>/logs/parser.py"
    assert got["init_file"] == "spectui_agent.logs.prefix"
    assert got["spectui_loaded"] == []


def test_a_missing_subpackage_module_is_an_import_error_not_a_wrong_module(tmp_path):
    entry = "from .logs import nowhere\ndef run_and_exit(argv):\n    pass\n"
    done = run_in_bundle(entry, [], cwd=tmp_path)
    assert done.returncode != 0 and b"nowhere" in done.stderr
