"""The simulator against the real SGLang 0.5.23 server on this CPU, same release, same flags: what a
client sees of each, compared.

One real server (``tests.support.real_sglang.RealServer``, the tiny local model, started by hand: the tier's
``hand_started``, which tests/real_server/test_found_server.py finds and benchmarks first) and one simulated
server, one after the other, each driven the same way: a plain and a streaming
``/generate``, then ``/metrics`` and ``/server_info``, every endpoint below, and a graceful stop
(SIGTERM to the leader) while a long request runs. Compared:

* ``/metrics`` (prometheus_client's text parser): every family the simulator writes exists in the
  real server's output with the same type and label names. Skipped: speculative families the
  simulator writes and the real CPU server lacks (speculation does not run on a CPU in 0.5.23: its
  NGRAM verify has no torch_native path and the drafter algorithms stop loading their draft), so
  a family named ``spec_`` may be missing on the real side only. The real server writes many
  families the simulator does not model; those are not compared.
* ``/server_info``: every top-level and ``internal_states`` key the simulator reports is the real
  server's, with the same value type where both are set (SGLang resolves some defaults the
  simulator leaves unset, so a None on either side is not compared).
* HTTP status codes of each endpoint, and ``/health`` while the server stops: 503, never 200, until
  it is gone, and the long request served to its end. While loading neither answers 200; the real
  server does not listen until its model is loaded while the simulator answers 503 then, so only
  "never 200 before ready" is compared there.
* Log lines: the ``key: value`` fields of the Prefill and Decode lines, in order, and the value
  kinds; the real CPU server writes ``cpu graph`` where GPUs (and the simulator's) write
  ``cuda graph`` (sglang 0.5.23 wheel, sglang/srt/managers/scheduler_components/metrics_reporter.py:
  286-290), compared as one field. Access lines: method, path, status code and phrase.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.sim.simproc import SimProcess
from tests.support import real_sglang as rs

pytestmark = pytest.mark.xdist_group("real_server")

GETS = ("/health", "/health_generate", "/ready", "/model_info", "/get_model_info", "/server_info",
        "/get_server_info", "/v1/models", "/metrics", "/flush_cache", "/nonexistent", "/generate")
POSTS = ("/flush_cache", "/health")
LONG_TOKENS = 600
ACCESS = re.compile(r'INFO:     [\d.]+:\d+ - "(GET|POST) (\S+) HTTP/1\.1" (\d{3}) (.+)$')


def _generate(port, tokens, stream=False):
    body = {"text": "the quick brown fox", "sampling_params": {"max_new_tokens": tokens, "ignore_eos": True},
            "stream": stream}
    req = urllib.request.Request("http://127.0.0.1:%d/generate" % port, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        raw = r.read().decode()
    if stream:
        chunks = [json.loads(x[6:]) for x in raw.splitlines() if x.startswith("data: {")]
        return r.status, chunks[-1]
    return r.status, json.loads(raw)


def _loading(port, proc, log: Path) -> list:
    """What ``/health`` answers while the server (already starting) loads, every 0.2 s until the first 200."""
    loading = []
    deadline = time.monotonic() + rs.READY_TIMEOUT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited while loading: " + rs.tail(log)
        code = rs.status(port, "/health", timeout=5)
        if code == 200:
            return loading
        loading.append(code)
        time.sleep(0.2)
    raise AssertionError("not ready in time: " + rs.tail(log))


def _observe(port, proc, log: Path, loading: list) -> dict:
    """Drive one server (ready, ``loading`` what its /health answered while it loaded) as the module docstring
    says; what it showed."""
    seen = {"loading": loading}
    seen["generate"] = _generate(port, 16)
    seen["stream"] = _generate(port, 8, stream=True)
    seen["metrics"] = rs.get(port, "/metrics")[1].decode()
    seen["server_info"] = json.loads(rs.get(port, "/server_info")[1])
    seen["codes"] = {("GET", p): rs.status(port, p) for p in GETS}
    seen["codes"].update({("POST", p): rs.status(port, p, "POST") for p in POSTS})
    done = {}
    worker = threading.Thread(target=lambda: done.update(r=_generate(port, LONG_TOKENS)))
    worker.start()
    time.sleep(1.0)  # the request reaches the scheduler (a log line shows it below)
    proc.send_signal(signal.SIGTERM)  # the leader only, as `kill PID` does
    stopping = []
    while len(stopping) < 2000:
        code = rs.status(port, "/health", timeout=5)
        stopping.append(code)
        if code is None:
            break
        time.sleep(0.1)
    seen["stopping"] = stopping
    worker.join(600)
    seen["long"] = done.get("r")
    try:
        proc.wait(120)
    except subprocess.TimeoutExpired:
        pass
    seen["log"] = rs.tail(log, 10_000_000)
    return seen


@pytest.fixture(scope="module")
def both(hand_started, tmp_path_factory):
    """The real server started by hand (tests/real_server/conftest.py; test_found_server.py has found it first),
    then the simulator with its flags."""
    root = tmp_path_factory.mktemp("sim-vs-real")
    real = hand_started.server
    try:
        real_seen = _observe(real.port, real.proc, real.log, hand_started.wait_loaded())
    finally:
        real.stop()
    flags = real.argv[real.argv.index("--model-path"):]
    flags = [a for i, a in enumerate(flags) if a not in ("--host", "--port") and flags[i - 1] not in ("--host", "--port")]
    (root / "state").mkdir()
    sim = SimProcess(flags + ["--sim-load-time", "1"], root / "state", root / "sim.log")
    try:
        sim_seen = _observe(sim.port, sim.proc, sim.log_path, _loading(sim.port, sim.proc, sim.log_path))
    finally:
        sim.kill_group()
    return real_seen, sim_seen


def _families(text):
    out = {}
    for fam in text_string_to_metric_families(text):
        labels = set()
        for sample in fam.samples:
            labels |= set(sample.labels) - {"le", "quantile"}
        out[fam.name] = (fam.type, frozenset(labels))
    return out


def test_metrics_families_types_and_labels(both):
    real, sim = (_families(s["metrics"]) for s in both)
    missing = {n for n in sim if n not in real}
    assert missing <= {n for n in sim if "spec_" in n}, sorted(missing)
    assert "sglang:num_running_reqs" in real and "sglang:generation_tokens" in real
    for name in set(sim) & set(real):
        assert sim[name] == real[name], (name, sim[name], real[name])


def _kinds(info):
    return {k: type(v).__name__ for k, v in info.items() if v is not None}


def test_server_info_keys_and_value_types(both):
    real, sim = (s["server_info"] for s in both)
    assert set(sim) <= set(real), sorted(set(sim) - set(real))
    assert set(sim["internal_states"][0]) <= set(real["internal_states"][0])
    for r, s in ((real, sim), (real["internal_states"][0], sim["internal_states"][0])):
        rk, sk = _kinds(r), _kinds(s)
        wrong = {k: (rk[k], sk[k]) for k in set(rk) & set(sk) if rk[k] != sk[k] and {rk[k], sk[k]} != {"int", "float"}}
        assert not wrong, wrong
    for key in ("launch_command", "status", "max_total_num_tokens", "max_req_input_len", "version", "startup_time"):
        assert key in sim and key in real, key
    assert sim["status"] == real["status"] == "ready"


def test_status_codes_of_each_endpoint(both):
    real, sim = both
    assert sim["codes"] == real["codes"]
    for seen in both:
        assert seen["generate"][0] == 200 and seen["generate"][1]["meta_info"]["completion_tokens"] == 16
        assert seen["stream"][0] == 200 and seen["stream"][1]["meta_info"]["completion_tokens"] == 8
        assert set(seen["loading"]) <= {None, 503}, seen["loading"]


def test_a_graceful_stop_answers_503_and_serves_what_runs(both):
    for seen in both:
        stopping = seen["stopping"]
        assert 503 in stopping and 200 not in stopping and stopping[-1] is None, stopping
        status, out = seen["long"]
        assert status == 200 and out["meta_info"]["completion_tokens"] == LONG_TOKENS
        assert "SIGTERM received. signum=None frame=None. Draining requests and shutting down..." in seen["log"]
        assert "Health check request received during shutdown. Returning 503." in seen["log"]
        assert "Gracefully exiting... Remaining number of requests 0." in seen["log"]


def _fields(log, anchor):
    """The distinct field lists of ``anchor`` lines: (key, value kind) in order."""
    out = set()
    for line in log.splitlines():
        at = line.find(anchor)
        if at < 0:
            continue
        parts = line[at + len(anchor):].split(", ")
        fields = []
        for part in parts:
            key, _, value = part.rpartition(": ")
            kind = "bool" if value in ("True", "False") else "float" if re.fullmatch(r"-?\d+\.\d+", value) \
                else "int" if re.fullmatch(r"-?\d+", value) else "text"
            fields.append(("cuda graph" if key == "cpu graph" else key, kind))
        out.add(tuple(fields))
    return out


def test_log_line_shapes(both):
    real, sim = (s["log"] for s in both)
    for anchor in ("Prefill batch, ", "Decode batch, "):
        r, s = _fields(real, anchor), _fields(sim, anchor)
        assert r and s and r == s, (anchor, r, s)
    real_access = {m.groups() for m in map(ACCESS.search, real.splitlines()) if m}
    sim_access = {m.groups() for m in map(ACCESS.search, sim.splitlines()) if m}
    common = {g[:3] for g in real_access} & {g[:3] for g in sim_access}
    assert ("GET", "/metrics", "200") in common and ("GET", "/nonexistent", "404") in common
    for key in common:
        assert {g[3] for g in real_access if g[:3] == key} == {g[3] for g in sim_access if g[:3] == key}, key
