"""`spectui replay FILE` and `spectui connect|demo --record FILE`, `spectui demo --scenario`: each bad input is one
sentence and changes nothing (a recording is never overwritten); the checks come before the console needs a
terminal, so they hold in scripts too."""

from __future__ import annotations

import gzip

import pytest

from spectui.cli.main import main
from spectui.core.recording import RecordingWriter


def last_line(capsys) -> str:
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.fixture
def recording(tmp_path):
    path = tmp_path / "s.spectui.gz"
    w = RecordingWriter(path, {"target": "root@gpu-box", "profiles": []})
    w.write("session", {"facts": {"hostname": "gpu-box"}, "servers": []})
    w.write("gpu", {"seq": 1, "gpus": []})
    w.close()
    return path


def test_replay_refuses_what_is_not_a_recording(tmp_path, capsys):
    missing = tmp_path / "nope.gz"
    assert main(["replay", str(missing)]) == 1
    assert last_line(capsys) == f"spectui: cannot read the recording {missing}: No such file or directory."
    text = tmp_path / "notes.txt"
    text.write_text("baseline 82 tok/s\n")
    assert main(["replay", str(text)]) == 1
    assert last_line(capsys) == f"spectui: {text} is not a spectui recording (it is empty or not gzip-compressed)."
    other = tmp_path / "other.gz"
    other.write_bytes(gzip.compress(b'{"format": "something-else"}\n'))
    assert main(["replay", str(other)]) == 1
    assert "is not a spectui recording (its first line is not a recording header)" in last_line(capsys)


def test_replay_speed_and_start_are_checked(recording, capsys):
    assert main(["replay", str(recording), "--speed", "100"]) == 2
    assert last_line(capsys) == "spectui: replay speed must be from 1x to 60x, not 100x."
    assert main(["replay", str(recording), "--from", "5000"]) == 2
    assert "is outside the recording" in last_line(capsys)
    assert main(["replay", str(recording)]) == 2  # fine, but a console needs a terminal
    assert "spectui recording info|export" in last_line(capsys)


@pytest.mark.parametrize("command", [["demo"], ["connect", "root@gpu-box"]])
def test_record_never_overwrites_and_needs_a_folder_that_exists(command, recording, tmp_path, capsys):
    before = recording.read_bytes()
    assert main([*command, "--record", str(recording)]) == 2
    assert last_line(capsys) == (f"spectui: --record {recording} exists; give another file name (a recording is "
                                 "never overwritten).")
    assert recording.read_bytes() == before
    assert main([*command, "--record", str(tmp_path)]) == 2
    assert f"--record {tmp_path} is a folder" in last_line(capsys)
    nowhere = tmp_path / "no" / "such" / "r.gz"
    assert main([*command, "--record", str(nowhere)]) == 2
    assert last_line(capsys) == f"spectui: --record {nowhere}: the folder {nowhere.parent} does not exist."


def test_demo_scenario_is_checked(capsys):
    assert main(["demo", "--scenario", "shift", "--shift-after", "1"]) == 2
    assert last_line(capsys) == "spectui demo: --shift-after must be between 5 and 3600 seconds, not 1."
    with pytest.raises(SystemExit):
        main(["demo", "--scenario", "chaos"])
    assert "invalid choice: 'chaos'" in capsys.readouterr().err
