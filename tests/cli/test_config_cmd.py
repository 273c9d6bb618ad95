"""``spectui config path`` and ``spectui config show``: each setting's value and where it came from, a flag,
an environment variable, the settings file with its line, or the default."""

from __future__ import annotations

import json

import pytest

from spectui.cli.main import main

SETTINGS = """\
theme: nord
# the SSH defaults
ssh:
  port: 2200
  jump: bastion
telemetry_hz: 99
keymap:
  dashboard.stop: X
alerts:
  bell: true
"""


@pytest.fixture
def config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTUI_CONFIG_DIR", str(tmp_path / "config"))
    for variable in ("SPECTUI_DATA_DIR", "XDG_DATA_HOME", "SPECTUI_LOG", "SPECTUI_PRESETS_PATH"):
        monkeypatch.delenv(variable, raising=False)
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(SETTINGS)
    return tmp_path / "config"


def shown(capsys, *flags) -> dict[str, dict]:
    assert main(["config", "show", "--json", *flags]) == 0
    out, err = capsys.readouterr()
    return {row["name"]: row for row in json.loads(out)} | {"_stderr": err}


def test_config_path_prints_the_settings_file(config_dir, capsys):
    assert main(["config", "path"]) == 0
    assert capsys.readouterr().out == f"{config_dir / 'config.yaml'}\n"


def test_each_source_is_named(config_dir, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(tmp_path / "data"))
    got = shown(capsys, "-J", "other-jump", "--telemetry-hz", "3")
    path = config_dir / "config.yaml"
    assert got["theme"] | {} == {"name": "theme", "value": "nord", "source": "file", "where": f"{path}:1"}
    assert (got["ssh.port"]["value"], got["ssh.port"]["source"], got["ssh.port"]["where"]) == (2200, "file",
                                                                                                 f"{path}:4")
    assert (got["ssh.jump"]["value"], got["ssh.jump"]["source"], got["ssh.jump"]["where"]) == ("other-jump", "flag",
                                                                                                 "-J")
    assert (got["telemetry_hz"]["value"], got["telemetry_hz"]["source"]) == (3.0, "flag")
    assert (got["keymap.dashboard.stop"]["value"], got["keymap.dashboard.stop"]["where"]) == ("X", f"{path}:8")
    assert (got["alerts.bell"]["value"], got["alerts.bell"]["where"]) == (True, f"{path}:10")
    assert (got["data_dir"]["value"], got["data_dir"]["source"], got["data_dir"]["where"]) == (
        str(tmp_path / "data"), "env", "SPECTUI_DATA_DIR")
    assert (got["config_dir"]["source"], got["config_dir"]["where"]) == ("env", "SPECTUI_CONFIG_DIR")
    assert (got["ssh.connect_timeout"]["value"], got["ssh.connect_timeout"]["source"]) == (15.0, "default")
    assert got["log"]["source"] == "default"


def test_a_refused_value_is_the_default_and_the_problem_is_on_stderr(config_dir, capsys):
    got = shown(capsys)
    assert (got["telemetry_hz"]["value"], got["telemetry_hz"]["source"]) == (1.0, "default")
    assert "config.yaml:6" in got["_stderr"] and "telemetry_hz" in got["_stderr"]


def test_environment_variables_win_and_the_log_flag_wins_over_them(config_dir, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SPECTUI_LOG", "info")
    assert (shown(capsys)["log"]["value"], shown(capsys)["log"]["source"]) == ("info", "env")
    got = shown(capsys, "--debug")
    assert (got["log"]["value"], got["log"]["source"], got["log"]["where"]) == ("debug", "flag", "--debug")


def test_text_output_names_file_and_line(config_dir, capsys):
    assert main(["config", "show"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("ssh.port "))
    assert "2200" in line and f"(file: {config_dir / 'config.yaml'}:4)" in line


def test_no_settings_file_is_all_defaults(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPECTUI_CONFIG_DIR", str(tmp_path / "none"))
    got = shown(capsys)
    assert got["config_file"]["source"] == "default" and got["theme"]["source"] == "default"
    assert got["_stderr"] == ""
