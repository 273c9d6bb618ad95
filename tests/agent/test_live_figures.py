"""Live figures from scripted servers: each throughput source, the no-false-zero rule, accept
length by release, the accept-rate formula per release, bucket-bound latency.

A tiny HTTP server plays an SGLang server of a given release: its ``/metrics`` text (names,
labels and buckets of the sglang 0.5.23 wheel, ``srt/observability/metrics_collector.py``),
``/server_info`` and, optionally, a log file with Decode lines. The clock is the test's.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from spectui.agent.servers import figures as lf
from spectui.agent.servers.metrics import parse_metrics, quantile_bound
from spectui.agent.servers.telemetry import ServerTelemetry
from spectui.agent.servers.releases import (
    FORMULA_DRAFTS_ONLY,
    FORMULA_INCL_BONUS,
    accept_rate_formula,
    old_formula_width,
    rate_from_length,
)

TOK = 'engine_type="unified",model_name="m"'
SCHED = 'engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"'
TTFT_LE = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400]
ITL_LE = [0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100]


def hist(name, labels, bounds, observations):
    lines = ["# HELP sglang:%s x" % name, "# TYPE sglang:%s histogram" % name]
    for le in bounds + [float("inf")]:
        c = sum(1 for o in observations if o <= le)
        lines.append('sglang:%s_bucket{%s,le="%s"} %d' % (name, labels, "+Inf" if le == float("inf") else le, c))
    lines.append("sglang:%s_count{%s} %d" % (name, labels, len(observations)))
    lines.append("sglang:%s_sum{%s} %r" % (name, labels, float(sum(observations))))
    return lines


def metrics_text(*, gen=0, verify=None, requests=0, decode=None, running=1, gauge_tput=0.0, accept_gauge=None,
                 draft_gauge=None, ttft=(), itl=()):
    out = []
    for name, value in (("num_running_reqs", running), ("num_queue_reqs", 0), ("gen_throughput", gauge_tput),
                        ("token_usage", 0.01)):
        out += ["# HELP sglang:%s x" % name, "# TYPE sglang:%s gauge" % name, "sglang:%s{%s} %r" % (name, SCHED, float(value))]
    if accept_gauge is not None:
        out += ["# HELP sglang:spec_accept_length x", "# TYPE sglang:spec_accept_length gauge",
                "sglang:spec_accept_length{%s} %r" % (SCHED, accept_gauge)]
    if draft_gauge is not None:
        out += ["# HELP sglang:spec_num_draft_tokens x", "# TYPE sglang:spec_num_draft_tokens gauge",
                "sglang:spec_num_draft_tokens{%s} %r" % (SCHED, float(draft_gauge))]
    out += ["# HELP sglang:generation_tokens_total x", "# TYPE sglang:generation_tokens_total counter",
            'sglang:generation_tokens_total{%s,is_streaming="false"} %r' % (TOK, float(gen)),
            "# HELP sglang:num_requests_total x", "# TYPE sglang:num_requests_total counter",
            'sglang:num_requests_total{%s,is_streaming="false"} %r' % (TOK, float(requests))]
    if verify is not None:
        out += ["# HELP sglang:spec_verify_calls_total x", "# TYPE sglang:spec_verify_calls_total counter",
                "sglang:spec_verify_calls_total{%s} %r" % (TOK, float(verify))]
    if decode is not None:
        out += ["# HELP sglang:realtime_tokens_total x", "# TYPE sglang:realtime_tokens_total counter",
                'sglang:realtime_tokens_total{%s,mode="decode"} %r' % (SCHED, float(decode)),
                'sglang:realtime_tokens_total{%s,mode="prefill_compute"} %r' % (SCHED, 100.0)]
    out += hist("time_to_first_token_seconds", TOK + ',is_streaming="false"', TTFT_LE, list(ttft))
    out += hist("inter_token_latency_seconds", TOK, ITL_LE, list(itl))
    return "\n".join(out) + "\n"


class FakeServer:
    def __init__(self):
        self.metrics = metrics_text()
        self.info = {"version": "0.5.23", "speculative_algorithm": "EAGLE3", "speculative_num_steps": 3,
                     "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 4,
                     "internal_states": [{"avg_spec_accept_length": 2.0, "last_gen_throughput": 0.0}]}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == "/metrics":
                    body, ctype = fake.metrics.encode(), "text/plain"
                elif self.path == "/server_info":
                    body, ctype = json.dumps(fake.info).encode(), "application/json"
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def tracker(server, clock, log_path=None):
    rec = {"name": "s", "host": "127.0.0.1", "port": server.port}
    if log_path:
        rec["log_path"] = str(log_path)
    t = ServerTelemetry(rec, clock=clock)
    t.info_at = None
    return t


def tick(t, clock, dt=1.0):
    clock.t += dt
    t.info_at = None  # read /server_info every frame in these tests
    return t.frame("ready")


def test_per_iteration_counter_gives_throughput_every_frame_while_requests_finish_rarely(server):
    clock = Clock()
    t = tracker(server, clock)
    decode = 0
    frames = []
    for i in range(12):
        decode += 60  # 60 tokens each second, every iteration
        # one request of 160 tokens finishes every ~3 s: the finished counters are flat in between
        done = (i + 1) // 3
        server.metrics = metrics_text(gen=160 * done, verify=80 * done, requests=done, decode=decode,
                                      itl=[1 / 60.0] * (60 * (i + 1)))
        frames.append(tick(t, clock))
    live = frames[1:]
    assert all(f["gen_throughput"]["source"] == "realtime-counter" for f in live)
    assert all(f["gen_throughput"]["value"] == pytest.approx(60.0) for f in live)  # never a false 0
    assert all(f["per_stream"]["source"] == "itl-histogram" for f in live)
    assert all(f["per_stream"]["value"] == pytest.approx(60.0, rel=1e-3) for f in live)
    # accept length from the counters over a window that spans completions: never stale while decoding
    acc = [f["accept_length"] for f in frames[3:]]
    assert all(a["source"] == "metrics-counters" and a["value"] == pytest.approx(2.0) and not a["stale"] for a in acc)
    assert all(a["window_s"] >= 2.0 for a in acc)
    # the headline rate is 0.5.23's formula, derived from L with the live draft width
    r = frames[-1]["accept_rate"]
    assert r[0]["formula"] == FORMULA_DRAFTS_ONLY and r[0]["value"] == pytest.approx(1 / 3, abs=1e-3)
    assert r[1]["formula"] == FORMULA_INCL_BONUS and r[1]["value"] == pytest.approx(0.5)


def test_finished_counters_alone_never_show_a_false_zero(server):
    """An older server (no realtime counter, no log, gauges held): only finished-request counters."""
    clock = Clock()
    server.info = {"version": "0.5.6", "speculative_algorithm": None, "internal_states": [{}]}
    t = tracker(server, clock)
    frames = []
    gen = 0
    for i in range(40):
        if i in (5, 6, 20):
            gen += 160  # completions are rare
        server.metrics = metrics_text(gen=gen, running=1, gauge_tput=55.0)
        frames.append(tick(t, clock))
    # the gauge does not change: after FRESH_S it is not trusted, and finished counters take over
    tail = frames[int(lf.FRESH_S) + 2:]
    assert tail and all(f["gen_throughput"] is not None for f in tail)
    values = [f["gen_throughput"]["value"] for f in tail]
    assert 0.0 not in values, values
    sources = {f["gen_throughput"]["source"] for f in tail}
    assert sources == {"finished-counters"}
    # idle (no request running): a measured zero is a zero
    server.metrics = metrics_text(gen=gen, running=0, gauge_tput=55.0)
    for _ in range(35):
        f = tick(t, clock)
    assert f["gen_throughput"]["value"] == 0.0


def test_a_zero_from_a_long_prefill_is_held_then_believed(server):
    clock = Clock()
    t = tracker(server, clock)
    decode = 0
    for _ in range(4):
        decode += 80
        server.metrics = metrics_text(decode=decode, running=1)
        tick(t, clock)
    server.metrics = metrics_text(decode=decode, running=1)
    f = tick(t, clock, dt=2.0)
    assert f["gen_throughput"]["value"] == pytest.approx(80.0) and f["gen_throughput"]["held"]
    f = tick(t, clock, dt=lf.HOLD_S + 1)
    assert f["gen_throughput"]["value"] == 0.0  # still nothing after HOLD_S: a real stall


def test_accept_length_from_the_gauge_before_verify_counters_existed(server):
    """spec_verify_calls_total exists from 0.5.13; before, the spec_accept_length gauge."""
    clock = Clock()
    server.info = dict(server.info, version="0.5.10")
    t = tracker(server, clock)
    for i, g in enumerate((1.8, 1.9, 2.1)):
        server.metrics = metrics_text(gen=100 * i, accept_gauge=g, decode=50 * (i + 1))
        f = tick(t, clock)
    a = f["accept_length"]
    assert a["source"] == "metrics-gauge" and a["value"] == pytest.approx(2.1) and not a["stale"]
    # 0.5.10 prints the old formula (accepted incl. bonus / draft tokens): that is the headline
    assert f["accept_rate"][0]["formula"] == FORMULA_INCL_BONUS
    assert f["accept_rate"][0]["value"] == pytest.approx(2.1 / 4)
    # idle: nothing decoded since: stale
    server.metrics = metrics_text(gen=200, accept_gauge=2.1, decode=150, running=0)
    f = tick(t, clock)
    f = tick(t, clock)
    assert f["accept_length"]["stale"] and f["accept_length"]["value"] == pytest.approx(2.1)


def test_accept_rate_is_never_above_one_and_uses_the_live_draft_width(server):
    clock = Clock()
    t = tracker(server, clock)
    # n-gram with a memorised answer: L from counters counts the prefill token too (8.1 of 8)
    server.info = dict(server.info, speculative_algorithm="NGRAM", speculative_num_draft_tokens=8)
    server.metrics = metrics_text(gen=0, verify=0, decode=0, draft_gauge=8)
    tick(t, clock)
    server.metrics = metrics_text(gen=810, verify=100, requests=5, decode=810, draft_gauge=8)
    f = tick(t, clock)
    assert f["accept_length"]["value"] == pytest.approx(8.1)
    assert all(r["value"] <= 1.0 for r in f["accept_rate"])
    # adaptive speculation: the gauge says the live width is 3, not the launch flag's 8
    server.metrics = metrics_text(gen=1010, verify=200, requests=10, decode=1010, draft_gauge=3)
    f = tick(t, clock)
    assert f["speculative"]["draft_tokens"] == 3
    L = f["accept_length"]["value"]
    assert f["accept_rate"][0]["value"] == pytest.approx(min(1.0, (L - 1) / 2), abs=1e-3)


def test_ttft_inside_the_first_bucket_is_a_bound_and_the_mean_is_exact(server):
    clock = Clock()
    t = tracker(server, clock)
    server.metrics = metrics_text(decode=0)
    tick(t, clock)
    server.metrics = metrics_text(decode=100, ttft=[0.029, 0.031, 0.041], itl=[0.012] * 50 + [0.033] * 10)
    f = tick(t, clock)
    ttft = f["ttft_ms"]
    assert ttft["p50"] == 100.0 and ttft["p50_rel"] == "<" and ttft["p99_rel"] == "<"
    assert ttft["mean"] == pytest.approx(1000 * (0.029 + 0.031 + 0.041) / 3, abs=0.01)
    assert ttft["count"] == 3
    itl = f["itl_ms"]
    assert itl["p50_rel"] == "=" and 10.0 < itl["p50"] <= 15.0
    assert itl["mean"] == pytest.approx(1000 * (0.012 * 50 + 0.033 * 10) / 60, abs=0.01)


def test_log_only_server_takes_throughput_and_accept_length_from_decode_lines(server, tmp_path):
    clock = Clock()
    server.info = {"version": "0.5.4", "speculative_algorithm": "EAGLE", "speculative_num_steps": 3,
                   "speculative_num_draft_tokens": 8, "internal_states": [{}]}
    server.metrics = "garbage that is not prometheus {{{"
    log = tmp_path / "server.log"
    log.write_text("")
    t = tracker(server, clock, log)
    tick(t, clock)  # the log is followed from its end, as when a tracker starts on a running server
    with open(log, "a") as fh:
        fh.write("[2025-10-01 10:00:00] Decode batch [40], #running-req: 1, #token: 300, token usage: 0.00, "
                 "accept len: 2.40, accept rate: 0.60, cuda graph: True, gen throughput (token/s): 70.50, "
                 "#queue-req: 0, \n")
    f = tick(t, clock)
    assert f["gen_throughput"]["source"] == "decode-log" and f["gen_throughput"]["value"] == 70.5
    assert f["per_stream"]["source"] == "decode-log/running" and f["per_stream"]["value"] == 70.5
    assert f["accept_length"]["source"] == "decode-log" and f["accept_length"]["value"] == 2.4
    # 0.5.4 divides accepted incl. bonus by steps x (num_steps + 1): 2.4 / 4, the log's own 0.60
    head = f["accept_rate"][0]
    assert head["formula"] == FORMULA_INCL_BONUS and head["value"] == pytest.approx(0.6)
    assert "not Prometheus" in f["sources"]["metrics"]


@pytest.mark.parametrize("version,formula", [
    ("0.5.4", FORMULA_INCL_BONUS), ("0.5.6", FORMULA_INCL_BONUS), ("0.5.9", FORMULA_INCL_BONUS),
    ("0.5.10.post1", FORMULA_INCL_BONUS), ("0.5.11", FORMULA_DRAFTS_ONLY), ("0.5.23", FORMULA_DRAFTS_ONLY),
    ("v0.6.0", FORMULA_DRAFTS_ONLY), ("unknown", None), (None, None),
])
def test_accept_rate_formula_per_release(version, formula):
    assert accept_rate_formula(version) == formula


def test_rate_from_length_and_old_width():
    assert rate_from_length(2.0, 4, FORMULA_DRAFTS_ONLY) == pytest.approx(1 / 3)
    assert rate_from_length(2.0, 4, FORMULA_INCL_BONUS) == pytest.approx(0.5)
    assert rate_from_length(8.1, 8, FORMULA_INCL_BONUS) == 1.0
    assert rate_from_length(1.0, 1, FORMULA_DRAFTS_ONLY) is None
    assert old_formula_width("0.5.5", 3, 8) == 4 and old_formula_width("0.5.6", 3, 8) == 8


def test_quantile_bound_edges():
    snap = parse_metrics(metrics_text(ttft=[0.05, 0.5, 500.0]))
    h = snap.histograms["time_to_first_token_seconds"]
    assert quantile_bound(0.2, h) == (0.1, "<")
    assert quantile_bound(0.5, h)[1] == "="
    assert quantile_bound(0.99, h) == (400.0, ">")
