"""Following a growing log: partial lines, rotation, truncation, bounded backlog, records."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from spectui.agent.logs import follow as logfollow


@pytest.fixture(autouse=True)
def closing(monkeypatch):
    """Close every follower a test opens."""
    opened = []

    class Follower(logfollow.LogFollower):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            opened.append(self)

    monkeypatch.setattr(logfollow, "LogFollower", Follower)
    yield
    for f in opened:
        f.close()


def LogFollower(*a, **kw):
    return logfollow.LogFollower(*a, **kw)


def LogStream(*a, **kw):
    return logfollow.LogStream(*a, **kw)

DECODE = "[2026-11-30 10:00:%02d TP0] Decode batch, #running-req: 1, #token: %d, token usage: 0.00, accept len: 1.45, accept rate: 0.06, cuda graph: True, gen throughput (token/s): 41.20, #queue-req: 0\n"


def append(path, text, mode="a"):
    with open(path, mode, encoding="utf-8", newline="") as fh:
        fh.write(text)
        fh.flush()


def test_reads_existing_then_new_lines_and_holds_a_partial_line(tmp_path):
    log = tmp_path / "server.log"
    append(log, "one\ntwo\n", "w")
    f = LogFollower(str(log))
    assert f.read_new() == ["one", "two"]
    assert f.read_new() == []
    append(log, "thr")
    assert f.read_new() == [] and f.partial == "thr"
    append(log, "ee\nfour\r\nfive")
    assert f.read_new() == ["three", "four"]
    append(log, "\n")
    assert f.read_new() == ["five"]
    f.close()


def test_carriage_returns_end_lines_and_crlf_split_across_reads(tmp_path):
    log = tmp_path / "server.log"
    append(log, "bar 1/3\rbar 2/3\rbar 3/3\r", "w")
    f = LogFollower(str(log))
    assert f.read_new() == ["bar 1/3", "bar 2/3", "bar 3/3"]
    append(log, "\nnext\n")  # the "\n" of a "\r\n" cut in two by the reads
    assert f.read_new() == ["next"]
    g = LogFollower(str(log), split_cr=False)
    assert g.read_new() == ["bar 1/3\rbar 2/3\rbar 3/3", "next"]


def test_rotation_reads_the_old_file_to_its_end_then_the_new_one(tmp_path):
    log = tmp_path / "server.log"
    append(log, "a1\na2\n", "w")
    f = LogFollower(str(log))
    assert f.read_new() == ["a1", "a2"]
    append(log, "a3\na4-unfinished")
    os.rename(log, tmp_path / "server.log.1")  # logrotate: move away, start a new file
    assert f.read_new() == ["a3"]  # the moved file is still open (its writer may go on)
    append(tmp_path / "server.log.1", "-end\n")
    assert f.read_new() == ["a4-unfinished-end"]
    append(tmp_path / "server.log.1", "a5")
    append(log, "b1\nb2\n", "w")
    assert f.read_new() == ["a5", "b1", "b2"]  # the old file drained, its last line closed
    assert f.rotations == 1 and f.events == [(1, "rotated")]
    append(log, "b3\n")
    assert f.read_new() == ["b3"]


def test_rotation_by_replacing_the_file(tmp_path):
    log = tmp_path / "server.log"
    append(log, "old\n", "w")
    f = LogFollower(str(log))
    assert f.read_new() == ["old"]
    new = tmp_path / "new.log"
    append(new, "fresh 1\nfresh 2\n", "w")
    os.replace(new, log)
    assert f.read_new() == ["fresh 1", "fresh 2"]
    assert f.rotations == 1 and f.events == [(0, "rotated")]


def test_truncation_restarts_from_the_top(tmp_path):
    log = tmp_path / "server.log"
    append(log, "first line of a long log\nsecond\nthird\n", "w")
    f = LogFollower(str(log))
    assert len(f.read_new()) == 3
    append(log, "x\n", "w")  # copytruncate: same inode, shorter
    assert f.read_new() == ["x"]
    assert f.truncations == 1 and f.events == [(0, "truncated")]


def test_truncation_then_regrowth_past_the_offset_is_noticed(tmp_path):
    log = tmp_path / "server.log"
    append(log, "[2026-11-30 10:00:00] a\n", "w")
    f = LogFollower(str(log))
    assert f.read_new() == ["[2026-11-30 10:00:00] a"]
    with open(log, "r+b") as fh:  # truncated and rewritten before the next poll
        fh.truncate(0)
        fh.write(b"[2026-11-30 11:00:00] b\n[2026-11-30 11:00:01] c\n")
    assert f.read_new() == ["[2026-11-30 11:00:00] b", "[2026-11-30 11:00:01] c"]
    assert f.truncations == 1


def test_tail_bytes_starts_near_the_end_and_drops_the_fragment(tmp_path):
    log = tmp_path / "server.log"
    append(log, "".join("line %05d\n" % i for i in range(10000)), "w")  # 110,000 bytes
    f = LogFollower(str(log), tail_bytes=25)
    assert f.read_new() == ["line 09998", "line 09999"]
    g = LogFollower(str(log), tail_bytes=22)  # starts exactly at a line start
    assert g.read_new() == ["line 09998", "line 09999"]
    h = LogFollower(str(log), tail_bytes=0)
    assert h.read_new() == []
    append(log, "new\n")
    assert h.read_new() == ["new"]


def test_backlog_is_read_in_bounded_steps(tmp_path):
    log = tmp_path / "server.log"
    append(log, "".join("line %05d\n" % i for i in range(10000)), "w")
    f = LogFollower(str(log), max_read_bytes=1 << 14)
    got, calls = [], 0
    while True:
        batch = f.read_new()
        calls += 1
        if not batch:
            break
        assert len(batch) <= (1 << 14) // 11 + 1
        got += batch
    assert got == ["line %05d" % i for i in range(10000)] and calls > 6


def test_overlong_line_is_cut(tmp_path):
    log = tmp_path / "server.log"
    append(log, "x" * 5000 + "\nok\n", "w")
    f = LogFollower(str(log), max_line_bytes=1000)
    lines = f.read_new()
    assert lines[0] == "x" * 1000 and lines[-1] == "ok"


def test_a_file_that_appears_later_is_read_from_its_start(tmp_path):
    log = tmp_path / "later.log"
    f = LogFollower(str(log), tail_bytes=0)
    assert f.read_new() == []
    append(log, "hello\n", "w")
    assert f.read_new() == ["hello"]


def test_invalid_utf8_is_replaced(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(b"caf\xe9\n")
    assert LogFollower(str(log)).read_new() == ["caf\ufffd"]


# -- LogStream: the agent's object ---------------------------------------------------------


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_stream_gives_records_and_live_loading_progress(tmp_path):
    log = tmp_path / "server.log"
    append(log, "[2026-11-30 10:00:00 TP0] Load weight begin. avail mem=93.21 GB\n", "w")
    s = LogStream(str(log))
    assert [r["kind"] for r in s.poll()] == ["load_begin"]
    bar = "Loading safetensors checkpoint shards: %3d%% Completed | %d/4 [00:0%d<00:0%d,  1.00s/it]"
    append(log, bar % (0, 0, 0, 4))
    (p0,) = s.poll()
    assert p0["kind"] == "loading" and p0["done"] == 0  # shown before its line is finished
    assert s.poll() == []  # the same update is not repeated
    append(log, "\r" + bar % (50, 2, 2, 2))
    recs = s.poll()
    assert [r["done"] for r in recs] == [2]
    append(log, "\r" + bar % (100, 4, 4, 0) + "\n[2026-11-30 10:01:05 TP0] Load weight end. elapsed=65.00 s, type=M, avail mem=1.00 GB, mem usage=2.00 GB.\n")
    recs = s.poll()
    assert [(r["kind"], r.get("done")) for r in recs] == [("loading", 4), ("load_end", None)]
    append(log, DECODE % (1, 290) + "[2026-11-30 10:01:30] The server is fired up and ready to roll!\n")
    assert [r["kind"] for r in s.poll()] == ["decode", "ready"]
    s.close()


def test_stream_closes_a_traceback_when_the_log_goes_quiet(tmp_path):
    log = tmp_path / "server.log"
    clock = Clock()
    append(log, "", "w")
    s = LogStream(str(log), idle_flush_s=2.0, clock=clock)
    append(log, "[2026-11-30 10:05:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                '  File "scheduler.py", line 1, in run\n    step()\nRuntimeError: CUDA error: out of memory\n')
    assert s.poll() == []  # the traceback may go on
    clock.now += 1.0
    assert s.poll() == []
    clock.now += 1.5
    (err,) = s.poll()
    assert err["kind"] == "error" and err["summary"] == "RuntimeError: CUDA error: out of memory" and err["line_count"] == 4


def test_stream_reports_rotation_in_order(tmp_path):
    log = tmp_path / "server.log"
    append(log, DECODE % (1, 100), "w")
    s = LogStream(str(log))
    assert [r["num_token"] for r in s.poll()] == [100]
    append(log, DECODE % (2, 200))
    os.rename(log, tmp_path / "server.log.1")
    append(log, DECODE % (3, 300), "w")
    recs = s.poll()
    assert [(r["kind"], r.get("num_token"), r.get("reason")) for r in recs] == [
        ("decode", 200, None), ("log_reset", None, "rotated"), ("decode", 300, None)]
    append(log, DECODE % (4, 50), "w")  # truncated in place (shorter than before)
    recs = s.poll()
    assert [(r["kind"], r.get("reason")) for r in recs] == [("log_reset", "truncated"), ("decode", None)]


def test_tail_bytes_on_a_huge_backlog(tmp_path):
    log = tmp_path / "server.log"
    with open(log, "w") as fh:
        for i in range(20000):
            fh.write(DECODE % (i % 60, i))
    s = LogStream(str(log), tail_bytes=4096)
    recs = s.poll()
    assert 0 < len(recs) < 40 and recs[-1]["num_token"] == 19999


def test_agent_modules_work_as_a_package_of_another_name(tmp_path):
    """The agent is shipped as ``spectui_agent``: these modules need only each other."""
    pkg = tmp_path / "spectui_agent"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    agent = Path(__file__).resolve().parents[2] / "spectui" / "agent"
    (pkg / "servers").mkdir()
    for name in ("servers/__init__.py", "servers/metrics.py"):
        shutil.copy(agent / name, pkg / name)
    shutil.copytree(agent / "logs", pkg / "logs", ignore=shutil.ignore_patterns("__pycache__"))
    log = tmp_path / "s.log"
    log.write_text(DECODE % (1, 290))
    code = (
        "import sys\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "import spectui_agent.logs.follow as f, spectui_agent.servers.metrics as p\n"
        "recs = f.LogStream(sys.argv[1]).poll()\n"
        "assert recs[0]['accept_len'] == 1.45, recs\n"
        "assert not any(m == 'spectui' or m.startswith('spectui.') for m in sys.modules)\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-I", "-c", code, str(log), str(tmp_path)], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
