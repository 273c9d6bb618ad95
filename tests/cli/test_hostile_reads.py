"""``spectui logs parse|summary`` and ``spectui history import`` read only what can end: a FIFO, a device or a
socket given as FILE is refused by name without being opened for long, and what comes on standard input is
read up to a cap (256 MiB for logs, 16 MiB for an import) that stops an endless stream, in one sentence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# far above what these commands need, far below what reading /dev/zero into memory takes: a regression fails
# the test instead of the machine
MEMORY_LIMIT = 3 * 1024 ** 3


def spectui(*argv, stdin=subprocess.DEVNULL, timeout=120):
    cmd = ["prlimit", f"--as={MEMORY_LIMIT}", sys.executable, "-m", "spectui", *argv]
    try:
        p = subprocess.run(cmd, stdin=stdin, capture_output=True, text=True, timeout=timeout, cwd=str(ROOT),
                           env=dict(os.environ, PYTHONPATH=str(ROOT)))
    except subprocess.TimeoutExpired:
        pytest.fail(f"spectui {' '.join(argv)} did not end within {timeout} s")
    return p.returncode, p.stdout, p.stderr


def one_sentence(err):
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err and "MemoryError" not in err, err
    return lines[0]


COMMANDS = [("logs", "parse"), ("logs", "summary"), ("history", "import")]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_device_is_refused_by_name(command):
    code, out, err = spectui(*command, "/dev/zero", timeout=60)
    assert code == 1 and "/dev/zero" in one_sentence(err) and "character device" in err, err


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_fifo_without_a_writer_is_refused_at_once(command, tmp_path):
    fifo = tmp_path / "server.log"
    os.mkfifo(fifo)
    code, out, err = spectui(*command, str(fifo), timeout=60)
    assert code == 1 and str(fifo) in one_sentence(err) and "FIFO" in err, err


def test_endless_standard_input_stops_at_the_logs_cap():
    with open("/dev/zero", "rb") as zero:
        code, out, err = spectui("logs", "parse", "-", stdin=zero, timeout=300)
    assert code == 1 and "256 MiB" in one_sentence(err), err


def test_endless_standard_input_stops_at_the_import_cap():
    with open("/dev/zero", "rb") as zero:
        code, out, err = spectui("history", "import", "-", stdin=zero, timeout=120)
    assert code == 1 and "16 MiB" in one_sentence(err), err


def test_an_import_larger_than_the_cap_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "runs.jsonl"
    with open(big, "wb") as fh:
        fh.truncate(17 * 1024 * 1024)  # sparse: nothing to write
    code, out, err = spectui("history", "import", str(big), timeout=60)
    assert code == 1 and str(big) in one_sentence(err) and "16 MiB" in err, err


def test_a_line_that_never_ends_is_cut_and_parsing_goes_on(tmp_path):
    log = tmp_path / "server.log"
    ready = "[2025-01-01 00:00:01] The server is fired up and ready to roll!\n"
    log.write_bytes(b"\0" * (8 * 1024 * 1024) + b"\n" + ready.encode())
    code, out, err = spectui("logs", "parse", str(log), "--json", timeout=60)
    assert code == 0, err
    assert '"kind": "ready"' in out
