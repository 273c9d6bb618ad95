"""`spectui bench` over a real sshd whose connection drops mid-run: it reconnects and follows the run
on, or ends naming the exact command that collects it; a comparison collected later links the run."""

import asyncio
import json
import os
import shlex
import signal
import sys
import time

import pytest

from spectui.cli.main import main
from spectui.core.history import HistoryStore
from tests.bench.conftest import kill_everything, write_preset, write_sim_profile
from tests.support.sshd import free_port

pytestmark = [pytest.mark.sshd, pytest.mark.timeout(300)]


def host_args(sshd, state_dir) -> list[str]:
    return ["--host", sshd.dest, *sshd.cli_args(), "--python", sys.executable, "--sim", "--state-dir", str(state_dir)]


def slow_preset(env) -> str:
    return str(write_preset(env["presets"], "drop", dataset="reasoning", input_len=64, output_len=120, num_prompts=6,
                            concurrency=1, warmup=0, repeats=1, seed=4))


async def drop_once_measuring(sshd, state_dir) -> str:
    """Wait for a run's first measured request on the host, then kill every sshd connection process."""
    t0 = time.monotonic()
    while True:
        assert time.monotonic() - t0 < 120, "no run started measuring"
        for records in (state_dir / "bench").glob("*/requests.jsonl"):
            if records.read_bytes().count(b"\n") >= 1:
                for pid in sshd.session_pids():
                    os.kill(pid, signal.SIGKILL)
                return records.parent.name
        await asyncio.sleep(0.1)


async def cli(*argv) -> int:
    return await asyncio.to_thread(main, list(argv))


async def test_single_run_reconnects_after_a_drop_and_finishes(sshd, env, state_dir, capsys):
    write_sim_profile(env["profiles"], "base", port=free_port())
    where = host_args(sshd, state_dir)
    try:
        assert await cli("servers", "start", "base", *where) == 0
        capsys.readouterr()
        bench = asyncio.create_task(cli("bench", *where, "--preset", slow_preset(env), "--server", "base", "--json"))
        run_id = await drop_once_measuring(sshd, state_dir)
        code = await asyncio.wait_for(bench, 180)
        out, err = capsys.readouterr()
        assert code == 0, err
        assert f"Run {run_id} goes on on the host; reconnecting" in err and "reconnected to" in err
        (r,) = json.loads(out)["runs"]
        assert r["run_id"] == run_id and r["state"] == "done"
        assert sorted(rec["i"] for rec in r["records"]) == [0, 1, 2, 3, 4, 5]  # none lost, none twice
        assert r["stats"]["completed"] == 6 and r["stats"]["output_tokens"] == 720
        assert HistoryStore().run(r["id"])["run_id"] == run_id
    finally:
        kill_everything(state_dir)


async def test_a_comparison_left_on_the_host_is_collected_and_links_the_run(sshd, env, state_dir, capsys):
    write_sim_profile(env["profiles"], "base", port=free_port())
    where = host_args(sshd, state_dir)
    try:
        bench = asyncio.create_task(cli("bench", *where, "--profiles", "base", "--preset", slow_preset(env),
                                        "--reconnect-for", "0", "--no-stop-after"))
        run_id = await drop_once_measuring(sshd, state_dir)
        code = await asyncio.wait_for(bench, 120)
        out, err = capsys.readouterr()
        assert code == 1
        last = err.strip().splitlines()[-1]
        assert last.startswith("spectui: ") and f"run {run_id} goes on on the host; collect it with: " in last
        command = shlex.split(last.split("collect it with: ", 1)[1])
        assert command[:4] == ["spectui", "bench", "--collect", run_id]

        store = HistoryStore()
        (comp,) = store.comparisons()
        assert comp["state"] == "interrupted" and comp["pending_run_ids"] == [run_id]
        assert comp["run_ids"] == [] and comp["profiles"][0]["cells"] == {}

        assert await cli(*command[1:]) == 0  # waits for the run to end, saves it, links it
        out, err = capsys.readouterr()
        assert "1 run(s) added" in out and f"comparison {comp['id']} now includes them" in out
        linked = store.comparison(comp["id"])
        assert linked["run_ids"] == [run_id] and "pending_run_ids" not in linked
        cell = linked["profiles"][0]["cells"]["1"]
        assert cell["runs"] == [run_id] and cell["n"] == 1 and cell["interrupted"] == 0
        (run,) = store.runs(comparison_key=comp["key"])
        assert run["run_id"] == run_id and run["state"] == "done" and run["stats"]["completed"] == 6
    finally:
        kill_everything(state_dir)
