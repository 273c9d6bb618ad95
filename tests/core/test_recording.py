"""Recordings: what was written reads back in order; a writer killed with -9 leaves a file that reads up to
its last flush; the size budget thins frequent series without losing any; a full disk ends the recording
in one sentence; files that are not recordings, or from a newer spectui, are refused in one sentence."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from spectui.core.recording import FORMAT, VERSION, RecordingError, RecordingWriter, read_recording


class Clock:
    def __init__(self, t=1000.0):
        self.t = t

    def __call__(self):
        return self.t


def frame(name: str, i: int) -> dict:
    return {"name": name, "seq": i, "accept_length": {"value": 2.0 + i / 100, "source": "metrics-counters"}}


def test_events_read_back_in_order_with_the_header(tmp_path):
    clock = Clock()
    w = RecordingWriter(tmp_path / "r.spectui.gz", {"host": {"hostname": "gpu-box"}, "profiles": [{"name": "a"}]},
                        clock=clock)
    sent = []
    for i in range(50):
        clock.t += 0.25
        ev = ("server_frame", frame("kimi-eagle3", i)) if i % 2 else ("gpu", {"gpus": [{"index": 0}], "seq": i})
        w.write(*ev)
        sent.append((round(clock.t - 1000.0, 3), *ev))
    w.write("alert", {"kind": "fired", "rule": "server_down", "message": "the server is down"})
    w.close()
    rec = read_recording(tmp_path / "r.spectui.gz")
    assert rec.header["format"] == FORMAT and rec.header["version"] == VERSION
    assert rec.header["host"] == {"hostname": "gpu-box"} and rec.header["profiles"] == [{"name": "a"}]
    assert rec.events[:-1] == sent and rec.events[-1][1] == "alert"
    assert not rec.truncated
    assert list(rec.between(2.0, 3.0)) == [e for e in sent if 2.0 <= e[0] <= 3.0]


WRITER = textwrap.dedent("""
    import sys, time
    from spectui.core.recording import RecordingWriter
    w = RecordingWriter(sys.argv[1], {"host": {}}, flush_s=0.2)
    i = 0
    while True:
        w.write("server_frame", {"name": "s", "seq": i})
        if i % 10 == 0:
            print(i, time.time(), flush=True)
        i += 1
        time.sleep(0.01)
""")


def test_a_kill_9_loses_at_most_the_last_second(tmp_path):
    path = tmp_path / "crash.spectui.gz"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    reported = []
    deadline = time.monotonic() + 30
    while len(reported) < 20 and time.monotonic() < deadline:
        reported.append(int(proc.stdout.readline().split()[0]))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = time.time()
    rec = read_recording(path)
    assert rec.truncated
    seqs = [d["seq"] for _, _, d in rec.events]
    assert seqs == list(range(len(seqs)))            # in order, nothing invented, nothing skipped
    assert seqs[-1] >= reported[-1] - 20              # flushed every 0.2 s at ~100 events/s: within a second
    last_t = rec.header["started"] + rec.events[-1][0]
    assert killed_at - last_t < 1.5


def test_the_budget_thins_frequent_series_never_drops_them(tmp_path):
    clock = Clock()
    w = RecordingWriter(tmp_path / "b.gz", {"host": {}}, budget_mb_per_hour=0.05, clock=clock)
    for i in range(2400):   # 10 Hz for 4 minutes, random-ish payloads that compress poorly
        clock.t += 0.1
        w.write("server_frame", {"name": "s", "seq": i, "blob": os.urandom(24).hex()})
        if i % 600 == 0:
            w.write("switch", {"target": "s", "stage": f"stage-{i}"})
    w.close()
    rec = read_recording(tmp_path / "b.gz")
    frames = [(t, d) for t, ev, d in rec.events if ev == "server_frame"]
    notes = [d for _, ev, d in rec.events if ev == "note"]
    assert w.thinned > 0 and notes and notes[0]["thinned"] == "server_frame"
    assert 0 < len(frames) < 2400
    gaps = [b[0] - a[0] for a, b in zip(frames, frames[1:])]
    assert max(gaps) <= max(n["interval_s"] for n in notes) + 0.11   # coarser, never a hole
    assert [d["stage"] for _, ev, d in rec.events if ev == "switch"] == [f"stage-{i}" for i in range(0, 2400, 600)]


FULL = textwrap.dedent("""
    import resource, signal, sys
    from spectui.core.recording import RecordingWriter
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)      # a write past the limit fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16))
    w = RecordingWriter(sys.argv[1], {"host": {}})
    print(w.closed, w.write("gpu", {"seq": 2}))
    print(w.error)
""")


def test_a_write_error_ends_the_recording_in_one_sentence(tmp_path):
    path = tmp_path / "full.spectui.gz"   # a file that may not grow past 16 bytes: as a full disk, every write fails
    out = subprocess.run([sys.executable, "-c", FULL, str(path)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["True False", f"recording to {path} stopped: File too large; what was "
                                                     "written before stays"]


def test_what_is_not_a_recording_is_refused_in_one_sentence(tmp_path):
    plain = tmp_path / "notes.txt"
    plain.write_text("baseline 82 tok/s\n")
    with pytest.raises(RecordingError, match="not a spectui recording"):
        read_recording(plain)
    other = tmp_path / "other.gz"
    with gzip.open(other, "wt") as f:
        f.write('{"hello": 1}\n')
    with pytest.raises(RecordingError, match="not a recording header"):
        read_recording(other)
    newer = tmp_path / "newer.gz"
    with gzip.open(newer, "wt") as f:
        f.write(json.dumps({"format": FORMAT, "version": VERSION + 1, "started": 0}) + "\n")
    with pytest.raises(RecordingError, match="update spectui to replay it"):
        read_recording(newer)
    with pytest.raises(RecordingError, match="cannot read the recording"):
        read_recording(tmp_path / "missing.gz")
