"""The demo tells the story live: the shipped kimi-* profiles on the simulated pcie-8gpu host,
each under the demo traffic at concurrency 1 (spectui/agent/bench/traffic.py, as the console runs it).

The README's story: baseline about 82 tok/s; EAGLE-3 accept length about 2.0 and about 60
tok/s; NGRAM (8 draft tokens) accept length 1.3-1.5 and about 41 tok/s. Each server first gets
the traffic at concurrency 8 for a while (as much traffic as a minute or more at concurrency 1:
NGRAM's trie has seen some answers), then at concurrency 1 for the measured window. The figures
are the server's own ground truth (``/sim/stats``) over that window: the decode rate one stream
sees and the accept length of the verify steps; the rate each finished request saw on the wall
clock must agree with it. The traffic is seeded (prompts and sampling seeds), so that a run
repeats: NGRAM's accept length over half a minute (a dozen requests) varies by about 0.08
from one stretch of traffic to another, as a real server's does. The three servers run at once.

To see the figures: ``python3 -m pytest -q -s tests/sim/test_sim_demo_traffic.py``.
"""

import time

import pytest

from spectui.agent.bench.traffic import Traffic
from spectui.core.profiles.argv import build_argv
from spectui.core.profiles.discovery import ProfileLayer
from spectui.core.profiles.loader import load_profiles
from tests.sim.simproc import ROOT, at_once, wait_for

WARMUP_S = 12.0
WARMUP_CONCURRENCY = 8
WINDOW_S = 30.0
STORY = ("kimi-baseline", "kimi-eagle3", "kimi-ngram")
NGRAM8_STEP_S = 0.0341  # pcie-8gpu: a verify step of 8 draft tokens plus the trie lookup, batch 1


def server_args(name):
    """The profile's simulated launch flags, less interpreter, launcher, host and port."""
    lib = load_profiles(layers=[ProfileLayer("shipped", (ROOT / "spectui" / "data" / "profiles",))])
    argv = build_argv(lib.get(name), simulated=True)[3:]
    out, skip = [], False
    for word in argv:
        if skip:
            skip = False
            continue
        if word in ("--host", "--port"):
            skip = True
            continue
        out.append(word)
    return out + ["--sim-load-time", "0.5"]


class FakeAgent(object):
    channel = None

    def __init__(self, port):
        server = {"name": "story", "state": "ready", "host": "127.0.0.1", "port": port, "ready_at": 1.0}
        self.servers = type("Servers", (), {"serving": lambda self: {"story": dict(server)}})()


def in_flight(sp):
    stats = sp.get_json("/sim/stats")
    return stats["in_flight"]


def window(sp, traffic):
    traffic.start({"concurrency": WARMUP_CONCURRENCY, "seed": 7, "seeded": True})
    time.sleep(WARMUP_S)
    traffic.start({"concurrency": 1, "seed": 8, "seeded": True})  # closes the warm-up's streams
    assert wait_for(lambda: in_flight(sp) == 1, timeout=10)
    a = sp.get_json("/sim/stats")
    flight = []
    deadline = time.monotonic() + WINDOW_S
    while time.monotonic() < deadline:
        flight.append(in_flight(sp))
        time.sleep(0.5)
    b = sp.get_json("/sim/stats")
    traffic.stop({})
    ca, cb = a["counters"], b["counters"]
    tokens = cb["decode_tokens"] - ca["decode_tokens"]
    verifies = cb["verify_calls"] - ca["verify_calls"]
    stream_s = cb["decode_stream_s"] - ca["decode_stream_s"]
    seen = {r["rid"] for r in a["recent"]}
    done = [r for r in b["recent"] if r["rid"] not in seen and r["decode_s"] > 0]
    wall = sum(r["completion_tokens"] - 1 for r in done) / sum(r["decode_s"] for r in done)
    return {
        "tok_s": tokens / stream_s,
        "accept_length": tokens / verifies if verifies else None,
        "wall_tok_s": wall,
        "requests": len(done),
        "max_in_flight": max(flight),
    }


def test_the_demo_traffic_tells_the_story(tmp_path):
    results = at_once(STORY, server_args, tmp_path, lambda sp: window(sp, Traffic(FakeAgent(sp.port))), join_s=120)
    report = {n: {k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()} for n, r in results.items()}
    print("demo traffic, concurrency 1, %d s after %d s at concurrency %d:" % (WINDOW_S, WARMUP_S, WARMUP_CONCURRENCY),
          report)

    base, eagle, ngram = (results[n] for n in STORY)
    assert base["tok_s"] == pytest.approx(82, rel=0.10), report
    assert eagle["accept_length"] == pytest.approx(2.0, rel=0.10), report
    assert eagle["tok_s"] == pytest.approx(60, rel=0.10), report
    assert 1.3 * 0.9 <= ngram["accept_length"] <= 1.5 * 1.1, report
    assert ngram["tok_s"] == pytest.approx(41, rel=0.15), report
    assert ngram["tok_s"] == pytest.approx(ngram["accept_length"] / NGRAM8_STEP_S, rel=0.03), report
    assert base["tok_s"] > eagle["tok_s"] > ngram["tok_s"], report
    for r in results.values():
        assert r["max_in_flight"] == 1, report  # concurrency 1: one request at a time
        assert r["requests"] >= 3, report
        # what the requests saw on the wall clock is what the server modelled
        assert r["wall_tok_s"] == pytest.approx(r["tok_s"], rel=0.10), report
