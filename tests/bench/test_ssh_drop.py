"""A benchmark survives an SSH drop mid-run; its results arrive after reconnecting (real sshd)."""

import asyncio
import os
import signal
import time

import pytest

from spectui.core.bench import BenchClient, Preset, ProgressBoard, start_run, watch_running
from spectui.core.bench.runs import collect_unsaved
from spectui.core.history import HistoryStore
from spectui.core.profiles import load_profiles
from spectui.core.servers import ServerControl
from spectui.core.session import open_session
from tests.bench.conftest import kill_everything, write_sim_profile
from tests.support.sshd import free_port

pytestmark = [pytest.mark.sshd, pytest.mark.timeout(240)]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


async def test_run_survives_a_dropped_connection_and_results_arrive_after_reconnect(sshd, env, state_dir):
    write_sim_profile(env["profiles"], "base", port=free_port())
    preset = Preset(name="drop", dataset="reasoning", input_len=64, output_len=120, num_prompts=6, concurrency=(1,),
                    warmup=0, repeats=1, seed=4)
    s = await open_session(sshd.host_target(state_dir))
    try:
        sw = await ServerControl(s).switch(load_profiles().get("base"), timeout_s=90)
        assert sw["server"]["state"] == "ready"
        handle = await start_run(s, preset, server="base")
        runner_pid = handle.started["pid"]
        assert (await BenchClient(s).status(handle.run_id))["state"] in ("starting", "running")
        # wait for the first records to arrive over this connection
        t0 = time.monotonic()
        while not await handle.collector.poll(s) and len(handle.collector.records) < 1:
            assert time.monotonic() - t0 < 60
            await asyncio.sleep(0.2)
        before = len(handle.collector.records)
        assert 1 <= before < 6
        # the connection drops: every per-connection sshd process is killed
        for p in sshd.session_pids():
            os.kill(p, signal.SIGKILL)
        await asyncio.wait_for(s.client.closed.wait(), 10)
        await s.close()
        assert alive(runner_pid), "the benchmark died with the connection"

        s = await open_session(sshd.host_target(state_dir))
        board = ProgressBoard()
        s.client.add_listener(board.on_event)
        assert await watch_running(s) == [handle.run_id]  # live progress again on the new connection
        result = await handle.wait(session=s)  # continues from the offset it had
        assert result.state == "done", result.reason
        assert sorted(r["i"] for r in result.records) == list(range(6))  # none lost, none twice
        assert result.stats["completed"] == 6 and result.stats["output_tokens"] == 6 * 120
        # the progress events are pushed by a watcher on the host: they follow within a tick or two
        t0 = time.monotonic()
        while board.runs[handle.run_id].state != "done" and time.monotonic() - t0 < 15:
            await asyncio.sleep(0.1)
        assert board.runs[handle.run_id].state == "done" and board.runs[handle.run_id].done == 6

        # a console that never saw the end picks finished runs up from the host
        store = HistoryStore()
        saved = await collect_unsaved(s, store)
        assert [r.run_id for r in saved] == [handle.run_id]
        assert store.runs()[0]["stats"]["completed"] == 6
        assert await collect_unsaved(s, store) == []
    finally:
        await s.close()
        kill_everything(state_dir)
