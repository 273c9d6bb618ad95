"""A catastrophic regex never stalls the agent: the search runs in a child process with a deadline.

The agent is run as the bundle the SSH path ships (payload on stdin, JSON lines after it), and
driven line by line, so its own process, its search child and its signals can be watched.
"""

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from spectui.core.agent_bundle import build_bundle
from tests.support.procs import child_pids, pid_alive, wait_gone

CATASTROPHIC = "(a+)+$"   # nested repeats: 2**n backtracking steps on a line of n a's not ending the line
SLOW_LINE = "a" * 60 + "!\n"


class RawAgent:
    def __init__(self, state_dir):
        bundle = build_bundle()
        argv = bundle.bootstrap_argv(sys.executable, ["--state", str(state_dir), "--sim"])
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.proc.stdin.write(bundle.payload)
        self.proc.stdin.flush()
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.hello = self.next_message(10)
        assert self.hello["type"] == "hello"
        self.pid = self.proc.pid
        self._ids = iter(range(1, 10**6))

    def _read(self):
        for raw in iter(self.proc.stdout.readline, b""):
            self.lines.put(json.loads(raw))
        self.lines.put(None)

    def next_message(self, timeout):
        return self.lines.get(timeout=timeout)

    def send(self, method, params=None):
        req_id = next(self._ids)
        self.proc.stdin.write(json.dumps({"id": req_id, "method": method, "params": params or {}}).encode() + b"\n")
        self.proc.stdin.flush()
        return req_id

    def reply(self, req_id, timeout):
        """The reply to ``req_id`` (events and other replies are set aside)."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no reply to request {req_id} within {timeout} s")
            try:
                msg = self.next_message(left)
            except queue.Empty:
                continue
            if msg is None:
                raise EOFError("the agent closed its stdout")
            if msg.get("type") == "reply" and msg.get("id") == req_id:
                return msg
            self.set_aside.append(msg)

    set_aside: list = []

    def children(self):
        """Live child processes of the agent."""
        return child_pids(self.pid)

    def search_processes(self, settle=0.5):
        """The agent's children once a search has had ``settle`` seconds to get going."""
        time.sleep(settle)
        return self.children()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(5)


@pytest.fixture
def slow_tree(tmp_path):
    root = tmp_path / "src"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "fine.py").write_text("import torch\n")
    (root / "pkg" / "slow.py").write_text("x = 1\n" + SLOW_LINE)
    return root


@pytest.fixture
def agent(tmp_path, slow_tree):
    a = RawAgent(tmp_path / "state")
    a.set_aside = []
    opened = a.reply(a.send("source.open", {"sglang_root": str(slow_tree)}), 30)
    assert "result" in opened, opened
    yield a
    kids = a.children()
    a.kill()
    for pid in kids:  # never leave a search behind, whatever the test did
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_pings_are_answered_within_a_second_while_a_catastrophic_search_runs(agent):
    grep_id = agent.send("source.grep", {"pattern": CATASTROPHIC, "search_id": "s1", "deadline_s": 4})
    t_grep = time.monotonic()
    time.sleep(0.3)  # the search is deep in the regex by now
    delays = []
    while time.monotonic() - t_grep < 2.5:
        t0 = time.monotonic()
        r = agent.reply(agent.send("ping", {"echo": len(delays)}), 1.0)
        delays.append(time.monotonic() - t0)
        assert r["result"]["echo"] == len(delays) - 1
        time.sleep(0.1)
    assert len(delays) >= 5 and max(delays) < 1.0, delays
    reply = agent.reply(grep_id, 10)
    elapsed = time.monotonic() - t_grep
    assert reply["error"]["code"] == "grep_too_slow"
    msg = reply["error"]["message"]
    assert "'(a+)+$' took longer than 4 s on pkg/slow.py; simplify it" in msg, msg
    assert "\n" not in msg
    assert 3.5 < elapsed < 8, elapsed
    assert wait_gone_all(agent.children(), 3)


def test_a_search_that_ends_in_time_streams_its_hits_then_its_summary(agent):
    reply = agent.reply(agent.send("source.grep", {"pattern": "^import", "search_id": "s2"}), 30)
    events = [m for m in agent.set_aside if m.get("type") == "event" and m["event"] == "source.grep"]
    assert [h["path"] for e in events for h in e["data"]["hits"]] == ["pkg/fine.py"]
    assert events[0]["data"]["hits"][0]["line"] == 1 and events[0]["data"]["search_id"] == "s2"
    assert reply["result"]["hits"] == 1 and reply["result"]["files_scanned"] == 2
    assert reply["result"]["cancelled"] is False and reply["result"]["search_id"] == "s2"


def test_a_bad_pattern_is_refused_without_a_process(agent):
    reply = agent.reply(agent.send("source.grep", {"pattern": "(unclosed", "search_id": "s3"}), 10)
    assert reply["error"]["code"] == "bad_pattern"
    assert agent.children() == []


def test_a_deadline_out_of_range_is_one_sentence(agent):
    reply = agent.reply(agent.send("source.grep", {"pattern": "x", "deadline_s": 0}), 10)
    assert reply["error"]["message"] == "the search deadline must be between 0 and 600 s, not 0"


def test_cancel_kills_the_search_at_once(agent):
    grep_id = agent.send("source.grep", {"pattern": CATASTROPHIC, "search_id": "s4"})
    kids = agent.search_processes()
    t0 = time.monotonic()
    assert agent.reply(agent.send("source.cancel", {"search_id": "s4"}), 2)["result"] == {"cancelled": True}
    reply = agent.reply(grep_id, 3)
    assert time.monotonic() - t0 < 2
    assert reply["result"]["cancelled"] is True and reply["result"]["hits"] == 0
    assert wait_gone_all(kids, 3)


def wait_gone_all(pids, timeout):
    return all(wait_gone(pid, timeout) for pid in pids)


@pytest.mark.parametrize("how", ["stdin closes", "SIGTERM", "SIGHUP", "SIGKILL"])
def test_the_agent_and_its_search_end_with_the_connection(agent, how):
    agent.send("source.grep", {"pattern": CATASTROPHIC, "search_id": "s5"})
    kids = agent.search_processes()
    if how == "stdin closes":
        agent.proc.stdin.close()
    else:
        os.kill(agent.pid, getattr(signal, how))
    try:
        agent.proc.wait(3)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the agent was still running 3 s after {how}") from None
    assert wait_gone_all(kids, 3), f"the search process outlived the agent ({how})"
