"""A server's log path that never ends or never opens holds up nothing: a FIFO put in its place is refused
by name (``servers list``, ``logs`` and ``stop`` answer), a link to /dev/zero is refused without being read,
and a tail is read from the end of the log, bounded in lines and bytes, whatever ``--lines`` asks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lifecycle.conftest import write_profile

ROOT = Path(__file__).resolve().parents[2]
# the address space a spectui command (and the agent it starts) gets here: far above what it needs, far below
# what reading /dev/zero into memory takes, so that a regression fails this test instead of the machine
MEMORY_LIMIT = 3 * 1024 ** 3


def spectui(*argv, timeout=120):
    """``spectui ARGV`` in a process of its own (its agent too) under :data:`MEMORY_LIMIT`: (code, out, err)."""
    cmd = ["prlimit", f"--as={MEMORY_LIMIT}", sys.executable, "-m", "spectui", *argv]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=str(ROOT),
                           env=dict(os.environ, PYTHONPATH=str(ROOT)))
    except subprocess.TimeoutExpired:
        pytest.fail(f"spectui {' '.join(argv)} did not answer within {timeout} s")
    return p.returncode, p.stdout, p.stderr


@pytest.fixture
def server(profiles_dir, state_dir):
    """A simulated server started from a profile, stopped (and killed) at teardown: (demo options, its log)."""
    write_profile(profiles_dir, "alpha")
    demo = ["--demo", "--state-dir", str(state_dir)]
    code, out, err = spectui("servers", "start", "alpha", *demo)
    assert code == 0, err
    yield demo, state_dir / "servers" / "alpha.log"
    spectui("servers", "stop", *demo)
    record = state_dir / "servers" / "alpha.json"
    if record.exists():
        try:
            os.killpg(json.loads(record.read_text())["pgid"], 9)
        except (ProcessLookupError, KeyError):
            pass


def one_sentence(err):
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_log_replaced_by_a_fifo_holds_up_nothing(server):
    demo, log = server
    log.unlink()
    os.mkfifo(log, 0o600)
    code, out, err = spectui("servers", "list", *demo, "--json", timeout=60)
    assert code == 0, err
    listed = {s["name"]: s for s in json.loads(out)["servers"]}
    assert listed["alpha"]["state"] == "ready"
    code, out, err = spectui("servers", "logs", "alpha", *demo, timeout=60)
    assert code != 0 and "FIFO" in one_sentence(err) and str(log) in err
    code, out, err = spectui("servers", "stop", "alpha", *demo, "--grace", "5", timeout=90)
    assert code == 0 and "alpha: stopped in" in out, (out, err)


def test_a_log_linked_to_dev_zero_is_not_read(server):
    demo, log = server
    code, _, err = spectui("servers", "stop", "alpha", *demo)
    assert code == 0, err
    log.unlink()
    log.symlink_to("/dev/zero")
    code, out, err = spectui("servers", "logs", "alpha", *demo, timeout=60)
    assert code != 0 and out == "" and "symbolic link" in one_sentence(err) and str(log) in err


def test_a_tail_reads_from_the_end_within_bounds(server):
    demo, log = server
    code, _, err = spectui("servers", "stop", "alpha", *demo)
    assert code == 0, err
    line = "x" * 40
    count = 48 * 1024 * 1024 // (len(line) + 12)  # 48 MiB of short lines, numbered
    with open(log, "w") as fh:
        for i in range(count):
            fh.write(f"{i:010d} {line}\n")
    code, out, err = spectui("servers", "logs", "alpha", *demo, "--lines", "50000000", timeout=120)
    assert code == 0, err
    shown = out.splitlines()
    assert 0 < len(shown) <= 100000 and shown[-1] == f"{count - 1:010d} {line}", shown[-2:]
    assert [int(s.split()[0]) for s in shown] == list(range(count - len(shown), count))
    assert "at most 100000" in one_sentence(err)
