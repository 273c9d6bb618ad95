"""The agent answers its hello, and the console's first calls, without loading the modules of the methods it has
not been asked for yet (benchmarks, the source browser, the probe, demo traffic): each loads with the first call
of one of its methods, and then answers as always.

The agent runs from its bundle, as a host runs it, with a probe entry that drives ``main`` over in-memory pipes and
reports which of the agent's modules were loaded at each point.
"""

from __future__ import annotations

import json

from tests.support.bundle import run_in_bundle

# the modules whose methods load on their first call, by the prefix of their methods' names
LAZY = {"bench.methods": "bench.", "source.methods": "source.", "probe.methods": "probe.",
        "bench.traffic": "traffic."}

PROBE = """
import io, json, sys, time
from . import main as agent_main

PKG = __package__


def loaded():
    return sorted(m[len(PKG) + 1:] for m in sys.modules if m.startswith(PKG + "."))


class Out(io.RawIOBase):
    def __init__(self):
        self.lines = []
        self.at_hello = None

    def writable(self):
        return True

    def write(self, data):
        for line in bytes(data).splitlines():
            msg = json.loads(line)
            if msg.get("type") == "hello" and self.at_hello is None:
                self.at_hello = loaded()
            self.lines.append(msg)
        return len(data)


def run_and_exit(argv):
    state, requests = argv[0], json.loads(argv[1])
    out = Out()
    stdin = io.BytesIO(b"".join(json.dumps(r).encode() + b"\\n" for r in requests))
    agent_main.main(["--state", state, "--sim", "--log-level", "error"], stdin=stdin, stdout=out)
    replies = {}
    deadline = time.time() + 60
    while len(replies) < len(requests) and time.time() < deadline:
        replies = dict((m["id"], m) for m in list(out.lines) if m.get("id") is not None)
        time.sleep(0.05)
    json.dump({"at_hello": out.at_hello, "at_end": loaded(), "replies": replies}, sys.stdout)
    sys.stdout.flush()
"""


def run_agent(tmp_path, requests):
    done = run_in_bundle(PROBE, [str(tmp_path / "state"), json.dumps(requests)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return json.loads(done.stdout)


def test_hello_and_the_first_calls_load_no_method_module_not_asked_for(tmp_path):
    got = run_agent(tmp_path, [{"id": 1, "method": "servers.list"}, {"id": 2, "method": "gpu.sample"}])
    assert got["at_hello"] is not None and "main" in got["at_hello"]
    for module in LAZY:
        assert module not in got["at_hello"], got["at_hello"]
        assert module not in got["at_end"], got["at_end"]
    assert "servers" in got["replies"]["1"]["result"]


def test_a_method_loads_its_module_on_its_first_call(tmp_path):
    got = run_agent(tmp_path, [{"id": 1, "method": "bench.list"}, {"id": 2, "method": "traffic.status"},
                               {"id": 3, "method": "source.tree"}, {"id": 4, "method": "probe.cancel"},
                               {"id": 5, "method": "bench.nothing"}])
    for module in LAZY:
        assert module in got["at_end"], got["at_end"]
    replies = got["replies"]
    assert "result" in replies["1"] and "result" in replies["2"], replies
    assert replies["3"]["error"]["code"] == "not_open"  # the source browser's own answer: no tree open yet
    assert "result" in replies["4"] or replies["4"]["error"]["code"] != "unknown_method", replies["4"]
    assert replies["5"]["error"]["code"] == "unknown_method"


def test_each_method_is_found_by_the_prefix_of_its_module(tmp_path):
    """A method loaded later is named by its module's prefix, and no method loaded with the agent has one."""
    import io

    from spectui.agent import main as agent_main, protocol

    agent = agent_main.Agent(agent_main.parse_args(["--state", str(tmp_path)]), protocol.Channel(io.BytesIO()))
    try:
        first = set(agent.methods)
        assert dict(agent_main.LATER_TABLES) == {prefix: module for module, prefix in LAZY.items()}
        assert not [m for m in first if m.startswith(tuple(LAZY.values()))]
        for module, prefix in LAZY.items():
            table = agent_main.method_table(module)(agent)
            assert table and all(name.startswith(prefix) for name in table), (module, sorted(table))
    finally:
        agent.close()
