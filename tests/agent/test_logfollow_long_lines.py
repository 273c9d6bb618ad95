"""A log line of any length is cut at 64 KiB and following goes on: memory stays bounded and the
offset always moves past it, in the follower and in the stateless ``server.logs`` reads."""

import os

import pytest

from spectui.agent.logs.follow import CUT_MARK, LINE_CAP_BYTES, LogFollower, read_lines_at
from spectui.agent.protocol import Channel
from spectui.agent.servers.manager import ServerManager

CAP = 64 * 1024
MARK = " [... line cut at 64 KiB]"


def append(path, data):
    with open(path, "ab") as fh:
        fh.write(data)


def test_the_cap_and_the_mark_are_what_a_reader_is_told():
    assert LINE_CAP_BYTES == CAP
    assert CUT_MARK % 64 == MARK


# -- the follower ---------------------------------------------------------------------------

def test_a_line_growing_past_the_cap_is_cut_once_and_its_rest_skipped(tmp_path):
    log = tmp_path / "server.log"
    append(log, b"before\n")
    f = LogFollower(str(log), max_read_bytes=1 << 20)
    assert f.read_new() == ["before"]
    lines = []
    for _ in range(6):  # 6 MiB of one line, written 1 MiB at a time
        append(log, b"y" * (1 << 20))
        lines += f.read_new()
        assert len(f._partial) <= CAP  # what is held stays under the cap
    assert lines == ["y" * CAP]
    assert f.cut_lines == 1
    append(log, b"y" * 10 + b"\nafter\n")
    assert f.read_new() == ["after"]
    assert f.offset == os.path.getsize(log)
    f.close()


def test_a_cut_line_is_marked_in_events_at_its_index(tmp_path):
    log = tmp_path / "server.log"
    append(log, b"one\n" + b"z" * (CAP + 1) + b"\ntwo\n")
    f = LogFollower(str(log))
    assert f.read_new() == ["one", "z" * CAP, "two"]
    assert f.events == [(1, "cut")]
    f.close()


def test_the_end_of_a_skipped_line_may_be_a_crlf_split_between_reads(tmp_path):
    log = tmp_path / "server.log"
    append(log, b"w" * (CAP + 100) + b"\r")
    f = LogFollower(str(log))
    assert f.read_new() == ["w" * CAP]  # the "\r" ended it, cut
    append(log, b"\nnext\n")
    assert f.read_new() == ["next"]  # the "\n" of its "\r\n" is no empty line
    append(log, b"v" * (2 * CAP) + b"tail end\r\nlast\n")
    assert f.read_new() == ["v" * CAP, "last"]
    f.close()


def test_a_stream_records_the_lines_after_a_cut_one(tmp_path):
    from spectui.agent.logs.follow import LogStream

    log = tmp_path / "server.log"
    append(log, b"x" * (3 << 20))
    stream = LogStream(str(log))
    first = stream.poll()
    append(log, b"\n")
    assert [r for r in first if r["kind"] == "log_reset"] == []  # a cut is no reset
    assert stream.follower.cut_lines == 1
    stream.close()


# -- server.logs reads ----------------------------------------------------------------------

def test_reads_from_an_offset_move_past_an_unfinished_overlong_line(tmp_path):
    log = tmp_path / "server.log"
    append(log, b"first\n" + b"x" * (2 << 20))  # 2 MiB, no newline yet
    with open(log, "rb") as fh:
        lines, off = read_lines_at(fh, 0)
        assert lines == ["first", "x" * CAP + MARK]
        assert off == 1 << 20  # one read's worth
        lines, off2 = read_lines_at(fh, off)  # the rest of the cut line is skipped, a read at a time
        assert lines == [] and off2 == 2 << 20
        lines, off2 = read_lines_at(fh, off2)
        assert lines == [] and off2 == 6 + (2 << 20)
        lines, off3 = read_lines_at(fh, off2)
        assert lines == [] and off3 == off2  # nothing new yet
    append(log, b"xx\nafter\n")
    with open(log, "rb") as fh:
        lines, off4 = read_lines_at(fh, off3)
    assert lines == ["after"] and off4 == os.path.getsize(log)


def test_reads_cut_finished_overlong_lines_and_keep_short_ones(tmp_path):
    log = tmp_path / "server.log"
    append(log, b"a\n\n" + b"q" * (CAP + 1) + b"\n" + b"q" * CAP + b"\nb\npartial")
    with open(log, "rb") as fh:
        lines, off = read_lines_at(fh, 0)
    assert lines == ["a", "", "q" * CAP + MARK, "q" * CAP, "b"]
    assert off == os.path.getsize(log) - len(b"partial")


def test_a_progress_bar_redrawn_past_the_cap_comes_as_its_updates(tmp_path):
    log = tmp_path / "server.log"
    updates = [b"Loading safetensors checkpoint shards: %3d%% Completed | %d/2000" % (i // 20, i)
               for i in range(2000)]
    bar = b"\r".join(updates) + b"\r"  # > 64 KiB, no "\n" yet
    assert len(bar) > CAP
    append(log, bar)
    with open(log, "rb") as fh:
        lines, off = read_lines_at(fh, 0)
        assert lines == [u.decode() for u in updates] and off == len(bar)
        append(log, b"\ndone\n")
        lines, off = read_lines_at(fh, off)
    assert lines == ["done"]


def test_the_offset_a_tail_gave_inside_a_short_line_resumes_there(tmp_path):
    log = tmp_path / "server.log"
    append(log, b"abc\nhalf")
    with open(log, "rb") as fh:
        append(log, b" line\n")
        assert read_lines_at(fh, 8) == ([" line"], 14)


@pytest.fixture
def manager(tmp_path):
    m = ServerManager(str(tmp_path / "state"), Channel(open(os.devnull, "wb")), lambda: None, simulated=True)
    yield m


def test_server_logs_follow_past_a_line_longer_than_a_read(manager):
    path = manager.store.log_path("big")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    append(path, b"start\n" + b"x" * (3 << 20))
    offset = 0
    seen = []
    for _ in range(5):
        r = manager.logs({"name": "big", "offset": offset})
        seen += r["lines"]
        assert r["offset"] >= offset
        offset = r["offset"]
    assert offset == 6 + (3 << 20)
    assert seen == ["start", "x" * CAP + MARK]
    append(path, b"\nafter\n")
    assert manager.logs({"name": "big", "offset": offset})["lines"] == ["after"]
