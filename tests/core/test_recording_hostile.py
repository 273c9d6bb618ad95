"""Recordings are untrusted input: a hand-made file that lies about its types, its version or its size is
refused in one sentence naming the line, never a traceback; what spectui writes reads back through the same
checks; what a recording keeps of a command line has its secrets masked, and the file is private."""

from __future__ import annotations

import gzip
import json
import os
import stat
import zlib

import pytest

from spectui.core import recording
from spectui.core.profiles.secret_flags import REDACTED
from spectui.core.recording import FORMAT, VERSION, RecordingError, RecordingWriter, read_recording
from spectui.core.replay import ReplayLink
from spectui.core.recording_export import export


def header(**changes) -> dict:
    h = {"format": FORMAT, "version": VERSION, "spectui": "0.2.0", "started": 1_764_496_800.0,
         "host": {"hostname": "gpu-box"}, "target": "root@gpu-box", "profiles": []}
    h.update(changes)
    return {k: v for k, v in h.items() if v is not DROP}


DROP = object()
SESSION = {"t": 0.5, "ev": "session", "d": {"facts": {"hostname": "gpu-box"}, "servers": []}}


def write(path, *lines) -> None:
    """A gzip file of these lines: dicts as JSON, str and bytes as they are."""
    raw = b"".join((x if isinstance(x, bytes) else (x if isinstance(x, str) else json.dumps(x)).encode()) + b"\n"
                   for x in lines)
    path.write_bytes(gzip.compress(raw))


def refusal(path) -> str:
    with pytest.raises(RecordingError) as info:
        read_recording(path)
    text = str(info.value)
    assert "\n" not in text and "Traceback" not in text
    return text


BAD_HEADERS = [
    (header(version=0), "version 0"),
    (header(version="1"), "version must be a whole number, not a string"),
    (header(version=True), "version must be a whole number"),
    (header(version=1.0), "version must be a whole number"),
    (header(started="abc"), "started must be a number, not a string"),
    (header(started=1e300), "started must be"),
    (header(started=DROP), "started"),
    (header(host=["gpu-box"]), "host must be an object, not a list"),
    (header(host={"hostname": 7}), "host.hostname must be text"),
    (header(target={"a": 1}), "target must be text"),
    (header(profiles="alpha"), "profiles must be a list"),
    (header(profiles=[{"name": "a", "port": "eighty"}]), "profiles[0].port must be a whole number"),
    (header(profiles=[{"name": "a", "env": ["X"]}]), "profiles[0].env must be an object"),
]


@pytest.mark.parametrize("bad,words", BAD_HEADERS, ids=[w for _, w in BAD_HEADERS])
def test_a_header_that_lies_is_refused_naming_line_1(tmp_path, bad, words):
    path = tmp_path / "bad.spectui.gz"
    write(path, bad, SESSION)
    text = refusal(path)
    assert f"{path}, line 1" in text and words in text, text
    assert "newer than this spectui" not in text


BAD_EVENTS = [
    ('["gpu", 1]', "must be an object, not a list"),
    ({"ev": "gpu", "d": {}}, "t"),
    ({"t": "abc", "ev": "gpu", "d": {}}, "t must be a number, not a string"),
    ({"t": float("inf"), "ev": "gpu", "d": {}}, "t must be"),
    ({"t": 1e300, "ev": "gpu", "d": {}}, "t must be"),
    ({"t": 1.0, "d": {}}, "ev"),
    ({"t": 1.0, "ev": ["gpu"], "d": {}}, "ev must be text"),
    ({"t": 1.0, "ev": "alert", "d": {"kind": "fired", "rule": ["x"], "message": "m"}}, "rule must be text"),
    ({"t": 1.0, "ev": "session", "d": {"facts": "gpu-box", "servers": []}}, "facts must be an object, not a string"),
    ({"t": 1.0, "ev": "session", "d": {"facts": {}, "servers": [{"state": "ready"}]}}, "servers[0].name"),
    ({"t": 1.0, "ev": "gpu", "d": {"gpus": [7]}}, "gpus[0] must be an object, not a number"),
    ({"t": 1.0, "ev": "gpu", "d": {"gpus": [{"index": "0"}]}}, "gpus[0].index must be a whole number"),
    ({"t": 1.0, "ev": "server_frame", "d": {"seq": 1}}, "name"),
    ({"t": 1.0, "ev": "server_frame", "d": {"name": "s", "accept_length": {"value": "2"}}},
     "accept_length.value must be a number"),
    ({"t": 1.0, "ev": "switch", "d": {"target": "s"}}, "stage"),
    ({"t": 1.0, "ev": "gpu", "d": "hot"}, "must be an object, not a string"),
    ({"t": 1.0, "ev": "gpu", "d": {"t": None, "gpus": []}}, "t must not be null"),
    ({"t": 1.0, "ev": "gpu", "d": {"missing": None}}, "missing must not be null"),
    ('{"t": 1.0, "ev": "note", "d": {}', "not a JSON object"),
    ("[" * 5000 + "]" * 5000, "line 3"),
]


@pytest.mark.parametrize("bad,words", BAD_EVENTS, ids=[str(i) for i in range(len(BAD_EVENTS))])
def test_an_event_that_lies_is_refused_naming_its_line(tmp_path, bad, words):
    path = tmp_path / "bad.spectui.gz"
    write(path, header(), SESSION, bad, {"t": 2.0, "ev": "note", "d": {}})
    text = refusal(path)
    assert f"{path}, line 3" in text and words in text, text


def test_what_spectui_writes_reads_back_through_the_checks(tmp_path):
    path = tmp_path / "ok.spectui.gz"
    w = RecordingWriter(path, {"spectui": "0.2.0", "target": "demo", "kind": "demo", "host": {},
                               "profiles": ["alpha", {"name": "beta", "model": "m", "port": 30001, "gpus": [0],
                                                      "env": {"K": REDACTED}, "args": {"tp-size": 2}}]})
    w.write("session", {"facts": {"hostname": "h", "cpu_count": 8, "gpus": [{"index": 0, "name": "H100"}]},
                        "servers": [{"name": "beta", "state": "ready", "pid": 12, "argv": ["python3"]}]})
    w.write("gpu", {"seq": 1, "t": 5.0, "source": "nvml", "gpus": [
        {"index": 0, "util_pct": 50.0, "mem_used_mib": 1.0, "processes": [{"pid": 12, "used_mib": 1.0,
                                                                            "user": "me", "command": "python3",
                                                                            "pgid": 12}]}]})
    w.write("server_frame", {"name": "beta", "seq": 1, "accept_length": {"value": float("nan"), "stale": True},
                             "accept_rate": [{"value": 0.5, "formula": "drafts-only"}], "running_req": 1})
    w.write("alert", {"kind": "fired", "at": 3.0, "rule": "server_down", "subject": "beta", "message": "down"})
    w.write("something_newer", [1, 2, 3])
    w.write("probe.progress", {"done": 1})   # the agent's dotted event names
    w.write("agent.log", {"level": "info"})
    w.close()
    rec = read_recording(path)
    assert [ev for _, ev, _ in rec.events] == ["session", "gpu", "server_frame", "alert", "something_newer",
                                               "probe.progress", "agent.log"]


def test_a_recording_without_a_session_says_so(tmp_path):
    path = tmp_path / "nosession.spectui.gz"
    write(path, header(), {"t": 1.0, "ev": "gpu", "d": {"gpus": []}})
    rec = read_recording(path)
    assert not rec.has_session
    replay = ReplayLink(rec)
    with pytest.raises(RecordingError, match="never connected"):
        replay.check_playable()


def bomb(path, inflated: int, line: bytes) -> None:
    """A gzip file whose events inflate to ``inflated`` bytes, at a high compression ratio."""
    co = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    with open(path, "wb") as f:
        f.write(co.compress(json.dumps(header()).encode() + b"\n" + json.dumps(SESSION).encode() + b"\n"))
        block = line * max(1, (1 << 20) // len(line))
        written = 0
        while written < inflated:
            f.write(co.compress(block))
            written += len(block)
        f.write(co.flush())


def test_a_size_bomb_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    path = tmp_path / "bomb.spectui.gz"
    line = json.dumps({"t": 1, "ev": "note", "d": {"x": "y" * 200}}).encode() + b"\n"   # the size limit first
    bomb(path, recording.MAX_INFLATED_BYTES + (1 << 20), line)
    assert path.stat().st_size < recording.MAX_INFLATED_BYTES // 100
    parsed = []
    real = recording._event

    def counting(*args):
        parsed.append(1)
        return real(*args)
    monkeypatch.setattr(recording, "_event", counting)
    text = refusal(path)
    assert "more than" in text and "MB" in text and not parsed   # refused on a first pass that keeps nothing


def test_too_many_events_and_too_long_a_line_are_refused(tmp_path):
    many = tmp_path / "many.spectui.gz"
    line = b'{"t":1,"ev":"a"}\n'
    bomb(many, (recording.MAX_EVENTS + 10) * len(line), line)
    assert "events" in refusal(many)
    long = tmp_path / "long.spectui.gz"
    write(long, header(), SESSION, {"t": 1.0, "ev": "note", "d": {"x": "y" * (recording.MAX_LINE_BYTES + 1)}})
    text = refusal(long)
    assert "line 3" in text and "longer than" in text


def test_a_bomb_of_empty_lines_is_refused_at_the_line_limit_not_read_to_its_end(tmp_path, monkeypatch):
    """Empty lines are lines too: a gzip of newlines under the size limit is refused once it passes the most lines
    a recording holds, not read line by line to its end (300 MB of them took 43 s)."""
    monkeypatch.setattr(recording, "MAX_EVENTS", 1000)
    empty = tmp_path / "empty.spectui.gz"
    bomb(empty, 200_000, b"\n")
    text = refusal(empty)
    assert "more than 1000 lines" in text, text


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.spectui.gz"
    os.mkfifo(fifo)
    assert "not a regular file" in refusal(fifo)


def test_an_export_of_a_hand_made_gpu_list_is_one_sentence(tmp_path):
    path = tmp_path / "g.spectui.gz"
    write(path, header(), SESSION, {"t": 1.0, "ev": "gpu", "d": {"gpus": ["GPU0"]}})
    with pytest.raises(RecordingError, match="gpus\\[0\\] must be an object"):
        export(read_recording(path), "csv", tmp_path / "out")


# --- secrets and permissions ------------------------------------------------------------------------------------


def test_secret_flags_and_their_values_never_reach_the_file(tmp_path):
    secret, admin = "sk-live-0123456789", "adm-9876543210"
    argv = ["python3", "-m", "sglang.launch_server", "--api-key", secret, f"--admin-api-key={admin}", "--port", "1"]
    path = tmp_path / "rec" / "s.spectui.gz"
    w = RecordingWriter(path, {"host": {}, "profiles": [{"name": "a", "args": {"api-key": secret}, "env": {"K": "v"}}]})
    w.write("session", {"facts": {}, "servers": [{"name": "a", "state": "ready", "argv": argv,
                                                  "profile": {"name": "a", "args": {"api-key": secret}}}]})
    w.write("server", {"name": "a", "state": "ready", "argv": list(argv)})
    w.write("gpu", {"gpus": [{"index": 0, "processes": [{"pid": 1, "command": " ".join(argv)}]}]})
    w.write("log", {"name": "a", "reply": {"lines": [f"server_args=ServerArgs(api_key='{secret}', port=1)"]}})
    w.close()
    raw = gzip.decompress(path.read_bytes()).decode()
    assert secret not in raw and admin not in raw
    assert raw.count(REDACTED) >= 6
    rec = read_recording(path)
    (_, _, session), (_, _, server) = rec.events[0], rec.events[1]
    assert session["servers"][0]["argv"][3:6] == ["--api-key", REDACTED, f"--admin-api-key={REDACTED}"]
    assert server["argv"][-2:] == ["--port", "1"]
    assert argv[4] == secret   # the caller's data is not changed


def test_a_recording_is_private_in_a_private_folder(tmp_path):
    folder = tmp_path / "new" / "recordings"
    w = RecordingWriter(folder / "s.spectui.gz", {"host": {}})
    w.close()
    assert stat.S_IMODE((folder / "s.spectui.gz").stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_record_never_follows_a_link_nor_overwrites(tmp_path):
    victim = tmp_path / "victim.txt"
    dangling = tmp_path / "dangling.spectui.gz"
    dangling.symlink_to(victim)                      # the link's target does not exist yet
    with pytest.raises(RecordingError, match="exists"):
        RecordingWriter(dangling, {"host": {}})
    assert not victim.exists()
    existing = tmp_path / "made-after-the-check.spectui.gz"
    existing.write_text("keep me")
    with pytest.raises(RecordingError, match="exists"):
        RecordingWriter(existing, {"host": {}})
    assert existing.read_text() == "keep me"


def test_recordings_started_in_the_same_second_get_their_own_files(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(tmp_path / "data"))
    from spectui.core.paths import recordings_dir
    path = recordings_dir() / "gpu-box-20251201-120000.spectui.gz"
    first = RecordingWriter(path, {"host": {}})
    second = RecordingWriter(path, {"host": {}})
    first.close()
    second.close()
    assert first.path == path and second.path != path and second.path.parent == path.parent
    assert second.path.name.endswith(".spectui.gz")


@pytest.mark.parametrize("limit", ["MAX_INFLATED_BYTES", "MAX_EVENTS"])
def test_the_writer_stops_where_a_reader_would_refuse(tmp_path, monkeypatch, limit):
    """Whatever the limits are, a recording spectui wrote up to them is one spectui reads."""
    monkeypatch.setattr(recording, limit, {"MAX_INFLATED_BYTES": 20_000, "MAX_EVENTS": 150}[limit])
    w = RecordingWriter(tmp_path / "full.spectui.gz", {"host": {}})
    w.write("session", {"facts": {}, "servers": []})
    written = 0
    while w.write("note", {"i": written, "pad": "x" * 40}):
        written += 1
    assert w.closed and "stopped at the most a recording holds" in w.error and written > 10
    rec = read_recording(tmp_path / "full.spectui.gz")
    assert [d["i"] for _, ev, d in rec.events if ev == "note"] == list(range(written)) and not rec.truncated
