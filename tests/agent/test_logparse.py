"""The SGLang log parser: every era's batch lines, prefixes, loading, readiness, errors."""

import ast
import itertools
from pathlib import Path

import pytest

from spectui.agent import logs
from spectui.agent.logs import (
    FORMULA_DRAFTS_ONLY,
    FORMULA_INCL_BONUS,
    LogFeeder,
    LogParser,
    line_time,
    normalize_key,
    parse_line,
    parse_lines,
    parse_progress,
)
from spectui.agent.logs.fastpath import UNREAD

# Message texts as SGLang's f-strings write them (0.5.23 wheel, srt/managers/scheduler_components/
# metrics_reporter.py, and older releases' scheduler_metrics_mixin.py), placeholders filled in.
PREFILL = "Prefill batch, #new-seq: 1, #new-token: 31, #cached-token: 0, #token: 31, token usage: 0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, "
DECODE_PLAIN = "Decode batch. #running-req: 1, #token: 234, token usage: 0.00, gen throughput (token/s): 82.10, #queue-req: 0, "
DECODE_OLD_SPEC = "Decode batch. #running-req: 1, #token: 290, token usage: 0.00, accept len: 1.45, cuda graph: True, gen throughput (token/s): 41.20, #queue-req: 0, "
DECODE_2025 = "Decode batch, #running-req: 1, #token: 290, token usage: 0.00, accept len: 1.45, accept rate: 0.18, cuda graph: True, gen throughput (token/s): 41.20, #queue-req: 0, "
DECODE_0523 = "Decode batch, #running-req: 1, #token: 290, token usage: 0.00, accept len: 1.45, accept rate: 0.06, cuda graph: True, gen throughput (token/s): 41.20, #queue-req: 0"
DECODE_0523_ITER_CAP = "Decode batch [1234], #running-req: 4, #token: 1290, token usage: 0.01, accept len: 2.45, accept rate: 0.21, cap len: 3.10, cuda graph: False, gen throughput (token/s): 141.20, #queue-req: 2"
LOAD_BEGIN = "Load weight begin. avail mem=93.21 GB"
LOAD_END = "Load weight end. elapsed=61.20 s, type=DeepseekV3ForCausalLM, avail mem=12.40 GB, mem usage=80.81 GB."
READY = "The server is fired up and ready to roll!"
LOADING = "Loading safetensors checkpoint shards:  45% Completed | 29/64 [01:02<01:15,  2.51s/it]"

PREFIXES = [
    ("[2026-11-30 10:00:00] ", {"time": "2026-11-30 10:00:00"}),
    ("[2026-11-30 10:00:00.123] ", {"time": "2026-11-30 10:00:00.123"}),
    ("[2026-11-30 10:00:00 TP0] ", {"time": "2026-11-30 10:00:00", "tp_rank": 0}),
    ("[2026-11-30 10:00:00 DP1 TP8] ", {"time": "2026-11-30 10:00:00", "dp_rank": 1, "tp_rank": 8}),
    ("[2026-11-30 10:00:00.045 DP1 TP8] ", {"time": "2026-11-30 10:00:00.045", "dp_rank": 1, "tp_rank": 8}),
    ("[2026-11-30 10:00:00 DP0 PP1 ATTN_CP2 MOE_DP3 TP4 EP5] ",
     {"time": "2026-11-30 10:00:00", "dp_rank": 0, "pp_rank": 1, "attn_cp_rank": 2, "moe_dp_rank": 3, "tp_rank": 4, "ep_rank": 5}),
]


def fields(rec, *names):
    return {n: rec.get(n) for n in names}


@pytest.mark.parametrize("prefix,expect", PREFIXES)
def test_prefix_time_and_ranks(prefix, expect):
    rec = parse_line(prefix + DECODE_2025)
    assert rec["kind"] == "decode"
    for key, value in expect.items():
        assert rec[key] == value
    ranks = {k for k in rec if k.endswith("_rank")}
    assert ranks == {k for k in expect if k.endswith("_rank")}


def test_ray_actor_prefix_gives_pid():
    rec = parse_line("(SchedulerActor pid=4242, ip=10.0.0.7) [2026-11-30 10:00:00 TP3] " + DECODE_2025)
    assert fields(rec, "kind", "tp_rank", "pid", "accept_len") == {"kind": "decode", "tp_rank": 3, "pid": 4242, "accept_len": 1.45}


def test_decode_without_speculation():
    rec = parse_line("[2026-11-30 10:00:00 TP0] " + DECODE_PLAIN)
    assert rec == {
        "kind": "decode", "time": "2026-11-30 10:00:00", "tp_rank": 0,
        "running_req": 1, "num_token": 234, "token_usage": 0.0, "gen_throughput": 82.1, "queue_req": 0,
    }
    assert "accept_rate_formula" not in rec


def test_decode_older_speculative_has_no_rate():
    rec = parse_line("[2026-11-30 10:00:00] " + DECODE_OLD_SPEC)
    assert fields(rec, "accept_len", "cuda_graph", "gen_throughput", "num_token") == {
        "accept_len": 1.45, "cuda_graph": True, "gen_throughput": 41.2, "num_token": 290}
    assert "accept_rate" not in rec and "accept_rate_formula" not in rec


def test_decode_late_2025_rate_counts_bonus():
    rec = parse_line("[2025-12-04 20:35:53 TP0] " + DECODE_2025)
    assert fields(rec, "accept_len", "accept_rate", "accept_rate_formula") == {
        "accept_len": 1.45, "accept_rate": 0.18, "accept_rate_formula": FORMULA_INCL_BONUS}


def test_decode_dot_era_with_rate_counts_bonus():
    # 2025 releases wrote "Decode batch." with an accept rate too (old formula).
    line = "[2025-10-22 10:27:57 TP0] Decode batch. #running-req: 1, #token: 186, token usage: 0.00, accept len: 1.95, accept rate: 0.49, cuda graph: True, gen throughput (token/s): 178.86, #queue-req: 0, "
    assert parse_line(line)["accept_rate_formula"] == FORMULA_INCL_BONUS


def test_decode_0523_rate_is_drafts_only():
    rec = parse_line("[2026-11-30 10:00:00 TP0] " + DECODE_0523)
    assert fields(rec, "accept_len", "accept_rate", "queue_req", "accept_rate_formula") == {
        "accept_len": 1.45, "accept_rate": 0.06, "queue_req": 0, "accept_rate_formula": FORMULA_DRAFTS_ONLY}


def test_decode_0523_with_iteration_and_cap_len():
    rec = parse_line("[2026-11-30 10:00:00.250 TP0] " + DECODE_0523_ITER_CAP)
    assert fields(rec, "iter", "cap_len", "cuda_graph", "running_req", "queue_req", "accept_rate_formula") == {
        "iter": 1234, "cap_len": 3.1, "cuda_graph": False, "running_req": 4, "queue_req": 2,
        "accept_rate_formula": FORMULA_DRAFTS_ONLY}


def test_cap_len_means_new_formula_even_with_trailing_comma():
    line = "[2026-11-30 10:00:00] Decode batch, #running-req: 1, #token: 9, token usage: 0.00, accept len: 2.00, accept rate: 0.30, cap len: 3.00, cuda graph: True, gen throughput (token/s): 9.00, #queue-req: 0, "
    assert parse_line(line)["accept_rate_formula"] == FORMULA_DRAFTS_ONLY


def test_hybrid_model_keys():
    line = ("[2026-11-30 10:00:00 TP0 EP0] Decode batch, #running-req: 24, #full token: 233600, full token usage: 0.66, "
            "#swa token: 4096, swa token usage: 0.10, mamba num: 12, mamba usage: 0.05, accept len: 3.05, accept rate: 0.68, "
            "npu graph: True, gen throughput (token/s): 239.06, #queue-req: 2")
    rec = parse_line(line)
    assert fields(rec, "full_token", "full_token_usage", "swa_token", "swa_token_usage", "mamba_num", "mamba_usage", "npu_graph") == {
        "full_token": 233600, "full_token_usage": 0.66, "swa_token": 4096, "swa_token_usage": 0.1,
        "mamba_num": 12, "mamba_usage": 0.05, "npu_graph": True}
    assert "num_token" not in rec
    assert rec["token_usage"] == 0.66  # the full-attention pool is the model's token usage


def test_other_pools_are_not_token_usage():
    line = ("[2026-11-30 10:00:00 TP0] Decode batch, #running-req: 3, mamba num: 12, mamba usage: 0.05, "
            "pre-allocated usage: 0.25, cuda graph: True, gen throughput (token/s): 9.00, #queue-req: 0")
    rec = parse_line(line)
    assert fields(rec, "mamba_usage", "pre_allocated_usage") == {"mamba_usage": 0.05, "pre_allocated_usage": 0.25}
    assert "token_usage" not in rec


def test_unknown_keys_are_kept_under_normalised_names():
    line = ("[2026-11-30 10:00:00 TP0] Decode batch, #running-req: 2, #token: 100, token usage: 0.01, accept len: 1.50, "
            "accept rate: 0.10, pre-allocated usage: 0.25, #prealloc-req: 3, waiting-image-req: 1, cuda graph: True, "
            "gen throughput (token/s): 50.00, #queue-req: 0, est. decode TFLOPS/s (per GPU): 12.34, mode: turbo")
    rec = parse_line(line)
    assert fields(rec, "pre_allocated_usage", "prealloc_req", "waiting_image_req", "est_decode_tflops_s", "mode") == {
        "pre_allocated_usage": 0.25, "prealloc_req": 3, "waiting_image_req": 1, "est_decode_tflops_s": 12.34, "mode": "turbo"}


def test_prefill_lines():
    rec = parse_line("[2026-11-30 10:00:00 TP0] " + PREFILL)
    assert rec == {
        "kind": "prefill", "time": "2026-11-30 10:00:00", "tp_rank": 0, "new_seq": 1, "new_token": 31,
        "cached_token": 0, "num_token": 31, "token_usage": 0.0, "running_req": 0, "queue_req": 0, "pending_token": 0,
    }
    later = parse_line("[2026-04-05 20:02:51] Prefill batch, #new-seq: 1, #new-token: 158, #cached-token: 0, token usage: 0.08, "
                       "#running-req: 31, #queue-req: 0, cuda graph: True, input throughput (token/s): 559.53")
    assert fields(later, "input_throughput", "cuda_graph", "running_req") == {"input_throughput": 559.53, "cuda_graph": True, "running_req": 31}
    old = parse_line("[2024-08-01 10:00:00 TP0] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, cache hit rate: 12.50%, "
                     "token usage: 0.00, #running-req: 0, #queue-req: 0")
    assert old["cache_hit_rate"] == pytest.approx(0.125)


def test_2024_gpu_prefix_inside_message():
    rec = parse_line("[2024-07-01 10:00:00 TP0] [gpu=0] Decode batch. #running-req: 1, #token: 36, token usage: 0.00, gen throughput (token/s): 12.50, #queue-req: 0")
    assert fields(rec, "kind", "gpu", "num_token", "gen_throughput") == {"kind": "decode", "gpu": 0, "num_token": 36, "gen_throughput": 12.5}


def test_loading_begin_end_ready():
    begin = parse_line("[2026-11-30 10:00:00 TP0] " + LOAD_BEGIN)
    assert begin == {"kind": "load_begin", "time": "2026-11-30 10:00:00", "tp_rank": 0, "avail_mem": 93.21}
    end = parse_line("[2026-11-30 10:01:01 TP0] " + LOAD_END)
    assert end == {"kind": "load_end", "time": "2026-11-30 10:01:01", "tp_rank": 0, "elapsed": 61.2,
                   "type": "DeepseekV3ForCausalLM", "avail_mem": 12.4, "mem_usage": 80.81}
    quant = parse_line("[2026-11-30 10:01:01 TP0] Load weight end. elapsed=61.20 s, type=X, quant=fp8, fmt=e4m3, avail mem=1.00 GB, mem usage=2.00 GB.")
    assert fields(quant, "quant", "fmt", "mem_usage") == {"quant": "fp8", "fmt": "e4m3", "mem_usage": 2.0}
    assert parse_line("[2026-11-30 10:01:30] " + READY) == {"kind": "ready", "time": "2026-11-30 10:01:30"}


def test_tqdm_progress():
    rec = parse_line(LOADING)
    assert rec == {"kind": "loading", "time": None, "desc": "Loading safetensors checkpoint shards",
                   "percent": 45, "done": 29, "total": 64, "elapsed": 62, "remaining": 75}
    start = parse_progress("Loading safetensors checkpoint shards:   0% Completed | 0/64 [00:00<?, ?it/s]")
    assert start["done"] == 0 and "remaining" not in start
    capture = parse_line("Capturing batches (bs=1 avail_mem=10.12 GB): 100%|##########| 36/36 [00:05<00:00,  6.52it/s]")
    assert fields(capture, "kind", "done", "total") == {"kind": "progress", "done": 36, "total": 36}
    updates = "\r".join("Loading safetensors checkpoint shards: %3d%% Completed | %d/4 [00:0%d<00:0%d,  1.00s/it]" % (25 * n, n, n, 4 - n) for n in range(5))
    assert parse_line(updates)["done"] == 4  # the last update of a \r-joined line


@pytest.mark.parametrize("line", [
    "",
    "hello world",
    '[2026-11-30 10:00:00] INFO:     127.0.0.1:40052 - "POST /generate HTTP/1.1" 200 OK',
    "[2026-11-30 10:00:00 TP0] Init torch distributed begin.",
    "[rank0]:[W1130 10:00:00.000 ProcessGroupNCCL.cpp:1234] Warning: something",
    "[not a date here] Decode batch, #running-req: 1",
    "[2026-11-30 10:00:00] Decode batches are fun",
    "ValueError: Decode batch failed",
    "Receive: obj=GenerateReqInput(text='Decode batch, #running-req: 1, #token: 2')",
    "[10:00:00 TP0] Init torch distributed begin.",
    "[TP0] Decode batchX, #running-req: 1",
    "[tp0] Decode batch, #running-req: 1",
])
def test_lines_that_are_not_sglang_records_are_skipped(line):
    assert parse_line(line) is None


# The prefixes each release's logging setup writes, made by Python's own logging.Formatter
# from the format and datefmt that release passes to logging.basicConfig:
# sglang 0.2.0-0.2.13: format="%(message)s" (0.2.5 managers/controller/manager_single.py:125);
# 0.2.14-0.3.x: "[%(asctime)s{prefix}] %(message)s", datefmt="%H:%M:%S" (0.3.0 srt/utils.py:710-714);
# 0.3.6-0.5.x: the same with datefmt="%Y-%m-%d %H:%M:%S" (0.4.10 srt/utils.py; 0.5.3 srt/utils/common.py),
# ".%(msecs)03d" added under SGLANG_LOG_MS (0.5.23 srt/utils/common.py:2628-2629);
# prefix " DP{dp_rank} TP{tp_rank}" etc. (0.4.10 managers/scheduler.py:2373-2380), dp_rank
# read from SGLANG_DP_RANK with int() when the launcher gives none (0.5.3 managers/scheduler.py:2810-2812).
RELEASE_FORMATS = [
    ("%(message)s", None, {"time": None}),
    ("[%(asctime)s TP0] %(message)s", "%H:%M:%S", {"time": "10:00:07", "tp_rank": 0}),
    ("[%(asctime)s DP1 TP8] %(message)s", "%H:%M:%S", {"time": "10:00:07", "dp_rank": 1, "tp_rank": 8}),
    ("[%(asctime)s] %(message)s", "%H:%M:%S", {"time": "10:00:07"}),
    ("[%(asctime)s DP-1 TP0] %(message)s", "%Y-%m-%d %H:%M:%S", {"time": "2024-07-01 10:00:07", "dp_rank": -1, "tp_rank": 0}),
    ("[%(asctime)s.%(msecs)03d DP-1] %(message)s", "%Y-%m-%d %H:%M:%S", {"time": "2024-07-01 10:00:07.250", "dp_rank": -1}),
]

# Formats a user's own logging setup may give (SGLANG_LOGGING_CONFIG_PATH, or a program that
# embeds SGLang and configures logging itself), and the time each line's record carries.
CUSTOM_FORMATS = [
    ("%(asctime)s %(levelname)s %(process)d %(filename)s:%(lineno)d: %(message)s", None, "2024-07-01 10:00:07.250"),
    ("%(levelname)s:%(name)s:%(message)s", None, None),
    ("%(asctime)s - %(name)s - %(levelname)s - %(message)s", None, "2024-07-01 10:00:07.250"),
    ("%(asctime)s | %(levelname)-8s | %(message)s", "%Y-%m-%dT%H:%M:%S", "2024-07-01 10:00:07"),
    ("[%(levelname)s] %(message)s", None, None),
    ("%(asctime)s %(message)s", "%H:%M:%S", "10:00:07"),
]


def _formatted(fmt, datefmt, message):
    import logging

    record = logging.LogRecord("sglang.srt.managers.scheduler", logging.INFO, "scheduler.py", 900, message, None, None)
    record.created = 1719828007.25  # 2024-07-01 10:00:07.250 UTC
    record.msecs = 250.0
    formatter = logging.Formatter(fmt, datefmt)
    formatter.converter = __import__("time").gmtime
    return formatter.format(record)


@pytest.mark.parametrize("fmt,datefmt,expect", RELEASE_FORMATS)
@pytest.mark.parametrize("message", [DECODE_PLAIN, DECODE_OLD_SPEC, PREFILL, "[gpu=3] " + DECODE_PLAIN, "[gpu_id=0] " + DECODE_PLAIN])
def test_every_release_prefix(fmt, datefmt, expect, message):
    line = _formatted(fmt, datefmt, message)
    rec = parse_line(line)
    assert rec is not None, line
    assert {k: rec.get(k) for k in expect} == expect
    assert {k for k in rec if k.endswith("_rank")} == {k for k in expect if k.endswith("_rank")}
    assert rec["running_req"] in (0, 1) and rec["queue_req"] == 0 and rec["token_usage"] == 0.0
    if message.startswith("[gpu"):
        assert rec["gpu"] == (3 if message.startswith("[gpu=") else 0)


@pytest.mark.parametrize("fmt,datefmt,time", CUSTOM_FORMATS)
def test_custom_logging_formats(fmt, datefmt, time):
    rec = parse_line(_formatted(fmt, datefmt, DECODE_2025))
    assert fields(rec, "kind", "time", "running_req", "num_token", "accept_len", "accept_rate_formula") == {
        "kind": "decode", "time": time, "running_req": 1, "num_token": 290, "accept_len": 1.45,
        "accept_rate_formula": FORMULA_INCL_BONUS}
    assert not any(k.endswith("_rank") for k in rec)


def test_short_prefixes_and_a_traceback_under_them():
    recs = parse_lines([
        "[04:40:55 TP0] " + DECODE_PLAIN,
        "[04:40:56 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/tp_worker.py", line 200, in exposed_step',
        "RuntimeError: boom",
        "[TP1] Load weight end. elapsed=3.00 s, type=LlamaForCausalLM, avail mem=10.00 GB",
        "[DP-1 TP3] Decode batch, #running-req: 2, #token: 20, token usage: 0.10, gen throughput (token/s): 5.00, #queue-req: 0",
    ])
    assert [(r["kind"], r["time"]) for r in recs] == [("decode", "04:40:55"), ("error", "04:40:56"), ("load_end", None), ("decode", None)]
    assert recs[1]["context"] == "Scheduler hit an exception" and recs[1]["tp_rank"] == 0
    assert recs[2]["tp_rank"] == 1 and recs[2]["elapsed"] == 3.0
    assert fields(recs[3], "dp_rank", "tp_rank", "num_token") == {"dp_rank": -1, "tp_rank": 3, "num_token": 20}
    assert line_time("[04:40:55 TP0] anything") == "04:40:55"


def test_sglang_line_behind_another_prefix():
    ray = parse_line("(SchedulerActor pid=77) [10:00:00 TP3] " + DECODE_2025)
    assert fields(ray, "time", "tp_rank", "pid") == {"time": "10:00:00", "tp_rank": 3, "pid": 77}
    launcher = parse_line("(head, rank=0, pid=18260) [2026-11-30 10:00:00 DP2 TP2] " + DECODE_2025)
    assert fields(launcher, "time", "dp_rank", "tp_rank", "pid") == {"time": "2026-11-30 10:00:00", "dp_rank": 2, "tp_rank": 2, "pid": None}
    compose = parse_line("sglang-1  | [2026-11-30 10:00:00.120 DP1 TP8] " + READY)
    assert compose == {"kind": "ready", "time": "2026-11-30 10:00:00.120", "dp_rank": 1, "tp_rank": 8}
    bar = parse_line("Capturing batches (bs=1 avail_mem=23.02 GB): 100%|##########| 36/36 [00:05<00:00] [2026-11-30 10:00:00 TP0] " + DECODE_0523)
    assert fields(bar, "kind", "tp_rank", "num_token") == {"kind": "decode", "tp_rank": 0, "num_token": 290}


def test_mixed_prefill_of_chunked_prefill_releases():
    # sglang 0.3.0 managers/tp_worker.py:463-471
    rec = parse_line("[10:00:00 TP0] Prefill batch(mixed #running-req: 3). #new-seq: 1, #new-token: 512, "
                     "#cached-token: 0, cache hit rate: 0.00%, #queue-req: 4")
    assert rec == {"kind": "prefill", "time": "10:00:00", "tp_rank": 0, "mixed_running_req": 3, "new_seq": 1,
                   "new_token": 512, "cached_token": 0, "cache_hit_rate": 0.0, "queue_req": 4}


def test_line_time():
    assert line_time("[2026-11-30 10:00:00.123 TP0] anything\n") == "2026-11-30 10:00:00.123"
    assert line_time("no prefix") is None


def test_normalize_key():
    assert normalize_key("#running-req") == "running_req"
    assert normalize_key("#token") == "num_token"
    assert normalize_key("gen throughput (token/s)") == "gen_throughput"
    assert normalize_key("#full token") == "full_token"
    assert normalize_key("est. read BW (GB/s per GPU)") == "est_read_bw"
    assert normalize_key("time") == "time_field"  # never overwrites the record's own fields


TRACEBACK = [
    "[2026-11-30 10:05:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/sglang/srt/managers/scheduler.py", line 3012, in run_scheduler_process',
    "    scheduler.event_loop_overlap()",
    '  File "/sglang/srt/managers/scheduler.py", line 1022, in event_loop_overlap',
    "    batch_result = self.run_batch(batch)",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "",
]


def test_traceback_is_one_error_event():
    lines = ["[2026-11-30 10:04:59 TP0] " + DECODE_0523] + TRACEBACK + ["[2026-11-30 10:05:01] " + READY]
    recs = parse_lines(lines)
    assert [r["kind"] for r in recs] == ["decode", "error", "ready"]
    err = recs[1]
    assert err["time"] == "2026-11-30 10:05:00" and err["tp_rank"] == 0
    assert err["summary"] == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert err["exception"] == "RuntimeError"
    assert err["context"] == "Scheduler hit an exception"
    assert err["line_count"] == len(TRACEBACK) and err["lines"] == TRACEBACK


def test_traceback_without_prefix_and_chained():
    lines = [
        "Traceback (most recent call last):",
        '  File "a.py", line 1, in <module>',
        "    f()",
        "KeyError: 'x'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "a.py", line 3, in <module>',
        "    g()",
        "ValueError: bad value",
    ]
    feeder = LogFeeder()
    out = []
    for line in lines:
        out += feeder.feed(line)
    assert out == [] and feeder.pending  # still gathering: nothing after it yet
    (err,) = feeder.flush()
    assert err["summary"] == "ValueError: bad value" and err["time"] is None and err["line_count"] == len(lines)
    assert not feeder.pending


def test_two_tracebacks_in_a_row_are_two_events():
    tb = ["Traceback (most recent call last):", '  File "x.py", line 1, in f', "    boom()", "OSError: one"]
    recs = parse_lines(tb + [line.replace("one", "two") for line in tb])
    assert [r["summary"] for r in recs] == ["OSError: one", "OSError: two"]


def test_traceback_is_capped_but_counted():
    lines = ["Traceback (most recent call last):"] + ['  File "x.py", line %d, in f' % i for i in range(500)] + ["RecursionError: too deep"]
    (err,) = parse_lines(lines, max_error_lines=50)
    assert len(err["lines"]) == 50 and err["line_count"] == 502 and err["summary"] == "RecursionError: too deep"


def test_traceback_ends_at_another_programs_bracketed_line():
    recs = parse_lines([
        "Traceback (most recent call last):",
        '  File "x.py", line 1, in f',
        "    boom()",
        "RuntimeError: NCCL error",
        "[rank0]:[W1130 10:05:00.000 ProcessGroupNCCL.cpp:1234] Warning: destroying the process group",
        "Loading safetensors checkpoint shards: 100% Completed | 64/64 [00:58<00:00,  1.10it/s]",
    ])
    assert [(r["kind"], r.get("summary"), r.get("line_count")) for r in recs] == [
        ("error", "RuntimeError: NCCL error", 4), ("loading", None, None)]


def test_child_failure_lines_are_errors():
    recs = parse_lines([
        "[2026-11-30 10:05:01] Received sigquit from a child process. It usually means the child failed.",
        "[2026-11-30 10:05:01] SIGQUIT received. signum=None, frame=None. It usually means one child failed.",
    ])
    assert [r["kind"] for r in recs] == ["error", "error"]
    assert recs[0]["summary"].startswith("Received sigquit")


def test_feeder_keeps_the_last_tqdm_update_of_a_line():
    line = "\r".join("Loading safetensors checkpoint shards: %3d%% Completed | %d/8 [00:0%d<00:0%d,  1.00s/it]" % (n * 25 // 2, n, n, 8 - n) for n in range(9))
    recs = LogFeeder().feed(line + "\n")
    assert len(recs) == 1 and recs[0]["done"] == 8


# -- the learned fast path gives exactly the generic reading ---------------------------

# Prefixes the fast readers leave to the generic reader: every other release's, none, a
# user's logging format, another program's prefix before SGLang's.
OTHER_PREFIXES = [
    "[10:00:00 TP0] ", "[10:00:00] ", "[10:00:00 DP-1 TP3] ", "[TP0] ", "[DP1 TP8] ", "",
    "[2026-11-30 10:00:00 DP-1 TP0] ", "2026-11-30 10:00:00,123 INFO 4242 scheduler.py:900: ",
    "INFO:sglang.srt.managers.scheduler:", "sglang-1  | [2026-11-30 10:00:00 TP1] ", "[gpu_id=0] ", "[gpu=2] ",
]
DECODE_HYBRID = ("Decode batch, #running-req: 24, #full token: 233600, full token usage: 0.66, #swa token: 4096, "
                 "swa token usage: 0.10, accept len: 3.05, accept rate: 0.68, cuda graph: True, gen throughput (token/s): 239.06, #queue-req: 2")
PREFILL_MIXED = "Prefill batch(mixed #running-req: 3). #new-seq: 1, #new-token: 512, #cached-token: 0, cache hit rate: 0.00%, #queue-req: 4"


def _all_example_lines():
    messages = [PREFILL, DECODE_PLAIN, DECODE_OLD_SPEC, DECODE_2025, DECODE_0523, DECODE_0523_ITER_CAP, DECODE_HYBRID, PREFILL_MIXED]
    for prefix, msg in itertools.product(OTHER_PREFIXES, messages):
        yield prefix + msg
    for (prefix, _), msg in itertools.product(PREFIXES, messages):
        yield prefix + msg
        yield prefix + msg + "\n"
        yield prefix + msg.replace("0.00", "0.37").replace(": 1,", ": 17,")


@pytest.fixture(params=[True, False], ids=["generated", "plain"])
def parser(request):
    """A new parser, no shape learned; its fast readers generated code or plain Python."""
    return LogParser(generated=request.param)


def _items(rec):
    return None if rec is None else list(rec.items())  # the fields and their order


def _generic_feeding(lines):
    """parse_lines without learned shapes: every line read generically."""
    return parse_lines(lines, parser=LogParser(fast=False))


def test_fast_path_equals_generic_reading(parser):
    lines = list(_all_example_lines())
    for _ in range(3):  # first pass learns the shapes, later passes use them
        for line in lines:
            assert _items(parser.parse_line(line)) == _items(parser.parse_generic(line)), line
        assert [_items(r) for r in parse_lines(lines, parser=parser)] == [_items(parser.parse_generic(line)) for line in lines]
    # The shapes learned last (at most _MAX_SHAPES per anchor) are read by the fast readers.
    last = [line for line in lines if line.startswith(PREFIXES[-1][0]) and "(mixed" not in line]  # a shape not learned
    assert last and all(parser.shapes.read_line(line) not in (None, UNREAD) for line in last)


def test_learned_shapes_are_read_without_the_generic_reader(parser, monkeypatch):
    http = '[2026-11-30 10:00:00] INFO:     127.0.0.1:40052 - "POST /generate HTTP/1.1" 200 OK'
    lines = [prefix + msg for prefix, _ in PREFIXES[:4] for msg in (PREFILL, DECODE_2025, DECODE_0523_ITER_CAP)]
    lines += [http, http + "\n"]
    expected = [parser.parse_generic(line) for line in lines]  # reads them, learns their shapes
    calls = []
    generic = parser.parse_generic
    monkeypatch.setattr(parser, "parse_generic", lambda line: calls.append(line) or generic(line))
    assert [_items(parser.parse_line(line)) for line in lines] == [_items(rec) for rec in expected]
    assert [_items(r) for r in LogFeeder(parser=parser).feed_lines(iter(lines))] == [_items(r) for r in expected if r is not None]
    assert calls == []


def test_hybrid_lines_are_read_by_the_fast_readers(parser, monkeypatch):
    lines = ["[2026-11-30 10:00:00 TP0] " + DECODE_HYBRID.replace("233600", str(n)) for n in range(50)]
    expected = [_items(parser.parse_generic(line)) for line in lines]
    calls = []
    generic = parser.parse_generic
    monkeypatch.setattr(parser, "parse_generic", lambda line: calls.append(line) or generic(line))
    assert [_items(parser.parse_line(line)) for line in lines] == expected
    assert [_items(r) for r in parse_lines(lines, parser=parser)] == expected
    assert calls == [] and dict(expected[7])["token_usage"] == 0.66 and dict(expected[7])["full_token"] == 7


def test_feed_lines_equals_the_generic_reading_of_a_mixed_log(parser, monkeypatch):
    decode = "[2026-11-30 10:04:59 TP0] " + DECODE_0523
    tqdm = "\r".join("Loading safetensors checkpoint shards: %3d%% Completed | %d/4 [00:0%d<00:0%d,  1.00s/it]" % (25 * n, n, n, 4 - n) for n in range(5))
    log = [
        "[2026-11-30 10:04:58 TP0] " + PREFILL,
        decode,
        '[2026-11-30 10:04:59] INFO:     127.0.0.1:40052 - "POST /generate HTTP/1.1" 200 OK',
        decode.replace("accept len: 1.45", "accept len: 6.66"),  # a value not cached yet
        "[2026-11-30 10:05:00] ERROR: Traceback (most recent call last):",  # no interest by its letter, yet a traceback
        '  File "x.py", line 1, in f',
        "RuntimeError: boom",
        decode,  # ends the traceback
        tqdm,
        "[2026-11-30 10:05:01] INFO: shards\r" + decode,  # a line of no interest, then a decode line, one physical line
        decode + "\r\n",
        decode + "\n",
        "[2026-11-30 10:05:02] " + READY,
        "[2026-11-30 10:05:03 TP0] Decode batch, #running-req: 1, mode: Traceback, #queue-req: 0",
        "[2026-11-30 10:05:03 TP0] Decode batch, #running-req: 1, mode: Traceback, #queue-req: 0",
        "",
        "[abcdefghijklmnopqrstuvwx] Capturing batches: 50%|#####     | 1/2 [00:01<00:01,  1.00it/s]",
        "[2026-11-30 10:05:04.12x] Capturing batches: 50%|#####     | 1/2 [00:01<00:01,  1.00it/s]",
        "[2026-11-30 10:05:04 TP]0] INFO: 50% Completed | 1/2",
        "[2026-11-30 10:05:04 TP0] " + LOAD_END,
    ] + TRACEBACK + [decode, "[2026-11-30 10:05:06 DP1 TP8] " + DECODE_2025] * 3
    expected = [_items(r) for r in _generic_feeding(log)]
    assert [r[0][1] for r in expected].count("error") == 2 and [r[0][1] for r in expected].count("progress") == 2
    for _ in range(3):  # learning, then learned
        assert [_items(r) for r in parse_lines(log, parser=parser)] == expected
        feeder = LogFeeder(parser=parser)
        by_line = [r for line in log for r in feeder.feed(line)] + feeder.flush()
        assert [_items(r) for r in by_line] == expected


def _random_log(rng, count, clean=False, steady=False):
    """A log of ``count`` lines mixing every batch-line era, prefix and value form with
    lines of no interest, loading, readiness, tracebacks, tqdm bars and odd lines
    (``clean``: no traceback and no "\\r", as most of a real log is; ``steady``: one
    server's few batch-line shapes among the odd lines)."""
    messages = [PREFILL, DECODE_PLAIN, DECODE_OLD_SPEC, DECODE_2025, DECODE_0523, DECODE_0523_ITER_CAP, DECODE_HYBRID, PREFILL_MIXED]
    prefixes = [prefix for prefix, _ in PREFIXES] + ["[2026-11-30 10:00:00 DP%d TP%d] " % (d, 8 * d) for d in range(4)]
    weights = [8, 2, 1, 1, 1, 1, 1, 1, 1, 1]  # a hot prefix, as a real server has
    prefixes += OTHER_PREFIXES
    weights += [1] * len(OTHER_PREFIXES)
    if steady:
        messages, prefixes, weights = [PREFILL, DECODE_2025, DECODE_0523_ITER_CAP], [PREFIXES[2][0]], [1]

    def batch():
        msg = rng.choice(messages)
        msg = msg.replace("#token: 290", "#token: %d" % rng.randrange(100000))
        msg = msg.replace("(token/s): 41.20", "(token/s): %.2f" % rng.uniform(1, 3000))
        msg = msg.replace("accept len: 1.45", "accept len: %.2f" % rng.uniform(1, 1.5 if steady else 4))  # often not cached yet
        if rng.random() < 0.05:
            msg = msg.replace("cuda graph: True", "cuda graph: False").replace("cuda graph: False", "cuda graph: True")
        if rng.random() < 0.03:
            msg = msg.replace("#running-req: 1", "#running-req: -1")
        if rng.random() < 0.03:
            msg = msg.replace("token usage: 0.00", "token usage: 5%")
        return rng.choices(prefixes, weights)[0] + msg

    odd = [
        "[10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        "[10:00:01] INFO: the time of day only",
        "INFO:sglang.srt.server:The server is fired up and ready to roll!",
        "[TP0] " + LOAD_END,
        "ValueError: Decode batch failed",
        "Receive: obj=GenerateReqInput(text='Decode batch, #running-req: 1, #token: 2')",
        '[2026-11-30 10:00:01] INFO:     127.0.0.1:40052 - "POST /generate HTTP/1.1" 200 OK',
        '[2026-11-30 10:00:01.250] INFO:     127.0.0.1:40053 - "GET /metrics HTTP/1.1" 200 OK',
        "[2026-11-30 10:00:01 TP0] " + LOAD_END,
        "[2026-11-30 10:00:01] " + READY,
        "[2026-11-30 10:00:01 TP0] " + LOADING,
        LOADING.replace("29/64", "3/64") + "\r" + LOADING,
        "[2026-11-30 10:00:01] INFO: x\r[2026-11-30 10:00:02 TP0] " + DECODE_0523,
        "[2026-11-30 10:00:01] INFO: x\n[2026-11-30 10:00:02 TP0] " + DECODE_0523,
        "[2026-11-30 10:00:01 TP0] " + DECODE_0523 + "\r",
        "[2026-11-30 10:00:01] WARNING: a Traceback (most recent call last): in the text",
        "[2026-11-30 10:00:01] INFO: mode Traceback",
        "[2026-11-30 10:00:01] Received sigquit from a child process. It usually means the child failed.",
        "[2026-11-30 10:00:01 TP]0] INFO: y",
        "[2026-11-30 1x:00:01] INFO: z",
        "[2026-11-30 10:00:01] Xyz",
        "[٢٠٢٦-11-30 10:00:01] INFO: other digits",
        "[٢٠٢٦-11-30 10:00:01 TP0] " + DECODE_2025,
        "[abcd-11-30 10:00:01 TP0] " + DECODE_2025,
        "[2026-11-30 10:00:01.1x3 TP0] " + DECODE_2025,
        "not a log line",
        "",
        "[2026-11-30 10:00:01 TP0] Decode batch, #running-req: 1, mode: Traceback, #queue-req: 0",
    ]
    if clean:
        odd = [line for line in odd if "\r" not in line and "Traceback (most" not in line]
    lines = []
    while len(lines) < count:
        r = rng.random()
        if r < 0.7:
            lines.append(batch())
        elif r < 0.97 or clean:
            lines.append(rng.choice(odd))
        elif not steady or rng.random() < 0.05:
            lines.extend(TRACEBACK[: rng.randrange(1, len(TRACEBACK) + 1)])
    return lines[:count]


@pytest.mark.parametrize("seed", range(12))
def test_chunk_reader_equals_the_generic_reading_of_random_logs(parser, monkeypatch, seed):
    """feed_lines (the chunk reader, learning as it goes, past its budget of captured
    groups and its shapes per anchor) gives what reading every line generically gives,
    for any mix of lines and any way of cutting them into calls."""
    import random

    rng = random.Random(seed)
    log = _random_log(rng, 1500, clean=seed % 4 in (1, 2), steady=seed % 4 in (2, 3))
    expected = [_items(r) for r in _generic_feeding(log)]
    for _ in range(2):  # learning, then learned
        feeder = LogFeeder(parser=parser)
        got = []
        at = 0
        while at < len(log):
            size = rng.choice((1, 7, 64, 256, 700))
            got += feeder.feed_lines(log[at:at + size])
            at += size
        got += feeder.flush()
        assert [_items(r) for r in got] == expected


ODD_LINES = [
    "[10:00:01 TP0] " + DECODE_2025,
    "[DP-1 TP0] " + DECODE_2025,
    "[2026-11-30 10:00:01 DP-1 TP0] " + DECODE_2025,
    "2026-11-30 10:00:01,250 INFO 4242 scheduler.py:900: " + DECODE_2025,
    DECODE_2025,
    "[2026-11-30 10:00:01 TP0] [gpu_id=0] " + DECODE_PLAIN,
    "[2026-11-30 10:00:01 TP0] " + DECODE_HYBRID,
    "[2026-11-30 10:00:01 TP0] " + PREFILL_MIXED,
    "[10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    "[2026-11-30 10:00:01] INFO: x\r[2026-11-30 10:00:02 TP0] " + DECODE_2025,
    "[2026-11-30 10:00:01 TP0] " + DECODE_2025 + "\r",
    "[2026-11-30 10:00:01] WARNING: a Traceback (most recent call last): in the text",
    "[2026-11-30 10:00:01] INFO: a Traceback without its tail",
    "[abcd-11-30 10:00:01 TP0] " + DECODE_2025,
    "[٢٠٢٦-11-30 10:00:01 TP0] " + DECODE_2025,
    "[2026-11-30 10:00:01.1x3 TP0] " + DECODE_2025,
    "[2026-11-30 10:00:01.123 TP0] " + DECODE_2025,
    "[2026-11-30 10:00:01 TP]0] INFO: y",
    "[2026-11-30 10:00:01 TP0] " + DECODE_2025.replace("accept len: 1.45", "accept len: 9.87"),
    "[2026-11-30 10:00:01 TP0] " + DECODE_2025.replace("cuda graph: True", "cuda graph: False"),
    "[2026-11-30 10:00:01 TP0] " + DECODE_2025 + "\n",
    "junk\n[2026-11-30 10:00:01 TP0] " + DECODE_2025,
    "[2026-11-30 10:00:01] INFO: x\n[2026-11-30 10:00:01 TP0] " + DECODE_2025,
    "[2026-11-30 10:00:01] INFO: two\n[2026-11-30 10:00:01] INFO: lines",
    "[2026-11-30 10:00:01 TP1] " + DECODE_2025,
    "[2026-11-30 10:00:01 TP0] " + DECODE_0523,
    "[2026-11-30 10:00:01] Xyz",
    "[2026-11-30 10:00:01] " + READY,
    "[2026-11-30 10:00:01] Received sigquit from a child process. It usually means the child failed.",
    "[2026-11-30 10:00:01] Received sigquit. It usually means nothing.",
    "[2026-11-30 10:00:01] SIGQUIT received. It usually means one child failed.",
    "[2026-11-30 10:00:01] Load weight begin. avail mem=93.21 GB",
    "[2026-11-30 10:00:01] Load weight later",
    "[2026-11-30 10:00:01] The server is fired up and ready to roll!",
    "[2026-11-30 10:00:01] [gpu=3] " + DECODE_PLAIN,
    "[2026-11-30 10:00:01 TP0] Decode batchX, #running-req: 1",
    "[2026-11-30 10:00:01 TP0] Decoding step done",
    "not a log line",
    "",
    "  File \"x.py\", line 1, in f",
]


@pytest.mark.parametrize("odd", ODD_LINES)
def test_chunk_reader_on_a_steady_log_with_one_odd_line(parser, monkeypatch, odd):
    """A chunk of a steady log (shapes learned, values cached) holding one line that the
    learned shapes do not read gives what reading every line generically gives."""
    http = '[2026-11-30 10:00:01] INFO:     127.0.0.1:40052 - "POST /generate HTTP/1.1" 200 OK'
    steady = ["[2026-11-30 10:00:01 TP0] " + PREFILL, http] + ["[2026-11-30 10:00:01 TP0] " + DECODE_2025.replace("#token: 290", "#token: %d" % n) for n in range(6)]
    parse_lines(steady, parser=parser)  # learns the shapes, caches the values
    log = steady * 8 + [odd] + steady * 8
    expected = [_items(r) for r in _generic_feeding(log)]
    assert [_items(r) for r in parse_lines(log, parser=parser)] == expected


def test_chunk_reader_reads_a_steady_log_without_the_generic_reader(parser, monkeypatch):
    """Once the shapes are learned, decode, prefill and HTTP lines of a steady server,
    milliseconds or not, never reach the generic reader."""
    import random

    rng = random.Random(5)
    for prefix in ("[2026-11-30 10:00:00 TP0] ", "[2026-11-30 10:00:00.123 TP0] "):
        lines = []
        for n in range(600):
            stamp = prefix.replace("10:00:00", "10:%02d:%02d" % (n // 60 % 60, n % 60))
            if n % 6 == 0:
                lines.append(stamp + PREFILL.replace("#token: 31", "#token: %d" % n))
            elif n % 6 == 5:
                lines.append(stamp[:stamp.index(" TP0")] + '] INFO:     127.0.0.1:40052 - "POST /generate HTTP/1.1" 200 OK')
                # --log-requests and other lines of no interest, whatever their first letter
                lines.append(stamp[:stamp.index(" TP0")] + "] Receive: obj=GenerateReqInput(rid='%d', text='Decode batch')" % n)
                lines.append(stamp[:stamp.index(" TP0")] + "] Finish: obj=GenerateReqInput(rid='%d'), out={'meta_info': {}}" % n)
                lines.append(stamp + "Scheduler: Prefill batch postponed, Load weight unchanged")
                lines.append(stamp + "Decoding step done")
            else:
                lines.append(stamp + DECODE_2025.replace("#token: 290", "#token: %d" % n).replace("41.20", "%.2f" % rng.uniform(30, 90)))
        expected = [_items(r) for r in _generic_feeding(lines)]
        parse_lines(lines[:12], parser=parser)  # learns the shapes, caches the values
        calls = []
        generic = parser.parse_generic
        monkeypatch.setattr(parser, "parse_generic", lambda line, calls=calls, generic=generic: calls.append(line) or generic(line))
        assert [_items(r) for r in parse_lines(lines, parser=parser)] == expected
        assert calls == []
        monkeypatch.setattr(parser, "parse_generic", generic)


@pytest.mark.parametrize("line", [
    "[abcdefghijklmnopqrstuvwx] Capturing batches: 50%|#####     | 1/2 [00:01<00:01,  1.00it/s]",
    "[2026-11-30 10:05:04.12x] Capturing batches: 50%|#####     | 1/2 [00:01<00:01,  1.00it/s]",
    "[2026-11-30 10:05:04 TP0] INFO: x\rLoading safetensors checkpoint shards:  45% Completed | 29/64",
    "[2026-11-30 10:05:04 TP]0] Prefill batch, #new-seq: 1, #new-token: 31, #cached-token: 0, token usage: 0.00",
    "[2026-11-30 1x:05:04 TP0] " + DECODE_0523,
    "[2026-11-30 10:0\r:04 TP0] " + DECODE_0523,
    "[2026-11-30 10:05:04 TP0] " + DECODE_0523 + "\r\n",
    "[2026-11-30 10:05:04 TP0] " + DECODE_0523 + "  ",
    "[2026-11-30 10:05:04 TP0] " + DECODE_2025 + ",",
    "[2026-11-30 10:05:04 TP0] " + DECODE_0523.replace("#queue-req: 0", "#queue-req: 0\r[2026-11-30 10:05:05] x"),
    "x[2026-11-30 10:05:04 TP0] " + DECODE_0523,
    "[2026-11-30 10:05:04] Xyz",
    "[2026-11-30 10:05:04]",
    "[2026-11-30 10:05:04] ",
])
def test_fast_readers_agree_with_the_generic_reader_on_odd_lines(parser, line):
    for prefix in ("[2026-11-30 10:00:00 TP0] ", "[2026-11-30 10:00:00] "):  # the shapes these lines are near
        for msg in (DECODE_0523, DECODE_2025, PREFILL):
            parser.parse_line(prefix + msg)
    assert _items(parser.parse_line(line)) == _items(parser.parse_generic(line))


def test_fast_path_falls_back_on_a_new_value_and_on_another_shape(parser):
    base = "[2026-11-30 10:00:00 TP0] " + DECODE_0523
    parser.parse_line(base)
    parser.parse_line(base)
    odd_value = base.replace("accept len: 1.45", "accept len: 7.77")
    assert parser.parse_line(odd_value)["accept_len"] == 7.77
    reordered = "[2026-11-30 10:00:00 TP0] Decode batch, #token: 290, #running-req: 1, accept rate: 0.06, accept len: 1.45, gen throughput (token/s): 41.20, #queue-req: 0"
    rec = parser.parse_line(reordered)
    assert fields(rec, "num_token", "running_req", "accept_len", "accept_rate") == {"num_token": 290, "running_req": 1, "accept_len": 1.45, "accept_rate": 0.06}
    negative = base.replace("#token: 290", "#token: -5")
    assert parser.parse_line(negative)["num_token"] == -5


def test_define_runs_generated_source_in_its_namespace():
    from spectui.agent.logs.fastpath import define

    values = {"0.5": 0.5}
    build = define(["def build(t):", "    return {'kind': 'decode', 'x': _VALUES[t[0]], 'n': int(t[1])}"], {"_VALUES": values})
    assert build.__name__ == "build" and build.__code__.co_filename == "<spectui log build>"
    assert list(build(("0.5", "7")).items()) == [("kind", "decode"), ("x", 0.5), ("n", 7)]
    with pytest.raises(KeyError):
        build(("0.6", "7"))  # a value not cached: the readers leave the line to the generic reader


def test_parsers_learn_apart_and_feeders_in_threads_share_nothing():
    """Each feeder has its own parser: what one learns (shapes, values) the other does not
    see, and feeders driven by two threads at once read as one thread would."""
    import threading

    ms = ["[2026-11-30 10:00:%02d.%03d TP0] " % (n % 60, n % 1000) + DECODE_0523.replace("#token: 290", "#token: %d" % n) for n in range(3000)]
    plain = ["[2026-11-30 10:00:%02d DP1 TP8] " % (n % 60) + PREFILL.replace("#token: 31", "#token: %d" % n) for n in range(3000)]
    one, two = LogFeeder(), LogFeeder()
    one.feed_lines(ms[:10])
    assert one.parser.shapes.shapes["decode"] and not two.parser.shapes.shapes["decode"]
    assert not two.parser.values and one.parser.values
    expected = {id(ms): _generic_feeding(ms), id(plain): _generic_feeding(plain)}
    got = {}

    def read(lines):
        feeder = LogFeeder()
        out = []
        for at in range(0, len(lines), 50):
            out += feeder.feed_lines(lines[at:at + 50])
        got[id(lines)] = out + feeder.flush()

    threads = [threading.Thread(target=read, args=(lines,)) for lines in (ms, plain)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {k: [_items(r) for r in v] for k, v in got.items()} == {k: [_items(r) for r in v] for k, v in expected.items()}


# -- what the agent modules may import -----------------------------------------------------

AGENT = Path(logs.__file__).resolve().parents[1]


# What SGLang itself depends on, which the agent imports only inside a function (each degrades on its own).
OPTIONAL_IMPORTS = {"prometheus_client", "pynvml", "torch"}


@pytest.mark.parametrize("name", sorted(str(p.relative_to(AGENT)) for p in AGENT.rglob("*.py")))
def test_agent_module_imports_stdlib_or_relative_only(name):
    import sys

    tree = ast.parse((AGENT / name).read_text(), feature_version=(3, 8))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            continue  # relative: another agent module
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            for mod in mods:
                top = mod.split(".")[0]
                if top in OPTIONAL_IMPORTS:
                    assert node.col_offset > 0, "%s imports %s at module level" % (name, top)
                    continue
                assert top in sys.stdlib_module_names or top == "__future__", "%s imports %s" % (name, mod)
