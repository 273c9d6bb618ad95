"""A control character YAML does not allow (NUL, a raw ESC, C1 bytes) in a profile or the settings file is
refused in one sentence naming the file and the line:column, as a syntax error is: no command ends in a
traceback, and the rest of the profiles still load."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from spectui.core.profiles.errors import ProfileError
from spectui.core.profiles.loader import load_profiles
from spectui.core.profiles.yamlsource import parse_yaml
from spectui.core.settings import SettingsSaveError, load_settings, save_theme

ROOT = Path(__file__).resolve().parents[2]
CONTROLS = {"NUL": "\x00", "ESC": "\x1b", "BEL": "\x07", "C1 CSI": "\x9b", "U+FFFE": "\ufffe"}


@pytest.mark.parametrize("name", CONTROLS)
def test_a_control_character_is_refused_at_its_line_and_column(name):
    text = f"name: evil\nmodel: m\ndescription: \"ab{CONTROLS[name]}[2J\"\n"
    with pytest.raises(ProfileError) as info:
        parse_yaml(text, "evil.yaml")
    err = info.value
    assert (err.path, err.line, err.column) == ("evil.yaml", 3, 17)
    assert str(err).startswith("evil.yaml:3:17: ") and "\n" not in str(err)
    assert f"U+{ord(CONTROLS[name]):04X}" in str(err)
    assert CONTROLS[name] not in str(err)


def test_a_tab_and_a_newline_are_not_control_characters_to_refuse():
    assert parse_yaml("name: ok\ndescription: \"a\tb\"\r\n", "ok.yaml").data == {"name": "ok", "description": "a\tb"}


def test_the_other_profiles_still_load(tmp_path):
    folder = tmp_path / "profiles"
    folder.mkdir()
    (folder / "ok.yaml").write_text("name: ok\nmodel: org/model\n")
    (folder / "evil.yaml").write_text("name: evil\nmodel: m\ndescription: \"a\x1bb\"\n")
    library = load_profiles([folder], layers=[])
    assert library.get("ok") is not None
    assert [(e.path, e.line, e.column) for e in library.errors] == [(str(folder / "evil.yaml"), 3, 16)]


def test_the_settings_file_reports_it_and_saving_the_theme_leaves_it_alone(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_bytes(b"theme: dark\ndefault_host: box\x00\n")
    settings = load_settings(path)
    assert [(e.line, e.column) for e in settings.errors] == [(2, 18)]
    with pytest.raises(SettingsSaveError, match=r"config.yaml:2:18"):
        save_theme("light", path)
    assert path.read_bytes() == b"theme: dark\ndefault_host: box\x00\n"


def spectui(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home), "SPECTUI_CONFIG_DIR": str(home / "config"),
           "SPECTUI_CACHE_DIR": str(home / "cache"), "SPECTUI_DATA_DIR": str(home / "data"),
           "SPECTUI_DEMO_STATE": str(home / "demo"), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "spectui", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=300, stdin=subprocess.DEVNULL)


COMMANDS = [["profiles", "list"], ["profiles", "check"], ["demo"], ["servers", "start", "evil", "--demo"]]


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_commands_treat_it_as_a_syntax_error(tmp_path, command):
    """The anchor: the same file with a YAML syntax error at the same place; each command must do as it does."""
    results = {}
    for case, value in (("control", "\"a\x1b[2Jb\""), ("syntax", "a: b")):
        home = tmp_path / case
        (home / "config" / "profiles").mkdir(parents=True)
        (home / "config" / "profiles" / "evil.yaml").write_text(f"name: evil\nmodel: m\ndescription: {value}\n")
        results[case] = spectui(home, *command)
    control, syntax = results["control"], results["syntax"]
    assert "Traceback" not in control.stderr and "ReaderError" not in control.stderr, control.stderr[-3000:]
    assert "\x1b" not in control.stderr + control.stdout
    assert control.returncode == syntax.returncode, (control.stderr[-2000:], syntax.stderr[-2000:])
    located = ["evil.yaml:3:" in r.stderr + r.stdout for r in (control, syntax)]
    assert located[0] == located[1], (control.stderr[-2000:], syntax.stderr[-2000:])
    assert located[0] or command[0] != "profiles"   # the profile commands list the problem


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]   # nothing listens there once the socket closes


def test_status_and_a_settings_file_with_a_nul(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_bytes(b"theme: dark\ndefault_host: box\x00\n")
    result = spectui(tmp_path, "status", "-H", "nobody@127.0.0.1", "-p", str(closed_port()), "--connect-timeout", "5")
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "config.yaml:2:18" in result.stderr
