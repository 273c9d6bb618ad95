"""``spectui bench`` on a server that serves someone else's requests too: ``--require-idle`` refuses in one
sentence; without it the run is measured and its figures carry the foreign-load mark."""

from __future__ import annotations

import json

import pytest

from tests.bench.conftest import write_preset, write_sim_profile
from tests.bench.test_cli_bench import run
from tests.bench.test_foreign_load import Foreign
from tests.sim.simproc import wait_for
from tests.support.sshd import free_port

pytestmark = pytest.mark.timeout(240)


def test_require_idle_refuses_and_a_shared_run_is_marked(env, state_dir, capsys):
    port = free_port()
    write_sim_profile(env["profiles"], "base", port=port)
    preset = write_preset(env["presets"], "quick", dataset="random", input_len=32, output_len=48, num_prompts=8,
                          concurrency=2, warmup=0, repeats=1, seed=2)
    demo = ["--demo", "--state-dir", str(state_dir)]
    try:
        code, out, err = run(capsys, "servers", "start", "base", *demo)
        assert code == 0, err
        with Foreign(port, streams=2, max_new_tokens=200) as foreign:
            assert wait_for(lambda: len(foreign.arrivals) > 10, timeout=30)
            code, out, err = run(capsys, "bench", *demo, "--preset", str(preset), "--require-idle")
            assert code == 1 and "Traceback" not in err
            assert "not sent by spectui" in err and "--require-idle" in err, err
            assert len(err.strip().splitlines()) == 1, err
            code, out, err = run(capsys, "bench", *demo, "--preset", str(preset))
            assert code == 0, err
            assert "‡ shared its server:" in out and "were not this run's" in out, out
        code, out, err = run(capsys, "history", "list")
        assert code == 0 and "% foreign load" in out, out
        code, out, err = run(capsys, "bench", *demo, "--preset", str(preset), "--require-idle", "--json")
        assert code == 0, err
        (r,) = json.loads(out)["runs"]
        assert r["foreign_load"]["known"] and not r["foreign_load"]["marked"], r["foreign_load"]
    finally:
        run(capsys, "servers", "stop", *demo)
