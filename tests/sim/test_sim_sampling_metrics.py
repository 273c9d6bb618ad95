"""Sampling, repetition, per-iteration metrics, idle gauges and /health, on running servers.

One NGRAM server of the 0.5.23 era (metrics on, /health generating as SGLang's does by
default) and two plain ones of the older eras, started together.
"""

import json
import re
import threading
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from spectui.sim import workload
from spectui.sim.model import get_model
from tests.sim.simproc import start_all, wait_for

COMMON = ["--sim-load-time", "0.3", "--enable-metrics", "--sim-hardware", "nvlink-8gpu"]
SERVERS = {
    "ngram": ["--model-path", "moonshotai/Kimi-K2.5", "--tp-size", "8", "--decode-log-interval", "5",
              "--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", "8"],
    "plain-2025": ["--sim-log-format", "2025", "--model-path", "Qwen/Qwen3-8B", "--decode-log-interval", "5"],
    "plain-04": ["--sim-log-format", "0.4", "--model-path", "meta-llama/Llama-3.1-8B-Instruct",
                 "--decode-log-interval", "5"],
}
GENERATING_HEALTH = {"SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION": "true"}
LINE = "    total = total + price * quantity\n"


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    work = tmp_path_factory.mktemp("sampling")
    started = start_all(SERVERS, lambda name: SERVERS[name] + COMMON, work,
                        lambda name: GENERATING_HEALTH if name in ("ngram", "plain-04") else None, timeout=30)
    try:
        yield started
    finally:
        for sp in started.values():
            sp.kill_group()


def generate(sp, text, **params):
    params.setdefault("max_new_tokens", 24)
    return sp.post_json("/generate", {"text": text, "sampling_params": params})


def metrics(sp):
    status, body = sp.get("/metrics")
    assert status == 200
    return {f.name: f for f in text_string_to_metric_families(body.decode())}


def sample(fams, family, suffix="_total", **labels):
    fam = fams.get(family)
    if fam is None:
        return None
    vals = [s.value for s in fam.samples if s.name == family + suffix
            and all(s.labels.get(k) == v for k, v in labels.items())]
    return sum(vals) if vals else None


def test_sampled_requests_differ_greedy_and_seeded_ones_repeat(servers):
    sp = servers["ngram"]
    prompt = "Alice was beginning to get very tired of sitting by her sister on the bank"
    sampled = [generate(sp, prompt, temperature=0.7)["output_ids"] for _ in range(3)]
    assert len({tuple(o) for o in sampled}) == 3
    default = [generate(sp, prompt)["output_ids"] for _ in range(2)]  # SGLang's default temperature is 1.0
    assert default[0] != default[1]
    greedy = [generate(sp, prompt, temperature=0)["output_ids"] for _ in range(2)]
    assert greedy[0] == greedy[1]
    seeded = [generate(sp, prompt, temperature=0.8, sampling_seed=42)["output_ids"] for _ in range(2)]
    assert seeded[0] == seeded[1]
    assert generate(sp, prompt, temperature=0.8, sampling_seed=43)["output_ids"] != seeded[0]


def test_a_repeated_line_is_repeated_and_ngram_accepts_most_drafts(servers):
    sp = servers["ngram"]
    out = generate(sp, LINE * 40, temperature=0, max_new_tokens=200)
    text = out["text"]
    assert text.count(LINE) >= 20, text[:400]  # the model goes on repeating the line, as an LLM would
    assert out["meta_info"]["spec_accept_length"] > 4.0, out["meta_info"]


def test_random_tokens_give_ngram_nothing_to_find(servers):
    sp = servers["ngram"]
    m = get_model()
    tokens = verifies = 0
    for seed in range(3):
        meta = generate(sp, workload.random_prompt(m, 100 + seed, 200), temperature=0.7, max_new_tokens=60,
                        ignore_eos=True)["meta_info"]
        tokens += meta["completion_tokens"]
        verifies += meta["spec_verify_ct"]
    assert 1.0 <= tokens / verifies < 1.15


def test_realtime_decode_tokens_grow_every_iteration(servers):
    """0.5.23 counts decode tokens each iteration (metrics_reporter.py:909-916); the request
    counters wait for the request to finish."""
    sp = servers["ngram"]
    before = metrics(sp)
    decode0 = sample(before, "sglang:realtime_tokens", mode="decode") or 0.0
    prefill0 = sample(before, "sglang:realtime_tokens", mode="prefill_compute") or 0.0
    gen0 = sample(before, "sglang:generation_tokens")
    body = {"text": "The Mouse looked at her rather inquisitively", "stream": True,
            "sampling_params": {"max_new_tokens": 120, "ignore_eos": True, "temperature": 0.7}}
    req = urllib.request.Request(sp.url + "/generate", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    seen = []
    with urllib.request.urlopen(req, timeout=60) as r:
        for i, raw in enumerate(r):
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk["meta_info"]["finish_reason"] is None and i % 3 == 0:
                fams = metrics(sp)
                seen.append((chunk["meta_info"]["completion_tokens"],
                             sample(fams, "sglang:realtime_tokens", mode="decode"),
                             sample(fams, "sglang:generation_tokens")))
                if len(seen) == 4:  # a client that falls behind: the server finishes while chunks wait unread
                    assert wait_for(lambda: sp.get_json("/sim/stats")["running"] == 0, timeout=30)
    # a scrape sees the request either running (decode counted so far, generation not yet) or finished
    running = [s for s in seen if s[1] - decode0 < 119 - 0.5]
    finished = seen[len(running):]
    assert len(running) >= 3 and len(finished) >= 1, seen
    decoded = [d for _, d, _ in running]
    assert all(b > a for a, b in zip(decoded, decoded[1:])), seen  # it moves while the request runs
    assert decoded[0] >= decode0
    assert all(g == gen0 for _, _, g in running), seen  # ... generation_tokens_total does not
    assert all(d - decode0 == pytest.approx(119, abs=0.5) and g == gen0 + 120 for _, d, g in finished), seen
    after = metrics(sp)
    assert sample(after, "sglang:realtime_tokens", mode="decode") - decode0 == pytest.approx(119, abs=0.5)
    assert sample(after, "sglang:realtime_tokens", mode="prefill_compute") > prefill0
    assert sample(after, "sglang:generation_tokens") == gen0 + 120
    fam = after["sglang:realtime_tokens"]
    assert fam.type == "counter"
    labels = next(s.labels for s in fam.samples if s.labels.get("mode") == "decode")
    assert labels == {"model_name": "moonshotai/Kimi-K2.5", "engine_type": "unified", "tp_rank": "0", "pp_rank": "0",
                      "moe_ep_rank": "0", "mode": "decode"}


def test_realtime_tokens_only_where_the_release_had_them(servers):
    for name in ("plain-2025", "plain-04"):
        generate(servers[name], "Alice", max_new_tokens=12, temperature=0)
        assert "sglang:realtime_tokens" not in metrics(servers[name]), name


def test_gauges_when_the_server_goes_idle(servers):
    """0.5.23 republishes at once the gauges an idle server contradicts; older releases wait
    30 s after the last stats log."""
    for name in ("ngram", "plain-2025"):
        generate(servers[name], "The Dodo", max_new_tokens=30, temperature=0, ignore_eos=True)
    assert wait_for(lambda: sample(metrics(servers["ngram"]), "sglang:num_running_reqs", "") == 0, timeout=2)
    fams = metrics(servers["ngram"])
    assert sample(fams, "sglang:gen_throughput", "") == 0
    assert sample(fams, "sglang:spec_accept_length", "") >= 1.0  # the speculative gauges keep their last window
    time.sleep(0.3)
    assert sample(metrics(servers["plain-2025"]), "sglang:num_running_reqs", "") == 1  # held, stale
    assert sample(metrics(servers["plain-2025"]), "sglang:gen_throughput", "") > 0


def test_health_generates_a_token_when_idle_and_skips_when_busy(servers):
    sp = servers["ngram"]
    before = sp.get_json("/sim/stats")["counters"]
    t0 = time.monotonic()
    assert sp.get("/health", timeout=5)[0] == 200
    assert time.monotonic() - t0 >= 0.95  # the handler polls once a second
    mid = sp.get_json("/sim/stats")["counters"]
    assert mid["health_checks_run"] == before["health_checks_run"] + 1
    assert re.search(r"Prefill batch, #new-seq: 1, #new-token: 1, ", sp.log())
    # while a request runs, the health check is skipped: the running request vouches for the server
    worker = threading.Thread(target=generate, args=(sp, "The Queen", ), kwargs={"max_new_tokens": 120,
                                                                                 "ignore_eos": True})
    worker.start()
    assert wait_for(lambda: sp.get_json("/sim/stats")["running"] == 1, timeout=5)
    assert sp.get("/health_generate", timeout=5)[0] == 200
    worker.join()
    after = sp.get_json("/sim/stats")["counters"]
    assert after["health_checks_skipped"] == mid["health_checks_skipped"] + 1
    assert after["health_checks_run"] == mid["health_checks_run"]
    # a health check is no request of the metrics (log_metrics False), nor of /sim/stats' recent ones
    stats = sp.get_json("/sim/stats")
    assert sample(metrics(sp), "sglang:num_requests") == len(stats["recent"]) == stats["counters"]["requests_finished"] \
        - stats["counters"]["health_checks_run"]


def test_health_of_the_04_era_is_the_http_servers(servers):
    sp = servers["plain-04"]
    t0 = time.monotonic()
    assert sp.get("/health", timeout=5)[0] == 200
    assert time.monotonic() - t0 < 0.5  # 0.4's /health does not generate
    runs = sp.get_json("/sim/stats")["counters"]["health_checks_run"]
    assert sp.get("/health_generate", timeout=5)[0] == 200
    assert sp.get_json("/sim/stats")["counters"]["health_checks_run"] == runs + 1
