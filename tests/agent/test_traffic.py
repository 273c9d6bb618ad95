"""The demo traffic against a real simulated server: varied prompts, exact concurrency, a stop
that stops."""

import collections
import time

import pytest

from spectui.agent.protocol import AgentError
from spectui.agent.bench.traffic import MAX_CONCURRENCY, RECURRING_POOL, Traffic, Workload
from tests.sim.simproc import start_ready, wait_for

SERVER = ["--model-path", "Qwen/Qwen3-8B", "--sim-hardware", "nvlink-8gpu", "--sim-load-time", "0.3"]


class FakeServers(object):
    def __init__(self, port):
        self.port = port

    def serving(self):
        return {"qwen": {"name": "qwen", "state": "ready", "host": "127.0.0.1", "port": self.port, "ready_at": 1.0,
                         "origin": None}}


class FakeAgent(object):
    channel = None

    def __init__(self, port):
        self.servers = FakeServers(port)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    sp = start_ready(SERVER, tmp_path_factory.mktemp("traffic"), "qwen")
    yield sp
    sp.kill_group()


@pytest.fixture
def traffic(server):
    t = Traffic(FakeAgent(server.port))
    yield t
    t.stop({})


def in_flight(sp):
    stats = sp.get_json("/sim/stats")
    return stats["in_flight"]


def test_the_workload_varies_and_mostly_samples():
    work = Workload(seed=3)
    bodies = [work.request() for _ in range(2000)]
    prompts = [b["text"] for b in bodies]
    assert len(set(prompts)) > 1500  # thousands of distinct prompts, not a handful
    assert len({p.split("\n")[0][:25] for p in prompts}) > 50
    lengths = sorted(len(p) for p in prompts)
    assert lengths[100] * 4 < lengths[-100]  # short questions and long contexts
    temps = [b["sampling_params"]["temperature"] for b in bodies]
    greedy = sum(1 for t in temps if t == 0) / len(temps)
    assert 0.1 < greedy < 0.3
    assert all(t == 0 or 0.6 <= t <= 0.8 for t in temps)
    assert all(b["stream"] for b in bodies)
    assert not any("sampling_seed" in b["sampling_params"] for b in bodies)  # real traffic brings no seed ...
    seeded = [Workload(seed=3, seeded=True).sampling() for _ in range(50)]
    assert all("sampling_seed" in p for p in seeded if p["temperature"] > 0)  # ... unless a run must repeat
    again = Workload(seed=3)
    assert [again.request()["text"] for _ in range(20)] == prompts[:20]  # seeded
    assert Workload(seed=4).request()["text"] != prompts[0] or Workload(seed=5).request()["text"] != prompts[0]


def test_bad_concurrency_is_refused(traffic):
    for bad in (0, MAX_CONCURRENCY + 1, "many"):
        with pytest.raises(AgentError):
            traffic.start({"concurrency": bad})
    assert traffic.status({})["running"] is False


@pytest.mark.parametrize("n", [1, 4, 16])
def test_concurrency_is_exact(traffic, server, n):
    st = traffic.start({"concurrency": n, "max_new_tokens": 160})
    assert st["running"] and st["concurrency"] == n
    assert wait_for(lambda: in_flight(server) == n, timeout=10)
    samples = []
    for _ in range(100):
        samples.append(in_flight(server))
        time.sleep(0.03)
    counts = collections.Counter(samples)
    assert max(samples) <= n, counts  # never more than asked for ...
    # ... and back to back: that many nearly all the time. A successor follows its request within
    # a new connection's set-up (about 10-20 ms on this 2-core box, against requests of about
    # 0.4 s), so a sample now and then lands in that gap; a worker that waited or idled would
    # leave far more than 15% of the samples short.
    assert counts.most_common(1)[0][0] == n and sum(samples) >= 0.85 * n * len(samples), counts
    st = traffic.status({})
    assert st["requests"] > 0 and st["errors"] == 0 and st["tokens"] > 0, st
    assert st["server"] == "qwen" and st["in_flight"] <= n


def test_prompts_vary_at_the_server(traffic, server):
    assert wait_for(lambda: in_flight(server) == 0, timeout=10)
    seen_before = {r["rid"] for r in server.get_json("/sim/stats")["recent"]}
    traffic.start({"concurrency": 4, "max_new_tokens": 16})
    assert wait_for(lambda: traffic.status({})["requests"] >= 24, timeout=30)
    traffic.stop({})
    recent = [r for r in server.get_json("/sim/stats")["recent"] if r["rid"] not in seen_before]
    assert len(recent) >= 24
    hashes = [r["prompt_hash"] for r in recent]
    assert len(set(hashes)) >= 0.9 * len(hashes)
    assert len({r["prompt_tokens"] for r in recent}) > 8
    assert any(r["greedy"] for r in recent) or len(recent) < 30
    assert sum(1 for r in recent if not r["greedy"]) > len(recent) / 2


def test_stop_stops(traffic, server):
    traffic.start({"concurrency": 4, "max_new_tokens": 400})  # long requests: stop must not wait for them
    assert wait_for(lambda: in_flight(server) == 4, timeout=10)
    t0 = time.monotonic()
    st = traffic.stop({})
    assert time.monotonic() - t0 < 3.0
    assert st["running"] is False and st["concurrency"] == 0
    assert wait_for(lambda: in_flight(server) == 0, timeout=3)  # the server aborted the closed streams
    assert traffic.status({})["in_flight"] == 0
    done = server.get_json("/sim/stats")["counters"]["requests_finished"]
    requests = traffic.status({})["requests"]
    time.sleep(1.0)
    assert server.get_json("/sim/stats")["counters"]["requests_finished"] == done
    assert traffic.status({})["requests"] == requests and traffic.status({})["errors"] == 0


# -- the "shift" scenario: a recurring job, then varied chat ---------------------------------------------


def test_the_recurring_job_is_a_few_greedy_requests_the_same_on_every_worker():
    a, b = Workload(seed="1:1:0"), Workload(seed="1:1:1")
    a.recurring_job()
    b.recurring_job()
    bodies = [a.request() for _ in range(200)] + [b.request() for _ in range(200)]
    assert len({x["text"] for x in bodies}) == 6
    assert all(x["sampling_params"]["temperature"] == 0.0 and x["stream"] for x in bodies)
    a.recurring = None   # after the shift: the varied workload again
    assert len({a.request()["text"] for _ in range(50)}) > 40


def test_bad_scenarios_are_refused_in_one_sentence(traffic):
    with pytest.raises(AgentError, match="scenario must be one of steady, shift, not 'storm'"):
        traffic.start({"scenario": "storm"})
    with pytest.raises(AgentError, match="shift_after_s must be between 5 and 3600 seconds, not 1"):
        traffic.start({"scenario": "shift", "shift_after_s": 1})
    assert traffic.status({})["running"] is False


def test_the_shift_changes_what_reaches_the_server(traffic, server):
    assert wait_for(lambda: in_flight(server) == 0, timeout=10)  # an earlier test's requests have ended there
    seen_before = {r["rid"] for r in server.get_json("/sim/stats")["recent"]}
    st = traffic.start({"concurrency": 2, "max_new_tokens": 16, "scenario": "shift", "shift_after_s": 5})
    assert st["scenario"] == "shift" and st["phase"] == "recurring"
    assert wait_for(lambda: traffic.status({})["requests"] >= 12, timeout=30)
    assert wait_for(lambda: traffic.status({})["phase"] == "varied", timeout=10)
    requests = traffic.status({})["requests"]
    assert wait_for(lambda: traffic.status({})["requests"] >= requests + 12, timeout=30)
    traffic.stop({})
    recent = [r for r in server.get_json("/sim/stats")["recent"] if r["rid"] not in seen_before]
    # The server's own record, in the order requests finished, says where the shift fell: the
    # recurring job is the longest opening run of at most RECURRING_POOL distinct prompts. (Reading
    # the record when the phase turned would race the requests finishing meanwhile.)
    pool = set()
    cut = len(recent)
    for i, r in enumerate(recent):
        if r["prompt_hash"] not in pool and len(pool) == RECURRING_POOL:
            cut = i
            break
        pool.add(r["prompt_hash"])
    first = recent[:cut]
    after = recent[cut:][2:]   # the other worker's recurring request in flight at the shift aside
    assert len(first) >= 12 and all(r["greedy"] for r in first), [(r["prompt_hash"], r["greedy"]) for r in first]
    assert len(after) >= 8, len(after)
    assert len({r["prompt_hash"] for r in after}) >= 0.9 * len(after)
    assert sum(1 for r in after if not r["greedy"]) > len(after) / 2
