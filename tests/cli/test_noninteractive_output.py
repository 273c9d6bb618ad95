"""The real ``spectui`` command writing to a file, a pipe and a terminal.

- in a file, a benchmark's progress is one line per state change, not one per half-second tick;
- on a terminal (a pty) it is one line rewritten in place;
- a reader that goes away (``| head``) ends any command quietly with 141, like shell tools.
"""

import errno
import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from spectui.cli.output import ProgressLine
from tests.bench.conftest import kill_everything, write_preset, write_sim_profile
from tests.support.sshd import free_port

ROOT = Path(__file__).resolve().parents[2]
SESSION_LOG = ROOT / "tests" / "fixtures" / "logs" / "server_session.log"
STAMP = re.compile(r"^\[ *\d+\.\ds\] ")
# the states a benchmark run goes through on the host before it ends (spectui/agent/bench/runner.py)
HOST_RUN_STATES = ("starting", "warmup", "flushing", "running", "finishing")

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def bench_setup(tmp_path):
    """Private folders, one simulated EAGLE3 profile and a preset whose measurement lasts seconds."""
    dirs = {name: tmp_path / name for name in ("profiles", "presets", "config", "data", "cache", "state")}
    for d in dirs.values():
        d.mkdir()
    env = dict(os.environ, SPECTUI_PROFILES_PATH=str(dirs["profiles"]), SPECTUI_CONFIG_DIR=str(dirs["config"]),
               SPECTUI_DATA_DIR=str(dirs["data"]), XDG_CACHE_HOME=str(dirs["cache"]))
    write_sim_profile(dirs["profiles"], "eagle", port=free_port(), speculative="EAGLE3")
    preset = write_preset(dirs["presets"], "steady", dataset="random", input_len=32, output_len=64, num_prompts=5,
                          concurrency=1, warmup=1, repeats=1, seed=3)
    argv = [sys.executable, "-m", "spectui", "bench", "--demo", "--state-dir", str(dirs["state"]),
            "--profiles", "eagle", "--preset", str(preset), "--json"]
    try:
        yield argv, env, tmp_path
    finally:
        kill_everything(dirs["state"])


def _seconds(line: str) -> float:
    return float(line.strip("[ ").split("s]")[0])


def test_bench_into_a_file_prints_a_line_per_state_change(bench_setup):
    argv, env, tmp = bench_setup
    with open(tmp / "out.json", "wb") as out, open(tmp / "progress.txt", "wb") as err:
        r = subprocess.run(argv, stdout=out, stderr=err, env=env, cwd=ROOT, timeout=200)
    progress = (tmp / "progress.txt").read_text()
    assert r.returncode == 0, progress
    comp = json.loads((tmp / "out.json").read_text())  # stdout is the result alone
    profiles, runs = comp["profiles"], comp["run_ids"]
    assert [p["name"] for p in profiles] == ["eagle"] and len(runs) == 1

    lines = progress.splitlines()
    assert "\r" not in progress and all(STAMP.match(line) for line in lines), progress
    # one line per switch, one per host state of each run, one when each run ends
    assert len(lines) <= len(profiles) + len(runs) * (len(HOST_RUN_STATES) + 1), progress
    assert sum("switching to eagle" in line for line in lines) == 1
    started = [line for line in lines if line.endswith("repeat 1: starting")]
    finished = [line for line in lines if re.search(r"repeat 1: done, \d+\.\d tok/s$", line)]
    assert len(started) == 1 and len(finished) == 1, progress
    # the run measured for seconds: a line per half-second tick would have been many more lines
    assert _seconds(finished[0]) - _seconds(started[0]) >= 3.0, progress
    requests = [line for line in lines if " requests" in line]
    assert 1 <= len(requests) <= 2, progress  # running, and at most finishing


def _read_pty(fd: int, proc: subprocess.Popen, timeout: float) -> bytes:
    data = bytearray()
    while True:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            proc.kill()
            raise AssertionError("no terminal output for %.0f s: %r" % (timeout, bytes(data[-500:])))
        try:
            chunk = os.read(fd, 4096)
        except OSError as exc:  # Linux: EIO once the child closed its end
            if exc.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        data += chunk
    return bytes(data)


def test_bench_on_a_terminal_updates_one_line_in_place(bench_setup):
    argv, env, tmp = bench_setup
    master, slave = pty.openpty()
    with open(tmp / "out.json", "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=slave, stdin=subprocess.DEVNULL, env=env, cwd=ROOT)
    os.close(slave)
    try:
        shown = _read_pty(master, proc, timeout=120).decode()
    finally:
        os.close(master)
    assert proc.wait(timeout=60) == 0, shown
    assert json.loads((tmp / "out.json").read_text())["run_ids"]

    updates = shown.split("\r\x1b[K")[1:]  # each rewrites the line: carriage return, erase to its end
    assert shown.startswith("\r\x1b[K") and shown.count("\n") == 1 and shown.endswith("\n"), repr(shown)
    ticks = [u for u in updates if " requests" in u]
    # the running stage, tick by tick: several counts of the same run on the same line
    assert len(ticks) >= 3 and len(set(ticks)) == len(ticks), repr(shown)
    assert re.search(r"repeat 1: done, \d+\.\d tok/s\r?\n$", updates[-1]), repr(shown)


def _gone_reader(argv, **kw) -> subprocess.CompletedProcess:
    """Run ``spectui ARGV`` with stdout a pipe whose reader closed before anything was written."""
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "spectui", *argv], stdout=write_end, stderr=subprocess.PIPE,
                            cwd=ROOT, **kw)
    os.close(write_end)
    os.close(read_end)
    _, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, None, err.decode())


@pytest.mark.parametrize("argv", [["status", "--demo", "--json"], ["status", "--demo"],
                                  ["bench", "--list-presets"], ["bench", "--list-presets", "--json"]])
def test_a_closed_pipe_ends_quietly_with_141(argv, tmp_path):
    r = _gone_reader([*argv, *(["--state-dir", str(tmp_path)] if "--demo" in argv else [])])
    assert (r.returncode, r.stderr) == (141, "")


def test_head_reading_the_first_bytes_ends_the_command_quietly(tmp_path):
    """``spectui logs parse big.log | head -c 10``: more output than a pipe holds, so the writer
    meets the closed pipe mid-stream."""
    big = tmp_path / "big.log"
    big.write_text(SESSION_LOG.read_text() * 60)
    proc = subprocess.Popen([sys.executable, "-m", "spectui", "logs", "parse", str(big)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT)
    head = proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141 and err == ""
    assert head == b"2025-12-04"


def test_progress_line_in_a_file_keeps_one_line_per_stage():
    class File:
        def __init__(self):
            self.text = ""

        def write(self, s):
            self.text += s

        def flush(self):
            pass

    f = File()
    p = ProgressLine(f, tty=False, clock=iter(range(100)).__next__)
    p.show("switching to eagle")
    for done in range(4):
        p.show(f"eagle: {done}/3 requests", stage=("run", "running"))
    p.show("eagle: 3/3 requests", stage=("run", "finishing"))
    p.show("eagle: done")
    p.show("eagle: done")
    p.done()
    assert [STAMP.sub("", line) for line in f.text.splitlines()] == [
        "switching to eagle", "eagle: 0/3 requests", "eagle: 3/3 requests", "eagle: done"]

    t = File()
    p = ProgressLine(t, tty=True, clock=iter(range(100)).__next__)
    for done in range(3):
        p.show(f"eagle: {done}/3 requests", stage=("run", "running"))
    p.show("eagle: 2/3 requests", stage=("run", "running"))
    p.done()
    assert t.text == ("\r\x1b[K[   1.0s] eagle: 0/3 requests\r\x1b[K[   2.0s] eagle: 1/3 requests"
                      "\r\x1b[K[   3.0s] eagle: 2/3 requests\n")


def test_progress_goes_quiet_when_its_reader_is_gone():
    class Gone:
        def write(self, s):
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

        def flush(self):
            pass

    p = ProgressLine(Gone(), tty=False)
    p.show("switching to eagle")  # no exception: the command goes on
    p.show("eagle: starting")
    assert p.closed
