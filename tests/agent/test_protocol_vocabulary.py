"""One wire vocabulary: server states, method and event names and the protocol version are
spelled once, in ``spectui/agent/protocol.py``, and every other module names them from there."""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest

from spectui.agent import main as agent_main, protocol
from spectui.agent.protocol import FINAL_STATES, LIVE_STATES, SERVER_STATES, Event, Method, ServerState
from spectui.core.servers import RecordError, ServerRecord

PACKAGE = Path(agent_main.__file__).resolve().parents[1]
PROTOCOL = Path(protocol.__file__).resolve()
STATES = frozenset(SERVER_STATES)


def _reads_state_field(node: ast.AST) -> bool:
    """``x["state"]`` or ``x.get("state")``: a record's state."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "state"
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "state")


def _state_group(node: ast.AST) -> list[ast.Constant]:
    """The literals of a tuple, list or set made of two or more server states and nothing else."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        words = [e for e in node.elts if isinstance(e, ast.Constant) and e.value in STATES]
        if len(words) == len(node.elts) >= 1:
            return words
    return []


def _state_literals(node: ast.AST) -> list[ast.Constant]:
    """The server-state names ``node`` spells as literals: a tuple, list or set of them (two or more, all
    states), a dict keyed by them, or one compared with a record's ``state`` or given as its default."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2:
        return _state_group(node)
    if isinstance(node, ast.Dict):
        keys = [k for k in node.keys if isinstance(k, ast.Constant) and k.value in STATES]
        return keys if len(keys) == len(node.keys) >= 2 else []
    if isinstance(node, ast.Compare) and any(_reads_state_field(n) for n in [node.left, *node.comparators]):
        sides = [node.left, *node.comparators]
        return [n for n in sides if isinstance(n, ast.Constant) and n.value in STATES] + \
            [c for n in sides for c in _state_group(n)]
    if isinstance(node, ast.Call) and _reads_state_field(node) and len(node.args) == 2 \
            and isinstance(node.args[1], ast.Constant) and node.args[1].value in STATES:
        return [node.args[1]]
    return []


def state_literal_sites(root: Path) -> list[str]:
    sites = set()
    for path in sorted(root.rglob("*.py")):
        if path.resolve() == PROTOCOL or "sim" in path.relative_to(root).parts:
            continue  # the vocabulary itself; the simulator shares no code with the client
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            for c in _state_literals(node):
                sites.add((str(path.relative_to(root.parent)), c.lineno, c.col_offset, c.value))
    return [f"{p}:{line}: {word!r}" for p, line, _, word in sorted(sites)]


def test_the_scan_finds_a_spelled_out_state():
    code = ('if rec.get("state") == "ready": pass\n'
            'ENDED = ("stopped", "failed", "crashed")\n'
            'state = rec.get("state", "stopped")\n'
            'ICONS = {"ready": 1, "failed": 2}\n'
            'if s["state"] not in ("stopped",): pass\n'
            'if job.get("state") in ("done", "interrupted"): pass\n')  # another vocabulary: not a server state
    found = [c.value for c in {id(c): c for node in ast.walk(ast.parse(code)) for c in _state_literals(node)}.values()]
    assert sorted(found) == sorted(["ready", "stopped", "failed", "crashed", "stopped", "ready", "failed", "stopped"])


def test_no_server_state_is_spelled_outside_the_protocol():
    sites = state_literal_sites(PACKAGE)
    assert not sites, "server states spelled as literals (name them from spectui.agent.protocol):\n" + "\n".join(sites)


METHODS = frozenset(v for k, v in vars(Method).items() if k.isupper())
EVENTS = frozenset(v for k, v in vars(Event).items() if k.isupper())
# modules that still spell agent method names out: each leaves this set once it names them by Method
# (the console, spectui/ui, is scanned once it does: see UI_NAMES_METHODS)
METHOD_NAMES_NOT_YET: frozenset = frozenset()
UI_NAMES_METHODS = True
# modules that still spell a benchmark run's final states out: each leaves once it names protocol.BENCH_FINAL_STATES
BENCH_FINAL_NOT_YET = frozenset({"spectui/ui/controllers/bench.py"})


def _wire_name_literals(node: ast.AST) -> list[ast.Constant]:
    """Agent method names spelled as literals where a request is made (any call's arguments, a
    ``method=`` keyword), and event names given to a ``..._EVENT`` constant."""
    if isinstance(node, ast.Call):
        args = [*node.args, *(k.value for k in node.keywords if k.arg in ("method", "name"))]
        return [a for a in args if isinstance(a, ast.Constant) and a.value in METHODS]
    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value in EVENTS \
            and any(isinstance(t, ast.Name) and t.id.endswith("_EVENT") for t in node.targets):
        return [node.value]
    return []


def method_literal_sites(root: Path) -> list[str]:
    sites = set()
    for path in sorted(root.rglob("*.py")):
        where = str(path.relative_to(root.parent))
        parts = path.relative_to(root).parts
        if path.resolve() == PROTOCOL or "sim" in parts or where in METHOD_NAMES_NOT_YET \
                or (parts[0] == "ui" and not UI_NAMES_METHODS):
            continue  # the vocabulary itself; the simulator shares no code with the client
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for c in _wire_name_literals(node):
                sites.add((where, c.lineno, c.col_offset, c.value))
    return [f"{p}:{line}: {word!r}" for p, line, _, word in sorted(sites)]


def test_the_scan_finds_a_spelled_out_method():
    code = ('await session.client.call("bench.start", params, timeout=180)\n'
            'reply = self._call("source.tree", {"path": p})\n'
            'client.request(method="servers.list")\n'
            'GREP_EVENT = "source.grep"\n'
            'WORKER_MODULES = ("source", "source.grep")\n'  # a module path, not a request
            'Binding("t", "focus_tree", "Tree", id="source.tree")\n')  # a key binding's id
    found = sorted(c.value for node in ast.walk(ast.parse(code)) for c in _wire_name_literals(node))
    assert found == ["bench.start", "servers.list", "source.grep", "source.tree"]


def test_no_agent_method_is_spelled_outside_the_protocol():
    sites = method_literal_sites(PACKAGE)
    assert not sites, "agent method or event names spelled as literals (name them by Method / Event from " \
        "spectui.agent.protocol):\n" + "\n".join(sites)


def test_the_modules_not_yet_named_by_method_still_exist():
    assert all((PACKAGE.parent / p).is_file() for p in METHOD_NAMES_NOT_YET | BENCH_FINAL_NOT_YET)


def bench_final_sites(root: Path) -> list[str]:
    """Tuples, lists or sets spelling out the final states of a benchmark run."""
    final = set(protocol.BENCH_FINAL_STATES)
    sites = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        where = str(path.relative_to(root.parent))
        if path.resolve() == PROTOCOL or "sim" in parts or where in BENCH_FINAL_NOT_YET \
                or (parts[0] == "ui" and not UI_NAMES_METHODS):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) == len(final) and \
                    {e.value for e in node.elts if isinstance(e, ast.Constant)} == final:
                sites.append(f"{where}:{node.lineno}")
    return sites


def test_the_final_states_of_a_benchmark_run_are_spelled_once():
    sites = bench_final_sites(PACKAGE)
    assert not sites, "a benchmark run's final states spelled out (use protocol.BENCH_FINAL_STATES):\n" + \
        "\n".join(sites)


def test_the_state_sets_split_the_states():
    assert set(LIVE_STATES) | set(FINAL_STATES) == STATES and not set(LIVE_STATES) & set(FINAL_STATES)
    assert ServerState.READY in LIVE_STATES and ServerState.CRASHED in FINAL_STATES


def test_one_protocol_version():
    spelled = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PROTOCOL_VERSION"
                                                    for t in node.targets):
                spelled.append(str(path.relative_to(PACKAGE.parent)))
    assert spelled == ["spectui/agent/protocol.py"]
    from spectui.core import rpc

    assert rpc.PROTOCOL_VERSION is protocol.PROTOCOL_VERSION


def test_every_registered_method_is_in_the_vocabulary(tmp_path):
    agent = agent_main.Agent(agent_main.parse_args(["--state", str(tmp_path)]), protocol.Channel(io.BytesIO()))
    try:
        names = {v for k, v in vars(Method).items() if k.isupper()}
        assert set(agent.load_all_methods()) == names
    finally:
        agent.close()


GOOD = {"name": "kimi-eagle3", "state": "ready", "pid": 4242, "port": 30000, "origin": "spectui"}


def test_a_record_from_the_wire():
    rec = ServerRecord.from_wire(GOOD)
    assert (rec.name, rec.state, rec.pid, rec.port, rec.origin, rec.ended) == ("kimi-eagle3", "ready", 4242,
                                                                                30000, "spectui", False)
    assert ServerRecord.from_wire({**GOOD, "origin": None}).origin == "spectui"  # an older agent's record
    with pytest.raises(TypeError):
        rec.wire["state"] = "stopped"  # read-only


def test_a_record_reads_as_the_read_only_mapping_it_came_from():
    """Readers written against the wire dict keep working on the checked record."""
    wire = {**GOOD, "reason": None, "extra": [1]}
    rec = ServerRecord.from_wire(wire)
    assert rec["state"] == "ready" and rec.get("extra") == [1] and rec.get("missing", 7) == 7
    assert "pid" in rec and "missing" not in rec and list(rec) == list(wire) and len(rec) == len(wire)
    assert dict(rec) == wire and rec == wire and rec == ServerRecord.from_wire(dict(wire))
    assert {**rec, "state": "stopped"}["state"] == "stopped" and rec.state == "ready"
    with pytest.raises(KeyError):
        rec["missing"]
    with pytest.raises(TypeError):
        rec["state"] = "stopped"  # type: ignore[index]
    wire["state"] = "failed"  # the record keeps its own copy
    assert rec["state"] == "ready"
    assert ServerRecord.from_wire(rec) == rec  # a checked record passes the check again


@pytest.mark.parametrize("record,says", [
    ([1, 2], "not an object"),
    ({**GOOD, "name": ""}, "without a name"),
    ({k: v for k, v in GOOD.items() if k != "state"}, "has state None"),
    ({**GOOD, "state": "runing"}, "has state 'runing', not one of starting"),
    ({**GOOD, "pid": "4242"}, "has pid '4242', not a whole number"),
    ({**GOOD, "port": True}, "has port True, not a whole number"),
    ({**GOOD, "origin": "elsewhere"}, "has origin 'elsewhere'"),
])
def test_a_malformed_record_is_refused_in_one_sentence(record, says):
    with pytest.raises(RecordError) as info:
        ServerRecord.from_wire(record)
    text = str(info.value)
    assert says in text and "\n" not in text and text.endswith(".") and text.count(". ") == 0


@pytest.mark.parametrize("method", [Method.GPU_SUBSCRIBE, Method.SERVER_TELEMETRY_SUBSCRIBE])
@pytest.mark.parametrize("interval", [0.05, "fast", None, float("nan")])
def test_a_telemetry_interval_is_checked_where_it_enters(tmp_path, method, interval):
    agent = agent_main.Agent(agent_main.parse_args(["--state", str(tmp_path), "--gpu-source", "none"]),
                             protocol.Channel(io.BytesIO()))
    try:
        with pytest.raises(protocol.AgentError) as info:
            agent.methods[method]({"interval_s": interval})
        assert info.value.code == "bad_params" and "at least 0.1" in info.value.message
        assert "\n" not in info.value.message
    finally:
        agent.close()
