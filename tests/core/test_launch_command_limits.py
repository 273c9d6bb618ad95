"""Launch commands: one far larger than any real launch is refused in one sentence before it is read, and
bash's ANSI-C quoting (``$'...'``) gives the words bash gives, checked against bash itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spectui.core.profiles import launch_command
from spectui.core.profiles.launch_command import (MAX_COMMAND_BYTES, LaunchCommandError, read_launch_command,
                                                  split_commands)

ROOT = Path(__file__).resolve().parents[2]


def huge_command() -> str:
    words = " ".join(f"--flag-{i} value-{i}" for i in range(200_000))
    return f"python3 -m sglang.launch_server --model-path org/model {words}\n"


def test_a_command_over_the_limit_is_refused_before_it_is_read(monkeypatch):
    text = huge_command()
    assert len(text) > MAX_COMMAND_BYTES
    read = []
    monkeypatch.setattr(launch_command, "split_commands", lambda t: read.append(t) or [])
    with pytest.raises(LaunchCommandError) as info:
        read_launch_command(text)
    message = str(info.value)
    assert not read and "\n" not in message
    assert f"{MAX_COMMAND_BYTES // 1024} KB" in message and str(len(text.encode())) in message


def test_a_command_at_the_limit_is_read():
    head = "python3 -m sglang.launch_server --model-path org/model --served-model-name "
    text = head + "x" * (MAX_COMMAND_BYTES - len(head))
    assert len(text.encode()) == MAX_COMMAND_BYTES
    assert read_launch_command(text).args[-1].text == "x" * (MAX_COMMAND_BYTES - len(head))


def test_profiles_import_of_a_huge_command_is_one_sentence(tmp_path):
    path = tmp_path / "launch.sh"
    path.write_text(huge_command())
    result = subprocess.run([sys.executable, "-m", "spectui", "profiles", "import", "--file", str(path)],
                            capture_output=True, text=True, cwd=ROOT, timeout=300,
                            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert result.returncode != 0 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "KB" in lines[0] and "please report" not in lines[0], result.stderr[-2000:]


# --- $'...' against bash --------------------------------------------------------------------------------------------
ANSI_C = [
    r"$'a\nb'", r"$'a\tb'", r"$'back\\slash'", r"$'it\'s'", r"$'\x41B'", r"$'\x4'", r"$'\xAz'", r"$'\101'",
    r"$'\0101'", r"$'\1234'", r"$'\e[1m'", r"$'\E'", r"$'\a\b\f\v\r'", r"$'\u00e9'", r"$'\U0001F600'",
    r"$'\u00411'", r"$'\U0000004142'", r"$'\q'", r"$'\x'", r"$'\u'", r"$'\8'", r"$'\"'", r"$'\?'", r"$'\cA'",
    r"$'\ca'", r"$'\c?'", r"$'\c['", r"$'\c1'", r"$'\c\\'", r"$'\c\x'", r"$'\c'x", r"$'a\0b'c", r"$'a\x00b'c",
    r"$'a\u0000b'c", r"$'\400'x", r"$'\c@'y", r"--k=$'v\tw'", r"$'a'$'b'", r"x$'\n'y", "\"$'x'\"", r"$'a'\''b'",
    "$'two\nlines'", r'$"plain"', r"$''", r"$'\''",
]


def bash_bytes(text: str) -> bytes:
    """What bash passes a program for ``text``: each word followed by a NUL."""
    return subprocess.run(["bash", "-c", f"printf '%s\\0' {text}"], capture_output=True, timeout=30,
                          env={**os.environ, "LC_ALL": "C.UTF-8"}, check=True).stdout


def bash_words(text: str) -> list[str]:
    return bash_bytes(text).decode("utf-8").split("\0")[:-1]


@pytest.mark.parametrize("text", ANSI_C)
def test_ansi_c_quoting_reads_as_bash_reads_it(text):
    expected = bash_words(text)
    (words,) = split_commands(f"cmd {text}")
    assert [w.text for w in words[1:]] == expected


def test_a_launch_with_ansi_c_quoting_keeps_the_value():
    launch = read_launch_command("python3 -m sglang.launch_server --model-path $'org/model' "
                                 "--chat-template $'{{ a }}\\n{{ b }}'\n")
    assert [w.text for w in launch.args] == ["--model-path", "org/model", "--chat-template", "{{ a }}\n{{ b }}"]


@pytest.mark.parametrize("text", [r"$'\xff'", r"$'\uD800'", r"$'\U110000'"])
def test_ansi_c_quoting_that_makes_no_text_is_refused(text):
    with pytest.raises(UnicodeDecodeError):
        bash_bytes(text).decode("utf-8")       # bash makes bytes that are not text of these
    with pytest.raises(LaunchCommandError, match="line 1 .*UTF-8"):
        split_commands(f"cmd {text}")


def test_an_unclosed_ansi_c_quote_is_refused():
    with pytest.raises(LaunchCommandError, match="line 2 opens"):
        split_commands("cmd\ncmd $'abc\\'")
