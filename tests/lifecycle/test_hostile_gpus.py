"""GPUs held, or taken, while spectui acts: a crashed server's ranks that a GPU still lists after they are gone
are nobody to "stop", and of two switches to the same GPUs at once the one that lost says so and fails."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spectui.cli.main import main
from spectui.sim import vgpu
from tests.lifecycle.conftest import group_pids, write_profile

ROOT = Path(__file__).resolve().parents[2]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def kill_recorded(state_dir):
    for f in (state_dir / "servers").glob("*.json"):
        try:
            os.killpg(json.loads(f.read_text())["pgid"], signal.SIGKILL)
        except (ProcessLookupError, KeyError, TypeError, ValueError):
            pass


def test_a_crashed_servers_gone_ranks_are_not_named_as_foreign_gpu_holders(profiles_dir, state_dir, capsys):
    # a GPU that lists a process for a while after it ended, as a driver frees a dead context a moment later
    host = vgpu.init_host(str(state_dir))
    data = json.loads(host.read_text())
    data["release_delay_s"] = 600.0
    host.write_text(json.dumps(data))
    write_profile(profiles_dir, "alpha", gpus=(0, 1))
    write_profile(profiles_dir, "beta", gpus=(0, 1))
    demo = ["--demo", "--state-dir", str(state_dir)]
    try:
        code, out, err = run(capsys, "servers", "start", "alpha", *demo)
        assert code == 0, err
        record = json.loads((state_dir / "servers" / "alpha.json").read_text())
        ranks = group_pids(record["pgid"])
        assert ranks
        os.killpg(record["pgid"], signal.SIGKILL)  # it crashes: every rank gone at once
        deadline = time.monotonic() + 30
        while group_pids(record["pgid"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not group_pids(record["pgid"])
        code, out, err = run(capsys, "servers", "start", "beta", *demo, "--no-wait")
        assert not any(str(pid) in err for pid in ranks), err
        assert "spectui did not start" not in err and code == 0, err
    finally:
        run(capsys, "servers", "stop", *demo)
        kill_recorded(state_dir)


def test_of_two_switches_to_the_same_gpus_the_loser_says_so_and_fails(profiles_dir, state_dir, capsys):
    write_profile(profiles_dir, "slow", gpus=(2, 3), sim={"load-time": 8.0})
    write_profile(profiles_dir, "quick", gpus=(2, 3))
    demo = ["--demo", "--state-dir", str(state_dir)]
    first = subprocess.Popen([sys.executable, "-m", "spectui", "servers", "switch", "slow", *demo],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(ROOT),
                             env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        record = state_dir / "servers" / "slow.json"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the first switch has started its server, which loads
            try:
                if json.loads(record.read_text()).get("state") == "loading":
                    break
            except (OSError, ValueError):
                pass
            assert first.poll() is None, first.communicate()
            time.sleep(0.05)
        else:
            pytest.fail("the first switch's server never began loading")
        code, out, err = run(capsys, "servers", "switch", "quick", *demo)  # the second switch stops it
        assert code == 0 and "quick: ready" in out, (out, err)
        out, err = first.communicate(timeout=120)
        said = [line for line in err.splitlines() if line.strip() and not line.startswith("[")]
        assert first.returncode != 0 and "slow: stopped" not in out, (out, err)
        assert len(said) == 1 and "another switch won" in said[0] and "quick" in said[0], err
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
        run(capsys, "servers", "stop", *demo)
        kill_recorded(state_dir)
