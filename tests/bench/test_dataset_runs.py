"""Benchmarks on real prompts against the simulated host: the shipped MT-Bench set end to end, and a
ShareGPT file read on the host by the runner."""

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from spectui.agent.bench.runner import Runner
from spectui.core.bench import Preset, start_run
from spectui.core.history import HistoryStore
from spectui.core.profiles import load_profiles
from spectui.core.servers import ServerControl
from tests.bench.conftest import write_sim_profile
from tests.support.sshd import free_port

pytestmark = pytest.mark.timeout(240)

SHAREGPT = Path(__file__).parent / "dataset_fixtures" / "sharegpt_v3_excerpt.json"
MT_BENCH_SHA256 = "119565adbab82227089cefdb44c8d7e2cf04dc0a0ec233634c82e7d4e2a944f7"  # SOURCE.txt's


async def ready(session, name):
    sw = await ServerControl(session).switch(load_profiles().get(name), timeout_s=90)
    assert sw["server"]["state"] == "ready", sw
    return sw["server"]


async def test_a_demo_benchmark_on_the_shipped_prompts_records_them_in_history(env, demo):
    write_sim_profile(env["profiles"], "eagle", port=free_port(), speculative="EAGLE3")
    await ready(demo, "eagle")
    preset = Preset(name="chat", dataset="mt-bench", input_len=256, output_len=32, num_prompts=3, concurrency=(1,),
                    warmup=1, repeats=1, seed=4)
    result = await (await start_run(demo, preset, server="eagle")).wait()
    assert result.state == "done", result.reason
    assert result.stats["completed"] == 3 and all(r["prompt_tokens"] for r in result.records)
    dataset = result.summary["dataset"]
    assert dataset["name"] == "mt-bench" and dataset["sha256"] == MT_BENCH_SHA256
    store = HistoryStore()
    saved = store.run(store.save_run(result))
    assert saved["summary"]["dataset"] == dataset and saved["preset"]["dataset"] == "mt-bench"


def _runner_spec(port, path, count=3):
    return {"run_id": "file-run", "engine": "spectui", "output_len": 16, "concurrency": 2, "seed": 5,
            "sampling": {"temperature": 0.0, "ignore_eos": True}, "server": {"port": port, "name": "base"},
            "dataset_file": {"name": "sharegpt", "path": str(path), "count": count, "warmup": 1, "seed": 5,
                             "max_words": 100000},
            "dataset": {"name": "sharegpt", "path": str(path)}}


async def test_the_runner_samples_a_sharegpt_file_on_the_host_and_records_its_hash(env, demo, tmp_path):
    port = free_port()
    write_sim_profile(env["profiles"], "base", port=port)
    await ready(demo, "base")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    runner = Runner(str(run_dir), _runner_spec(port, SHAREGPT))
    assert runner.status["total"] == 3 and runner.status["warmup_total"] == 1
    assert await asyncio.to_thread(runner.run) == 0
    status = json.loads((run_dir / "status.json").read_text())
    summary = json.loads((run_dir / "summary.json").read_text())
    records = [json.loads(line) for line in (run_dir / "requests.jsonl").read_text().splitlines()]
    assert status["state"] == "done" and status["done"] == status["total"] == 3, status
    assert len(records) == 3 and all(r["ok"] and r["prompt_tokens"] >= 2 for r in records)
    assert summary["dataset"]["sha256"] == hashlib.sha256(SHAREGPT.read_bytes()).hexdigest()
    assert summary["dataset"]["name"] == "sharegpt" and summary["dataset"]["entries"] == 10

    missing = tmp_path / "nowhere" / "ShareGPT.json"
    run_dir2 = tmp_path / "run2"
    run_dir2.mkdir()
    assert await asyncio.to_thread(Runner(str(run_dir2), _runner_spec(port, missing)).run) == 1
    status = json.loads((run_dir2 / "status.json").read_text())
    assert status["state"] == "failed"
    assert status["reason"].startswith(f"the dataset file {missing} does not exist on this host;"), status
    assert (run_dir2 / "requests.jsonl").read_text() == ""
