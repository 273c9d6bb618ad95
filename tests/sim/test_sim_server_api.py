"""Every endpoint's shape, against one EAGLE-3 server (0.5.23 era, metrics on)."""

import json
import re
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.sim.simproc import SimProcess, start_ready
from tests.sim.shapes import PREFIX, decode_re, prefill_re

ARGS = ["--model-path", "moonshotai/Kimi-K2.5", "--tp-size", "2", "--enable-metrics", "--decode-log-interval", "5",
        "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "lightseekorg/kimi-k2.5-eagle3",
        "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
        "--sim-load-time", "0.4", "--sim-hardware", "nvlink-8gpu", "--sim-weights-gb", "120"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    sp = start_ready(ARGS, tmp_path_factory.mktemp("api"), "eagle")
    yield sp
    sp.kill_group()


def test_health_is_503_while_loading(tmp_path):
    sp = SimProcess(["--model-path", "m/Llama-3.1-8B", "--sim-load-time", "2.0"], tmp_path, tmp_path / "load.log")
    try:
        seen = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and 200 not in seen:
            try:
                seen.append(sp.get("/health", timeout=1)[0])
                seen.append(sp.get("/health_generate", timeout=5)[0])
            except OSError:
                pass
            time.sleep(0.1)
        assert 503 in seen and 200 in seen, seen
        assert seen.index(503) < seen.index(200)
        log = sp.log()
        assert "Loading safetensors checkpoint shards:   0% Completed | 0/2 [00:00<?, ?it/s]" in log
        assert re.search(r"Loading safetensors checkpoint shards: 100% Completed \| 2/2 \[\d\d:\d\d<00:00, ", log)
        assert re.search(PREFIX + r"Load weight begin\. avail mem=\d+\.\d\d GB", log)
        assert re.search(PREFIX + r"Load weight end\. elapsed=\d+\.\d\d s, type=LlamaForCausalLM, avail mem=\d+\.\d\d GB, mem usage=16\.00 GB\.", log)
        assert log.index("Load weight end") < log.index("The server is fired up and ready to roll!")
    finally:
        sp.kill_group()


def test_server_info_and_model_info(server):
    for path in ("/server_info", "/get_server_info"):
        info = server.get_json(path)
        assert info["version"] == "0.5.23"
        assert info["speculative_algorithm"] == "EAGLE3"
        assert (info["speculative_num_steps"], info["speculative_eagle_topk"], info["speculative_num_draft_tokens"]) == (3, 1, 4)
        assert info["tp_size"] == 2 and info["model_path"] == "moonshotai/Kimi-K2.5"
        states = info["internal_states"]
        assert isinstance(states, list) and len(states) == 1
        assert "last_gen_throughput" in states[0] and "memory_usage" in states[0]
        assert states[0]["memory_usage"]["token_capacity"] > 0
    for path in ("/model_info", "/get_model_info"):
        mi = server.get_json(path)
        assert mi["model_path"] == "moonshotai/Kimi-K2.5" and mi["is_generation"] is True
        assert mi["tokenizer_path"] == "moonshotai/Kimi-K2.5"


def test_generate_non_streaming(server):
    out = server.post_json("/generate", {"text": "Alice was beginning to get very tired",
                                          "sampling_params": {"max_new_tokens": 24, "temperature": 0}})
    meta = out["meta_info"]
    assert isinstance(out["text"], str) and len(out["output_ids"]) == 24
    assert meta["finish_reason"] == {"type": "length", "length": 24}
    assert meta["completion_tokens"] == 24 and meta["prompt_tokens"] == 7
    assert meta["spec_verify_ct"] > 0
    assert meta["spec_accept_length"] == pytest.approx(24 / meta["spec_verify_ct"])
    assert meta["spec_num_proposed_drafts"] == 3 * meta["spec_verify_ct"]
    assert meta["spec_accept_rate"] == pytest.approx(meta["spec_num_correct_drafts"] / meta["spec_num_proposed_drafts"])
    hist = meta["spec_correct_drafts_histogram"]
    assert sum(hist) == meta["spec_verify_ct"]
    assert sum(i * c for i, c in enumerate(hist)) == meta["spec_num_correct_drafts"]
    # greedy is deterministic: the same prompt gives the same text
    again = server.post_json("/generate", {"text": "Alice was beginning to get very tired",
                                            "sampling_params": {"max_new_tokens": 24, "temperature": 0}})
    assert again["output_ids"] == out["output_ids"]


def test_generate_streaming(server):
    # sampled at SGLang's default temperature: ignore_eos, or an end-of-sequence token may end it sooner
    events = server.stream("/generate", {"text": "The Mouse", "stream": True,
                                         "sampling_params": {"max_new_tokens": 30, "ignore_eos": True}})
    assert events[-1][1] == "[DONE]"
    chunks = [json.loads(e) for _, e in events[:-1]]
    assert len(chunks) >= 5  # several verify steps, several chunks
    for a, b in zip(chunks, chunks[1:]):
        assert b["output_ids"][: len(a["output_ids"])] == a["output_ids"]  # cumulative
        assert b["text"].startswith(a["text"])
    for c in chunks[:-1]:
        assert c["meta_info"]["finish_reason"] is None and "spec_verify_ct" not in c["meta_info"]
    last = chunks[-1]["meta_info"]
    assert last["finish_reason"]["type"] == "length" and last["completion_tokens"] == 30
    assert {"spec_verify_ct", "spec_accept_length", "spec_accept_rate", "spec_num_correct_drafts",
            "spec_num_proposed_drafts", "spec_correct_drafts_histogram"} <= set(last)
    # tokens arrive over time, not all at once
    assert events[-2][0] - events[0][0] > 0.05


def test_openai_completions_stream_with_spec_details(server):
    events = server.stream("/v1/completions", {"model": "kimi", "prompt": "Down the Rabbit-Hole", "max_tokens": 20,
                                               "ignore_eos": True,  # sampled: else it may stop sooner
                                               "stream": True, "return_spec_tokens_details": True,
                                               "stream_options": {"include_usage": True}})
    assert events[-1][1] == "[DONE]"
    chunks = [json.loads(e) for _, e in events[:-1]]
    text_chunks = [c for c in chunks if c["choices"]]
    assert all(c["object"] == "text_completion" and c["model"] == "kimi" for c in chunks)
    assert text_chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert all(c["choices"][0]["finish_reason"] is None for c in text_chunks[:-1])
    ext = [c for c in chunks if "sglext" in c]
    assert len(ext) == 1 and ext[0]["choices"] == []
    details = ext[0]["sglext"]["spec_tokens_details"]
    assert details["spec_verify_ct"] > 0 and details["spec_accept_length"] == pytest.approx(20 / details["spec_verify_ct"])
    usage = [c for c in chunks if c.get("usage")]
    assert usage[-1]["usage"]["completion_tokens"] == 20
    # non-streaming, without spec details unless asked
    out = server.post_json("/v1/completions", {"model": "kimi", "prompt": "Alice", "max_tokens": 5})
    assert out["object"] == "text_completion" and out["usage"]["completion_tokens"] == 5 and "sglext" not in out


def test_openai_chat(server):
    out = server.post_json("/v1/chat/completions", {"model": "kimi", "max_tokens": 12, "return_spec_tokens_details": True,
                                                    "messages": [{"role": "user", "content": "Tell me about the Rabbit."}]})
    choice = out["choices"][0]
    assert out["object"] == "chat.completion" and choice["message"]["role"] == "assistant"
    assert isinstance(choice["message"]["content"], str) and choice["finish_reason"] in ("length", "stop")
    assert out["sglext"]["spec_tokens_details"]["spec_verify_ct"] > 0
    events = server.stream("/v1/chat/completions", {"model": "kimi", "max_tokens": 8, "stream": True,
                                                    "messages": [{"role": "user", "content": "Hello"}]})
    chunks = [json.loads(e) for _, e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"][0]["finish_reason"] in ("length", "stop")
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)


def test_errors_and_unknown_paths(server):
    assert server.get("/nope")[0] == 404
    assert server.get("/generate")[0] == 405
    status, body = server.post("/generate", {"sampling_params": {}})
    assert status == 400 and b"text or input_ids" in body
    assert server.post("/v1/completions", {"prompt": "x", "n": 3})[0] == 400


def test_metrics_and_flush_cache(server):
    server.post_json("/generate", {"text": "Alice", "sampling_params": {"max_new_tokens": 40}})
    status, body = server.get("/metrics")
    assert status == 200
    fams = {f.name: f for f in text_string_to_metric_families(body.decode())}
    for name in ("sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:gen_throughput", "sglang:token_usage",
                 "sglang:cache_hit_rate", "sglang:spec_accept_length", "sglang:spec_accept_rate",
                 "sglang:spec_num_steps", "sglang:spec_num_draft_tokens", "sglang:utilization"):
        assert fams[name].type == "gauge", name
    for name in ("sglang:prompt_tokens", "sglang:generation_tokens", "sglang:spec_verify_calls", "sglang:num_requests"):
        assert fams[name].type == "counter", name
    for name in ("sglang:time_to_first_token_seconds", "sglang:inter_token_latency_seconds",
                 "sglang:e2e_request_latency_seconds"):
        assert fams[name].type == "histogram", name
    gauge = fams["sglang:spec_num_draft_tokens"].samples[0]
    assert gauge.labels == {"model_name": "moonshotai/Kimi-K2.5", "engine_type": "unified", "tp_rank": "0",
                            "pp_rank": "0", "moe_ep_rank": "0"} and gauge.value == 4
    assert fams["sglang:spec_num_steps"].samples[0].value == 3

    def total(fam, suffix="_total"):
        return sum(s.value for s in fams[fam].samples if s.name == fam + suffix)

    gen, verify = total("sglang:generation_tokens"), total("sglang:spec_verify_calls")
    assert gen > 0 and verify > 0 and 1.0 < gen / verify < 4.0
    ttft_count = sum(s.value for s in fams["sglang:time_to_first_token_seconds"].samples
                     if s.name.endswith("_count"))
    assert ttft_count == total("sglang:num_requests")
    assert any(s.labels.get("is_streaming") == "true" for s in fams["sglang:num_requests"].samples)

    before = server.get_json("/server_info")["internal_states"][0]
    assert before["avg_spec_accept_length"] > 1.0
    status, body = server.post("/flush_cache", {})
    assert status == 200 and body.startswith(b"Cache flushed.")
    after = server.get_json("/server_info")["internal_states"][0]
    assert "avg_spec_accept_length" not in after  # cumulative counters start over
    server.post_json("/generate", {"text": "Alice", "sampling_params": {"max_new_tokens": 20}})
    assert server.get_json("/server_info")["internal_states"][0]["avg_spec_accept_length"] > 1.0


def test_logs_of_the_0523_era(server):
    server.post_json("/generate", {"text": "The Dodo", "sampling_params": {"max_new_tokens": 40}})
    lines = server.log().splitlines()
    decode = [ln for ln in lines if "Decode batch" in ln]
    prefill = [ln for ln in lines if "Prefill batch" in ln]
    assert decode and prefill
    for ln in decode:
        m = re.match(PREFIX, ln)
        assert m and " TP0] " in m.group(0), ln
        assert decode_re("0.5.23", True).match(ln[m.end():]), ln
    for ln in prefill:
        m = re.match(PREFIX, ln)
        assert prefill_re("0.5.23").match(ln[m.end():]), ln
    rates = [float(re.search(r"accept rate: (\d+\.\d+)", ln).group(1)) for ln in decode]
    lens = [float(re.search(r"accept len: (\d+\.\d+)", ln).group(1)) for ln in decode]
    for rate, length in zip(rates, lens):  # chain of 3 drafts: rate = (len - 1) / 3
        assert rate == pytest.approx((length - 1) / 3, abs=0.011)
    assert any(re.match(PREFIX + r"The server is fired up and ready to roll!$", ln) for ln in lines)
    assert any(re.search(r'INFO:     127\.0\.0\.1:\d+ - "POST /generate HTTP/1\.1" 200 OK$', ln) for ln in lines)
