"""`spectui bench PROFILE --sweep` over a real sshd whose connection drops while a variant is measured:
it reconnects, follows the run on, and the comparison ends complete with the variant named."""

import asyncio

import pytest

from spectui.core.history import HistoryStore
from tests.bench.test_bench_reconnect import cli, drop_once_measuring, host_args
from tests.bench.conftest import kill_everything, write_preset, write_sim_profile
from tests.support.sshd import free_port

pytestmark = [pytest.mark.sshd, pytest.mark.timeout(300)]


async def test_a_sweep_reconnects_after_a_drop_and_finishes(sshd, env, state_dir, capsys):
    write_sim_profile(env["profiles"], "base", port=free_port())
    (env["profiles"] / "ng.yaml").write_text(
        "name: ng\nextends: base\nargs:\n  speculative-algorithm: NGRAM\n  speculative-num-draft-tokens: 8\n")
    preset = write_preset(env["presets"], "drop", dataset="reasoning", input_len=64, output_len=120, num_prompts=6,
                          concurrency=1, warmup=0, repeats=1, seed=4)
    where = host_args(sshd, state_dir)
    try:
        bench = asyncio.create_task(cli("bench", "ng", *where, "--sweep", "num-draft-tokens=4", "--preset",
                                        str(preset), "--no-stop-after"))
        run_id = await drop_once_measuring(sshd, state_dir)
        code = await asyncio.wait_for(bench, 200)
        out, err = capsys.readouterr()
        assert code == 0, err
        assert f"Run {run_id} goes on on the host; reconnecting" in err and "reconnected to" in err
        (comp,) = HistoryStore().comparisons()
        assert comp["state"] == "complete" and "pending_run_ids" not in comp
        rows = {r["name"]: r for r in comp["profiles"]}
        assert set(rows) == {"base", "ng.ndt4"}
        assert rows["ng.ndt4"]["variant"]["display_name"] == "ng[num-draft-tokens=4]"
        assert all(r["cells"]["1"]["n"] == 1 and r["cells"]["1"]["interrupted"] == 0 for r in rows.values())
        assert run_id in comp["run_ids"]
    finally:
        kill_everything(state_dir)
