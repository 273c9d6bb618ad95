"""spectui starts and lists the real SGLang 0.5.23 server on this CPU, and says why real launches fail (its stop:
test_switch.py)."""
from __future__ import annotations

import asyncio
import time

import pytest

from spectui.agent.logs.parser import LogParser, parse_line
from spectui.core.profiles import load_profiles
from spectui.core.servers import ServerControl
from spectui.core.session import HostTarget, open_session
from tests.real_server.conftest import normal_priority
from tests.support import real_sglang as rs
from tests.support.sshd import free_port

pytestmark = pytest.mark.xdist_group("real_server")


def test_a_profile_starts_the_real_server_and_lists_it_ready(real_server):
    started = real_server.started["server"]
    assert started["state"] == "ready" and started["origin"] == "spectui"
    assert started["gpus"] == [] and started["port"] == real_server.started["port"]
    assert started["argv"][0] == real_server.python  # the server runs under the host's --python
    listed = {s["name"]: s for s in real_server.cli_json("servers", "list")["servers"]}
    assert listed["real-cpu"]["state"] == "ready" and listed["real-cpu"]["pid"] == started["pid"]


def test_the_loading_and_ready_times_agree_with_the_real_log(real_server):
    r = real_server.record()
    lines = open(r["log_path"], encoding="utf-8", errors="replace").read().splitlines()
    records = [rec for rec in map(parse_line, lines) if rec]
    load_end = next(rec for rec in records if rec["kind"] == "load_end")
    ready = next(rec for rec in records if rec["kind"] == "ready")
    assert r["progress"] == {"percent": 100, "done": 1, "total": 1}  # "Loading safetensors checkpoint shards"
    assert r["load_s"] == pytest.approx(load_end["elapsed"], abs=0.05)  # "Load weight end. elapsed=... s"
    # ready: the real "The server is fired up" line (a second's resolution) against the record's clock
    logged = time.mktime(time.strptime(ready["time"], "%Y-%m-%d %H:%M:%S"))
    assert logged - 1.0 <= r["ready_at"] <= logged + 5.0, (r["ready_at"], ready)


def test_every_scheduler_line_of_the_real_log_is_parsed(real_server):
    port = real_server.started["port"]
    for i in range(3):
        out = rs.post_json(port, "/generate", {"text": "def parse(line%d):" % i,
                                               "sampling_params": {"max_new_tokens": 90, "ignore_eos": True}})
        assert out["meta_info"]["completion_tokens"] == 90
    path = real_server.record()["log_path"]
    deadline = time.monotonic() + 30
    while True:  # the decode line is written every 40 tokens (sglang 0.5.23 wheel, server_args decode_log_interval)
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
        batch = [line for line in lines if "Prefill batch" in line or "Decode batch" in line]
        if any("Decode batch" in line for line in batch) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert any("Decode batch" in line for line in batch) and any("Prefill batch" in line for line in batch), batch
    fast = LogParser()
    for line in batch:
        one = parse_line(line)
        assert one is not None and one["kind"] in ("prefill", "decode"), line
        assert fast.parse_line(line) == one, line  # the learned fast reader reads it as the generic one
        numbers = [k for k, v in one.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        words = line.count(": ")  # every "name: value" of the line became a field
        assert len(numbers) + sum(isinstance(v, bool) for v in one.values()) >= words, (line, one)


def test_a_model_path_that_does_not_exist_fails_the_real_launch_in_one_sentence(real_server):
    real_server.profile("real-nomodel", free_port())
    text = (real_server.profiles / "real-nomodel.yaml").read_text()
    (real_server.profiles / "real-nomodel.yaml").write_text(text.replace(real_server.model, "/nonexistent/tiny-model"))
    try:
        r = real_server.cli("servers", "start", "real-nomodel", timeout=240)
        said = [line for line in r.stderr.splitlines() if line.startswith("spectui:")]
        assert r.returncode != 0 and len(said) == 1, r.stdout + r.stderr
        assert "/nonexistent/tiny-model" in said[0] and "Traceback" not in said[0], said
        record = real_server.record("real-nomodel")
        assert record["state"] == "failed" and record["reason"] and "\n" not in record["reason"], record
    finally:
        real_server.cli("servers", "stop", "real-nomodel", "--yes", timeout=60)


def test_a_flag_the_real_parser_refuses_is_said_before_and_after_a_launch(real_server):
    real_server.profile("real-badflag", free_port(), **{"attention-backend": "no-such-backend"})
    with normal_priority():  # the check imports SGLang's parser; the launch below dies at SGLang's own parse
        r = real_server.cli("servers", "start", "real-badflag", timeout=120)
    assert r.returncode != 0 and "no-such-backend" in r.stderr and "torch_native" in r.stderr, r.stderr
    assert not (real_server.state / "servers" / "real-badflag.json").exists()  # refused before any launch

    async def launch_unchecked():  # as a profile written for another release would be, past the check
        session = await open_session(HostTarget(kind="local", python=real_server.python,
                                                state_dir=str(real_server.state)))
        try:
            ctl = ServerControl(session)
            await ctl.start(load_profiles([real_server.profiles]).get("real-badflag"))
            return await ctl.wait("real-badflag", states=["failed", "crashed", "stopped"], timeout_s=120)
        finally:
            await session.close()
    with normal_priority():
        ended = asyncio.run(launch_unchecked())
    assert ended["state"] == "failed", ended
    reason = ended["reason"] or ""
    assert "--attention-backend" in reason and "no-such-backend" in reason and "\n" not in reason, reason

