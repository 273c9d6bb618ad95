"""The runner against the simulated host: its figures against the simulator's own counters."""

import asyncio
import json
import os
import signal
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from spectui.core.bench import BenchClient, Preset, ProgressBoard, start_run
from spectui.core.bench.runs import RunCollector, result_from
from spectui.core.history import HistoryStore
from spectui.core.profiles import load_profiles
from spectui.core.servers import ServerControl
from spectui.core.session import HostTarget, open_session
from tests.bench.conftest import write_sim_profile
from tests.support.sshd import free_port

pytestmark = pytest.mark.timeout(240)


def sim_counters(port):
    """The simulator's /metrics, summed over label sets, read here without spectui's parser."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[s.name] = out.get(s.name, 0.0) + s.value
    return out


async def ready(session, name):
    sw = await ServerControl(session).switch(load_profiles().get(name), timeout_s=90)
    assert sw["server"]["state"] == "ready", sw
    return sw["server"]


async def test_tok_s_and_accept_length_agree_with_the_simulator_counters(env, demo):
    port = free_port()
    write_sim_profile(env["profiles"], "eagle", port=port, speculative="EAGLE3")
    await ready(demo, "eagle")
    preset = Preset(name="agree", dataset="reasoning", input_len=256, output_len=128, num_prompts=5,
                    concurrency=(1,), warmup=0, repeats=1, seed=3)
    board = ProgressBoard()
    demo.client.add_listener(board.on_event)
    before = sim_counters(port)
    handle = await start_run(demo, preset, server="eagle")
    result = await handle.wait()
    after = sim_counters(port)
    assert result.state == "done", result.reason
    # the run's last progress event comes on its own, beside the results it was collected from: on a loaded
    # machine a moment after them
    deadline = time.monotonic() + 10
    while getattr(board.runs.get(handle.run_id), "state", None) != "done" and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    last = board.runs[handle.run_id]  # the live progress the console shows ended on the run's own figures
    assert last.state == "done" and last.done == last.total == 5 and last.errors == 0
    assert last.accept_length == pytest.approx(result.stats["accept_length"]["per_request"], abs=1e-3)
    assert last.tok_s == pytest.approx(result.stats["output_tok_s"], rel=0.05)

    d = {k: after[k] - before.get(k, 0.0) for k in after}
    gen = d["sglang:generation_tokens_total"]
    verify = d["sglang:spec_verify_calls_total"]
    server_busy_s = d["sglang:e2e_request_latency_seconds_sum"]
    s = result.stats
    assert s["completed"] == 5 and s["errors"] == 0
    assert s["output_tokens"] == gen == 5 * 128
    # at concurrency 1 the server is busy with one request at a time: its own rate is tokens / request time
    assert s["output_tok_s"] == pytest.approx(gen / server_busy_s, rel=0.02)
    assert s["accept_length"]["per_request"] == pytest.approx(gen / verify, rel=0.02)
    assert s["accept_length"]["metrics"] == pytest.approx(gen / verify, rel=0.02)
    # and what a run records per request
    rec = result.records[0]
    assert rec["ok"] and rec["ttft_ms"] > 0 and rec["e2e_ms"] > rec["ttft_ms"]
    assert len(rec["itl_ms"]) == len(rec["chunk_tokens"]) and sum(rec["chunk_tokens"]) + rec["first_chunk_tokens"] == 128
    assert rec["spec"]["keys"] == "spec_num_correct_drafts" and rec["spec"]["verify_ct"] > 0
    assert sum(rec["spec"]["histogram"]) == rec["spec"]["verify_ct"]
    assert s["accept_rate"]["formula"] == "correct drafts / proposed drafts"
    assert sum(s["correct_drafts_histogram"]) == verify
    # the flush before the run reset the server's cumulative figure, so it matches this run, and says so
    assert s["accept_length"]["server_cumulative"] == pytest.approx(gen / verify, rel=0.02)
    assert "flush_cache" in s["accept_length"]["server_cumulative_since"]
    assert result.summary["flush"]["flushed"] is True
    assert result.speculative["algorithm"] == "EAGLE3" and result.speculative["draft_tokens"] == 4
    # acceptance per draft position from the same requests: one position per proposed draft, and the
    # correct drafts it implies are the ones the server counted (accept length - 1 = correct / verify steps)
    pos = s["acceptance_by_position"]
    assert pos["width"] == result.speculative["draft_tokens"] - 1 and pos["verify_steps"] == verify
    assert pos["positions"] == sorted(pos["positions"], reverse=True)
    correct = sum(r["spec"]["correct_drafts"] for r in result.records)
    assert pos["accept_length"] == pytest.approx(1 + correct / verify, rel=1e-9)


def overlap(records):
    """Most requests in flight at once, from their start times and latencies."""
    events = []
    for r in records:
        events += [(r["t_start"], 1), (r["t_start"] + r["e2e_ms"] / 1000.0, -1)]
    cur = best = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):
        cur += step
        best = max(best, cur)
    return best


async def test_concurrency_and_poisson_rate(env, demo):
    write_sim_profile(env["profiles"], "base", port=free_port())
    await ready(demo, "base")
    closed = Preset(name="c4", dataset="random", input_len=64, output_len=24, num_prompts=8, concurrency=(4,),
                    warmup=2, repeats=1, seed=5)
    r1 = await (await start_run(demo, closed, server="base")).wait()
    assert r1.state == "done" and r1.stats["completed"] == 8
    assert overlap(r1.records) == 4
    assert {rec["i"] for rec in r1.records} == set(range(8))

    rate = Preset(name="poisson", dataset="random", input_len=64, output_len=24, num_prompts=6, concurrency=(2,),
                  request_rate=5.0, warmup=0, repeats=1, seed=5)
    r2 = await (await start_run(demo, rate, server="base")).wait()
    assert r2.state == "done" and r2.stats["completed"] == 6
    assert overlap(r2.records) <= 2
    starts = sorted(rec["t_start"] for rec in r2.records)
    assert starts[-1] - starts[0] > 0.3  # arrivals spread over time, not all at once


async def test_an_interrupted_run_is_stored_as_interrupted(env, demo):
    write_sim_profile(env["profiles"], "base", port=free_port())
    await ready(demo, "base")
    store = HistoryStore()
    preset = Preset(name="long", dataset="reasoning", input_len=64, output_len=200, num_prompts=6,
                    concurrency=(1,), warmup=0, repeats=1, seed=2)
    handle = await start_run(demo, preset, server="base")
    client = BenchClient(demo)
    t0 = time.monotonic()
    while (await client.status(handle.run_id)).get("done", 0) < 1:
        assert time.monotonic() - t0 < 60
        await asyncio.sleep(0.2)
    partial = await handle.cancel()
    assert partial.state == "interrupted" and partial.reason == "cancelled"
    assert 1 <= partial.stats["completed"] < 6
    rid = store.save_run(partial)
    saved = store.run(rid)
    assert saved["state"] == "interrupted" and saved["stats"]["completed"] == partial.stats["completed"]
    assert [e.state for e in store.entries() if e.id == str(rid)] == ["interrupted"]

    # a runner killed outright (no chance to write its ending) is settled as interrupted too
    handle2 = await start_run(demo, preset, server="base")
    st = await client.status(handle2.run_id)
    t0 = time.monotonic()
    while st["state"] != "running":
        assert time.monotonic() - t0 < 60
        await asyncio.sleep(0.1)
        st = await client.status(handle2.run_id)
    os.kill(st["pid"], signal.SIGKILL)
    col = await RunCollector(handle2.run_id).wait(demo, poll_s=0.1)
    result = result_from(col, host="demo")
    assert result.state == "interrupted" and "ended before the run finished" in result.reason


async def test_sglang_engine_runs_the_host_tool_and_imports_its_output(env, demo, tmp_path, monkeypatch):
    """The host's sglang.benchmark.serving (a stand-in here: no sglang with torch) gets its real flags."""
    fake = tmp_path / "fakesglang" / "sglang" / "benchmark"
    fake.mkdir(parents=True)
    (fake.parent / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    row = json.loads((Path(__file__).parent / "fixtures" / "sglang_serving.jsonl").read_text().splitlines()[0])
    (fake / "serving.py").write_text(
        "import argparse, json, sys\n"
        "p = argparse.ArgumentParser()\n"
        "for f in ('--backend', '--host', '--port', '--dataset-name', '--num-prompts', '--random-input-len',\n"
        "          '--random-output-len', '--random-range-ratio', '--max-concurrency', '--request-rate',\n"
        "          '--seed', '--warmup-requests', '--output-file', '--model'):\n"
        "    p.add_argument(f)\n"
        "p.add_argument('--output-details', action='store_true')\n"
        "a = p.parse_args()\n"
        f"row = json.loads({json.dumps(json.dumps(row))})\n"
        "row['argv'] = sys.argv[1:]\n"
        "open(a.output_file, 'a').write(json.dumps(row) + '\\n')\n")
    monkeypatch.setenv("PYTHONPATH", str(fake.parent.parent) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    session = await open_session(HostTarget.demo(str(demo.target.state_dir)))  # an agent that sees PYTHONPATH
    try:
        port = free_port()
        write_sim_profile(env["profiles"], "base", port=port)
        await ready(session, "base")
        engines = await BenchClient(session).engines(session.hello["python"])
        assert engines["module"] == "sglang.benchmark.serving"
        preset = Preset(name="rnd", dataset="random", input_len=128, output_len=32, num_prompts=10,
                        concurrency=(4,), warmup=2, repeats=1, seed=9)
        handle = await start_run(session, preset, server="base", engine="sglang")
        argv = handle.started["sglang_argv"]
        assert argv[1:3] == ["-m", "sglang.benchmark.serving"]
        pairs = dict(zip(argv[3::2], argv[4::2]))
        assert pairs["--backend"] == "sglang" and pairs["--port"] == str(port) and pairs["--host"] == "127.0.0.1"
        assert pairs["--dataset-name"] == "random" and pairs["--num-prompts"] == "10"
        assert pairs["--random-input-len"] == "128" and pairs["--random-output-len"] == "32"
        assert pairs["--max-concurrency"] == "4" and pairs["--seed"] == "9" and pairs["--warmup-requests"] == "2"
        assert "--output-details" in argv and "--request-rate" not in argv
        result = await handle.wait()
        assert result.state == "done", result.reason
        assert result.engine == "sglang"
        assert result.sglang_result["argv"][-2] == "--output-file"
        s = result.stats
        assert s["source"] == "sglang.benchmark.serving"
        assert s["output_tok_s"] == row["output_throughput"]
        assert s["accept_length"]["server_cumulative"] == row["accept_length"]
        assert s["accept_length"]["per_request"] is None  # the tool gives no per-request accept length
    finally:
        await session.close()


async def test_a_server_crash_mid_run_ends_it_interrupted_with_the_reason(env, demo):
    write_sim_profile(env["profiles"], "fragile", port=free_port(), extra_sim={"crash-after": 2.5})
    await ready(demo, "fragile")
    preset = Preset(name="long", dataset="random", input_len=32, output_len=150, num_prompts=8, concurrency=(2,),
                    warmup=0, repeats=1, seed=1)
    result = await (await start_run(demo, preset, server="fragile")).wait()
    assert result.state == "interrupted", (result.state, result.reason)
    assert "stopped answering" in result.reason
    assert result.stats["completed"] < 8
