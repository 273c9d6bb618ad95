"""The log lines and field names of each release era, from running servers."""

import re

import pytest

from tests.sim.simproc import start_all
from tests.sim.shapes import PREFIX, decode_re, prefill_re

COMMON = ["--sim-load-time", "0.3", "--decode-log-interval", "4", "--sim-hardware", "nvlink-8gpu"]
SERVERS = {
    "0.4-eagle": ["--sim-log-format", "0.4", "--model-path", "meta-llama/Llama-3.1-8B-Instruct",
                  "--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", "yuhuili/EAGLE-LLaMA3.1-Instruct-8B"],
    "0.4-plain": ["--sim-log-format", "0.4", "--model-path", "meta-llama/Llama-3.1-8B-Instruct"],
    "2025-ngram": ["--sim-log-format", "2025", "--model-path", "Qwen/Qwen3-8B", "--speculative-algorithm", "NGRAM",
                   "--speculative-num-draft-tokens", "8", "--speculative-ngram-max-match-window-size", "10"],
    "0.5.23-plain": ["--model-path", "Qwen/Qwen3-8B", "--tp-size", "2"],
}


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    work = tmp_path_factory.mktemp("eras")
    started = start_all(SERVERS, lambda name: SERVERS[name] + COMMON, work, timeout=30)
    try:
        for sp in started.values():
            sp.post_json("/generate", {"text": "Alice was beginning to get very tired of sitting by her sister",
                                       "sampling_params": {"max_new_tokens": 40, "ignore_eos": True}})
        yield started
    finally:
        for sp in started.values():
            sp.kill_group()


def body_lines(sp, anchor):
    out = []
    for ln in sp.log().splitlines():
        m = re.match(PREFIX, ln)
        if m and ln[m.end():].startswith(anchor):
            out.append((m.group(0), ln[m.end():]))
    return out


@pytest.mark.parametrize("name,era,spec", [("0.4-eagle", "0.4", True), ("0.4-plain", "0.4", False),
                                           ("2025-ngram", "2025", True), ("0.5.23-plain", "0.5.23", False)])
def test_decode_and_prefill_lines(servers, name, era, spec):
    sp = servers[name]
    decode = body_lines(sp, "Decode batch")
    prefill = body_lines(sp, "Prefill batch")
    assert len(decode) >= 2 and len(prefill) >= 2  # warm-up and our request
    for _prefix, body in decode:
        assert decode_re(era, spec).match(body), body
    for _prefix, body in prefill:
        assert prefill_re(era).match(body), body
    tp2 = name == "0.5.23-plain"
    assert all((" TP0] " in p) == tp2 for p, _ in decode + prefill)


def test_2025_accept_rate_uses_the_old_formula(servers):
    for _, body in body_lines(servers["2025-ngram"], "Decode batch"):
        length = float(re.search(r"accept len: (\d+\.\d+)", body).group(1))
        rate = float(re.search(r"accept rate: (\d+\.\d+)", body).group(1))
        assert rate == pytest.approx(length / 8, abs=0.011)


def test_versions_and_meta_names_follow_the_era(servers):
    assert servers["0.4-eagle"].get_json("/server_info")["version"].startswith("0.4")
    assert servers["2025-ngram"].get_json("/get_server_info")["version"].startswith("0.5.")
    out = servers["2025-ngram"].post_json("/generate", {"text": "the Mouse", "sampling_params": {"max_new_tokens": 16}})
    meta = out["meta_info"]
    assert {"spec_accepted_drafts", "spec_proposed_drafts", "spec_verify_ct", "spec_accept_histogram"} <= set(meta)
    assert "spec_num_correct_drafts" not in meta
    assert meta["spec_proposed_drafts"] == 7 * meta["spec_verify_ct"]
    assert servers["0.4-plain"].get("/ready")[0] == 404
    assert servers["0.5.23-plain"].get("/ready")[0] == 200
    # 0.4.6.post5 picks (5, 4, 8) for every architecture (sglang/srt/server_args.py:1588-1603)
    info = servers["0.4-eagle"].get_json("/server_info")
    assert (info["speculative_num_steps"], info["speculative_eagle_topk"], info["speculative_num_draft_tokens"]) == (5, 4, 8)
