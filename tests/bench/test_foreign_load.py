"""A benchmark that shares its server with requests spectui did not send says so: the runner sets the server's
own counters against what it sent itself. ``--require-idle`` refuses to start while such requests run."""

from __future__ import annotations

import http.client
import json
import threading
import time

import pytest

from spectui.core.bench import BenchClient, Preset, build_spec
from spectui.core.bench.runs import RunCollector, result_from
from spectui.core.errors import AgentCallError
from tests.sim.simproc import start_ready, wait_for

pytestmark = pytest.mark.timeout(240)

SERVER = ["--model-path", "Qwen/Qwen3-8B", "--sim-hardware", "nvlink-8gpu", "--sim-load-time", "0.3", "--enable-metrics"]
PRESET = Preset(name="foreign", dataset="random", input_len=64, output_len=64, num_prompts=16, concurrency=(2,),
                warmup=0, repeats=1, seed=5)


class Foreign(object):
    """Another user's client: ``streams`` streaming ``/generate`` requests at a time, straight to the server;
    keeps the time each token arrived."""

    def __init__(self, port, streams=1, max_new_tokens=24):
        self.port = port
        self.body = json.dumps({"text": "someone else's question about the weather", "stream": True,
                                "sampling_params": {"max_new_tokens": max_new_tokens, "temperature": 0.0,
                                                    "ignore_eos": True}}).encode()
        self.arrivals = []  # (time.time(), tokens)
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._loop, daemon=True) for _ in range(streams)]

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(30)

    def _loop(self):
        while not self.stop.is_set():
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            try:
                conn.request("POST", "/generate", self.body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                have = 0
                for raw in resp:
                    line = raw.decode().strip()
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    n = int((json.loads(line[6:]).get("meta_info") or {}).get("completion_tokens") or have)
                    if n > have:
                        self.arrivals.append((time.time(), n - have))
                        have = n
            except OSError:
                time.sleep(0.1)
            finally:
                conn.close()

    def tokens_between(self, t0, t1):
        return sum(n for t, n in list(self.arrivals) if t0 <= t <= t1)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    sp = start_ready(SERVER, tmp_path_factory.mktemp("foreign"), "shared")
    yield sp
    sp.kill_group()


def idle(sp):
    stats = sp.get_json("/sim/stats")
    return stats["in_flight"] == 0


async def run_once(demo, server, **params):
    client = BenchClient(demo)
    spec = build_spec(PRESET, 2, warmup=False)
    started = await demo.client.call("bench.start", dict({"spec": spec, "port": server.port, "watch": False},
                                                          **params), timeout=180)
    col = await RunCollector(started["run_id"]).wait(demo, poll_s=0.3)
    assert col.status["state"] == "done", col.status
    await client.status(started["run_id"])
    return col, result_from(col, host="test")


async def test_a_run_sharing_its_server_reports_the_foreign_share(demo, server):
    assert wait_for(lambda: idle(server), timeout=10)
    with Foreign(server.port, streams=2) as foreign:
        assert wait_for(lambda: len(foreign.arrivals) > 10, timeout=20)
        col, result = await run_once(demo, server)
    s = col.summary
    t0, t1 = s["measure_started_at"], s["measure_ended_at"]
    theirs = foreign.tokens_between(t0, t1)
    ours = result.stats["output_tokens"]
    expected = theirs / (theirs + ours)
    load = s["foreign_load"]
    assert load["known"] and load["marked"], load
    assert abs(load["share"] - expected) <= 0.10, (load, expected)
    assert load["foreign_requests"] >= 1 and load["own_requests"] == PRESET.num_prompts
    assert load["in_flight"]["max"] >= 1
    # the result the console and history keep carries it
    assert result.foreign_load == load and result.foreign


async def test_a_quiet_run_reports_no_foreign_load(demo, server):
    assert wait_for(lambda: idle(server), timeout=10)
    col, result = await run_once(demo, server)
    load = col.summary["foreign_load"]
    assert load["known"] and load["share"] < 0.02 and not load["marked"], load
    assert load["foreign_requests"] == 0
    assert not result.foreign


async def test_require_idle_refuses_while_foreign_requests_run_and_starts_without(demo, server):
    assert wait_for(lambda: idle(server), timeout=10)
    spec = build_spec(PRESET, 2, warmup=False)
    with Foreign(server.port, streams=2, max_new_tokens=200) as foreign:
        assert wait_for(lambda: len(foreign.arrivals) > 10, timeout=20)
        with pytest.raises(AgentCallError) as err:
            await demo.client.call("bench.start", {"spec": spec, "port": server.port, "watch": False,
                                                   "require_idle": True}, timeout=180)
        assert err.value.code == "server_busy"
        message = str(err.value)
        assert "not sent by spectui" in message and "--require-idle" in message, message
        assert "\n" not in message and "Traceback" not in message
        assert await BenchClient(demo).list() == []  # nothing started
    assert wait_for(lambda: idle(server), timeout=30)
    col, result = await run_once(demo, server, require_idle=True)
    assert not result.foreign
