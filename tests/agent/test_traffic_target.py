"""The demo traffic goes to the server the console watches, and only to a server spectui started or one
the operator chose: another user's server, found running and ready later, gets no request."""

from __future__ import annotations

import threading
import time

import pytest

from spectui.agent.bench.traffic import Traffic
from spectui.agent.servers.telemetry import TelemetryStream
from spectui.core.bench.runs import pause_demo_traffic
from tests.agent.test_traffic_target_stub import stub_server
from tests.sim.simproc import start_ready, wait_for

SERVER = ["--model-path", "Qwen/Qwen3-8B", "--sim-hardware", "nvlink-8gpu", "--sim-load-time", "0.3", "--enable-metrics"]


class Stub(object):
    """Another user's server: answers ``/server_info`` and ``/metrics``, counts ``POST /generate`` and never
    finishes one."""

    def __init__(self):
        self.posts = 0
        self.gets = []
        self.release = threading.Event()
        self.httpd = stub_server(self._note, self.release)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def _note(self, method, path):
        if method == "POST":
            self.posts += 1
        else:
            self.gets.append(path)

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


class FakeServers(object):
    """The agent's server records: what ``serving()`` and ``list()`` answer."""

    def __init__(self):
        self.records = {}

    def add(self, name, port, origin=None, ready_at=None, state="ready", pid=1000):
        self.records[name] = {"name": name, "state": state, "host": "127.0.0.1", "port": port, "pid": pid,
                              "origin": origin, "ready_at": ready_at or time.time()}

    def serving(self):
        return {n: dict(r) for n, r in self.records.items()}

    def list(self, params):
        return {"servers": [dict(r, origin=r["origin"] or "spectui") for r in self.records.values()]}


class FakeAgent(object):
    channel = None

    def __init__(self):
        self.servers = FakeServers()


@pytest.fixture(scope="module")
def sims(tmp_path_factory):
    d = tmp_path_factory.mktemp("traffic-target")
    a = start_ready(SERVER, d, "kimi-eagle3")
    try:
        b = start_ready(SERVER, d, "kimi-base")
    except BaseException:
        a.kill_group()
        raise
    yield a, b
    a.kill_group()
    b.kill_group()


@pytest.fixture
def stub():
    s = Stub()
    yield s
    s.close()


@pytest.fixture
def agent(sims, stub):
    a, _ = sims
    agent = FakeAgent()
    agent.servers.add("kimi-eagle3", a.port, ready_at=time.time() - 60)
    # found running, ready after the watched one, another user's
    agent.servers.add("sglang-30777", stub.port, origin="external", ready_at=time.time(), pid=4242)
    return agent


@pytest.fixture
def traffic(agent):
    t = Traffic(agent)
    yield t
    t.stop({})


def idle(sp):
    stats = sp.get_json("/sim/stats")
    return stats["in_flight"] == 0


def finished_rids(sp):
    return {r["rid"] for r in sp.get_json("/sim/stats")["recent"]}


def test_traffic_goes_to_the_watched_server_never_to_a_newer_foreign_one(traffic, sims, stub):
    a, _ = sims
    before = finished_rids(a)
    st = traffic.start({"concurrency": 2, "max_new_tokens": 16, "server": "kimi-eagle3"})
    assert st["target"] == "kimi-eagle3"
    assert wait_for(lambda: traffic.status({})["requests"] >= 6, timeout=30)
    assert len(finished_rids(a) - before) >= 6
    st = traffic.status({})
    assert st["sending"] is True and st["why"] is None and st["server"] == "kimi-eagle3", st
    assert stub.posts == 0


def test_without_a_named_server_only_spectuis_own_servers_get_traffic(traffic, sims, stub):
    a, _ = sims
    before = finished_rids(a)
    traffic.start({"concurrency": 2, "max_new_tokens": 16})
    assert wait_for(lambda: traffic.status({})["requests"] >= 4, timeout=30)
    assert len(finished_rids(a) - before) >= 4
    assert stub.posts == 0


def test_a_foreign_server_named_without_the_operators_choice_gets_nothing(traffic, stub):
    st = traffic.start({"concurrency": 1, "max_new_tokens": 16, "server": "sglang-30777"})
    assert wait_for(lambda: traffic.status({})["why"] is not None, timeout=10)
    time.sleep(1.5)  # several of the workers' looks at the target
    st = traffic.status({})
    assert st["running"] is True and st["sending"] is False
    assert "sglang-30777" in st["why"] and "not started by spectui" in st["why"], st
    assert stub.posts == 0


def test_a_foreign_server_the_operator_chose_gets_traffic(traffic, stub):
    traffic.start({"concurrency": 1, "max_new_tokens": 16, "server": "sglang-30777", "explicit": True})
    assert wait_for(lambda: stub.posts >= 1, timeout=10)
    assert traffic.status({})["sending"] is True


def test_the_traffic_follows_a_switch(traffic, agent, sims, stub):
    a, b = sims
    traffic.start({"concurrency": 2, "max_new_tokens": 16, "server": "kimi-eagle3"})
    assert wait_for(lambda: traffic.status({})["requests"] >= 4, timeout=30)
    # the switch: the watched server stops, the other one is ready; the console names it
    del agent.servers.records["kimi-eagle3"]
    agent.servers.add("kimi-base", b.port)
    st = traffic.start({"concurrency": 2, "max_new_tokens": 16, "server": "kimi-base"})
    assert st["target"] == "kimi-base"
    assert wait_for(lambda: idle(a), timeout=10)  # the requests cut at the switch have ended there
    before_a, before_b = finished_rids(a), finished_rids(b)
    assert wait_for(lambda: len(finished_rids(b) - before_b) >= 4, timeout=30)
    assert finished_rids(a) - before_a == set()
    assert stub.posts == 0
    assert traffic.status({})["server"] == "kimi-base"


def test_the_watched_server_stopped_sends_nothing_and_says_why(traffic, agent, sims, stub):
    a, _ = sims
    traffic.start({"concurrency": 2, "max_new_tokens": 16, "server": "kimi-eagle3"})
    assert wait_for(lambda: traffic.status({})["requests"] >= 2, timeout=30)
    agent.servers.records["kimi-eagle3"]["state"] = "stopping"
    assert wait_for(lambda: traffic.status({})["sending"] is False, timeout=10)
    del agent.servers.records["kimi-eagle3"]
    assert wait_for(lambda: traffic.status({})["why"] == "paused: kimi-eagle3 stopped", timeout=10), \
        traffic.status({})
    assert wait_for(lambda: traffic.status({})["in_flight"] == 0 and idle(a), timeout=10)
    before = finished_rids(a)
    time.sleep(1.5)
    assert finished_rids(a) == before  # nothing more reached it (its process still answers)
    st = traffic.status({})
    assert st["running"] is True and st["target"] == "kimi-eagle3" and st["sending"] is False
    assert stub.posts == 0


# -- server telemetry reads the watched servers only --------------------------------------------------------------


class FakeChannel(object):
    def __init__(self):
        self.frames = []

    def event(self, name, data):
        self.frames.append(data)
        return True


def frames_of(agent, name):
    return [f for f in list(agent.channel.frames) if f.get("name") == name]


def test_telemetry_reads_spectuis_servers_and_the_ones_the_console_names(agent, stub):
    agent.channel = FakeChannel()
    stream = TelemetryStream(agent, interval_s=0.2)
    stream.start()
    try:
        assert wait_for(lambda: len(frames_of(agent, "kimi-eagle3")) >= 5, timeout=20)
        assert "/metrics" not in stub.gets and frames_of(agent, "sglang-30777") == []
        stream.watch(["sglang-30777"])  # the operator looks at it on the console
        assert wait_for(lambda: "/metrics" in stub.gets and frames_of(agent, "sglang-30777"), timeout=20)
        stream.watch([])  # and looks away
        time.sleep(0.5)
        seen = stub.gets.count("/metrics")
        time.sleep(1.0)
        assert stub.gets.count("/metrics") == seen
    finally:
        stream.stop()


def test_frames_say_which_running_requests_are_not_spectuis(agent, sims, traffic):
    a, _ = sims
    agent.channel = FakeChannel()
    agent.traffic = traffic
    traffic.start({"concurrency": 2, "max_new_tokens": 64, "server": "kimi-eagle3"})
    stream = TelemetryStream(agent, interval_s=0.2)
    stream.start()
    stop = threading.Event()

    def foreign():  # another user's client, straight to the server
        while not stop.is_set():
            a.post("/generate", {"text": "someone else's question", "sampling_params": {"max_new_tokens": 64}})

    try:
        assert wait_for(lambda: any(f.get("running_req") == 2 for f in frames_of(agent, "kimi-eagle3")), timeout=20)
        quiet = [f for f in frames_of(agent, "kimi-eagle3") if f.get("running_req") is not None]
        assert all(f["spectui_in_flight"] >= 1 for f in quiet[-3:]), quiet[-3:]
        assert max(f["foreign_reqs"] for f in quiet) == 0, [(f["running_req"], f["spectui_in_flight"]) for f in quiet]
        t = threading.Thread(target=foreign, daemon=True)
        t.start()
        assert wait_for(lambda: any(f.get("foreign_reqs") == 1 for f in frames_of(agent, "kimi-eagle3")),
                        timeout=20)
    finally:
        stop.set()
        stream.stop()


# -- a benchmark gives the traffic back to the server it went to ------------------------------------------------


class DirectClient(object):
    """A session's client whose calls go straight to ``traffic`` (what the agent would answer)."""

    def __init__(self, traffic):
        self.methods = {"traffic.status": traffic.status, "traffic.stop": traffic.stop,
                        "traffic.start": traffic.start}

    async def call(self, method, params=None, timeout=None):
        return self.methods[method](params or {})


class DirectSession(object):
    def __init__(self, traffic):
        self.client = DirectClient(traffic)


async def test_a_benchmark_gives_the_traffic_back_to_the_server_it_went_to(traffic, stub):
    traffic.start({"concurrency": 2, "max_new_tokens": 16, "server": "sglang-30777", "explicit": True})
    restore = await pause_demo_traffic(DirectSession(traffic))
    assert traffic.status({})["running"] is False
    await restore()
    st = traffic.status({})
    assert st["running"] and st["concurrency"] == 2, st
    assert st["target"] == "sglang-30777" and st["explicit"] is True, st
