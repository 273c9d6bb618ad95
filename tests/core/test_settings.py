"""The settings file: loading, errors located by line, where it lives, and saving the theme."""

from pathlib import Path

import pytest
import yaml

from spectui.core.paths import settings_file, user_config_dir
from spectui.core.settings import SettingsSaveError, load_settings, save_theme

FULL = """\
# my console
theme: nord
default_host: alice@gpu-box:2222
telemetry_hz: 2.5
ssh:
  config: /etc/ssh/alt_config
  identity: [/keys/a, /keys/b]
  port: 2200
  jump: bastion
  known_hosts: /keys/known
  accept_new_host_key: true
  connect_timeout: 30
keymap:
  dashboard.stop: X
  dashboard.help: "f1,h"
demo:
  port_base: 31000
probe:
  backend: gloo
  device: cpu
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "config.yaml"
    p.write_text(text)
    return p


def test_every_setting_loads(tmp_path):
    s = load_settings(write(tmp_path, FULL))
    assert s.errors == []
    assert s.theme == "nord"
    assert s.default_host == "alice@gpu-box:2222"
    assert s.telemetry_hz == 2.5
    assert s.ssh.config_file == "/etc/ssh/alt_config"
    assert s.ssh.identity_files == ["/keys/a", "/keys/b"]
    assert s.ssh.port == 2200
    assert s.ssh.jump == "bastion"
    assert s.ssh.known_hosts == "/keys/known"
    assert s.ssh.accept_new_host_key is True
    assert s.ssh.connect_timeout == 30.0
    assert s.keymap == {"dashboard.stop": "X", "dashboard.help": "f1,h"}
    assert s.demo_port_base == 31000
    assert (s.probe_backend, s.probe_device) == ("gloo", "cpu")


def test_a_bad_probe_setting_is_one_located_sentence_and_the_rest_applies(tmp_path):
    p = write(tmp_path, "probe:\n  backend: gloo\n  device: tpu\n  iters: 5\n")
    s = load_settings(p)
    assert (s.probe_backend, s.probe_device) == ("gloo", None)
    assert [str(e) for e in s.errors] == [
        f"{p}:3:11: 'probe.device' is one of auto, cuda, cpu, not 'tpu'",
        f"{p}:4:3: 'iters' is not an option of 'probe'; the known ones are backend, device"]


def test_a_missing_file_is_no_settings_and_no_error(tmp_path):
    s = load_settings(tmp_path / "absent.yaml")
    assert s.errors == [] and s.theme is None and s.keymap == {} and s.ssh.identity_files == []


def test_one_identity_path_and_a_tilde(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", "/home/op")
    s = load_settings(write(tmp_path, "ssh:\n  identity: ~/.ssh/id_ed25519\n"))
    assert s.errors == []
    assert s.ssh.identity_files == ["/home/op/.ssh/id_ed25519"]


def test_each_problem_names_its_line_and_the_rest_still_applies(tmp_path):
    p = write(tmp_path, """\
themes: nord
default_host: gpu-box
telemetry_hz: 50
ssh:
  port: twenty-two
  jumphost: bastion
  jump: bastion
keymap:
  dashboard.stop: 7
demo:
  port_base: 80
""")
    s = load_settings(p)
    texts = [str(e) for e in s.errors]
    assert texts == [
        f"{p}:1:1: 'themes' is not a setting; did you mean 'theme'?",
        f"{p}:3:15: 'telemetry_hz' is the GPU telemetry rate in Hz: a number from 0 to 10, not 50",
        f"{p}:5:9: 'port' is the SSH port: a whole number from 1 to 65535, not 'twenty-two'",
        f"{p}:6:3: 'jumphost' is not an option of 'ssh'; did you mean 'jump'?",
        f"{p}:9:19: give dashboard.stop its keys as text, e.g. \"x\" or \"x,ctrl+x\"",
        f"{p}:11:14: 'port_base' is the first port of the demo servers: a whole number from 1024 to 65535, not 80",
    ]
    # what was right still applies; what was wrong keeps its default
    assert s.default_host == "gpu-box" and s.ssh.jump == "bastion"
    assert s.theme is None and s.telemetry_hz is None and s.ssh.port is None and s.keymap == {}
    assert s.demo_port_base is None


def test_a_host_starting_with_a_dash_is_refused(tmp_path):
    p = write(tmp_path, "default_host: -oProxyCommand=x\n")
    s = load_settings(p)
    assert s.default_host is None
    assert str(s.errors[0]).startswith(f"{p}:1:15: 'default_host' takes one [user@]host[:port]")


def test_bad_yaml_is_one_located_sentence(tmp_path):
    p = write(tmp_path, "theme: nord\nssh: [unclosed\n")
    s = load_settings(p)
    assert len(s.errors) == 1
    assert str(s.errors[0]).startswith(f"{p}:3:1: invalid YAML")
    assert s.theme is None


def test_a_list_instead_of_a_map(tmp_path):
    p = write(tmp_path, "- theme\n- nord\n")
    s = load_settings(p)
    assert [str(e) for e in s.errors] == [f"{p}:1:1: the settings file must be a map of settings (theme:, "
                                          "default_host:, ...); nothing in it was applied"]


def test_error_at_locates_a_value_the_console_checks(tmp_path):
    p = write(tmp_path, "theme: nord\nkeymap:\n  dashbord.stop: X\n")
    s = load_settings(p)
    assert str(s.error_at(("keymap", "dashbord.stop"), "no such id")) == f"{p}:3:18: no such id"
    assert str(s.error_at(("keymap", "dashbord.stop"), "no such id", key=True)) == f"{p}:3:3: no such id"


# --- where the file is ------------------------------------------------------------------------------------------------
def test_spectui_config_dir_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECTUI_CONFIG_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert settings_file() == tmp_path / "mine" / "config.yaml"


def test_xdg_config_home_is_followed(monkeypatch, tmp_path):
    monkeypatch.delenv("SPECTUI_CONFIG_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert settings_file() == tmp_path / "xdg" / "spectui" / "config.yaml"
    assert user_config_dir() == tmp_path / "xdg" / "spectui"


def test_a_relative_xdg_config_home_is_ignored(monkeypatch, tmp_path):
    monkeypatch.delenv("SPECTUI_CONFIG_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert not str(settings_file()).startswith("relative")


def test_load_settings_reads_the_overridden_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECTUI_CONFIG_DIR", str(tmp_path))
    (tmp_path / "config.yaml").write_text("theme: dracula\n")
    assert load_settings().theme == "dracula"


# --- saving the theme -------------------------------------------------------------------------------------------------
def test_saving_the_theme_keeps_the_other_keys_and_the_comments(tmp_path):
    p = write(tmp_path, FULL)
    save_theme("gruvbox", p)
    text = p.read_text()
    assert text == FULL.replace("theme: nord", "theme: gruvbox")
    assert "# my console" in text


def test_saving_reads_the_file_again_so_keys_added_meanwhile_stay(tmp_path):
    p = write(tmp_path, "theme: nord\n")
    load_settings(p)
    p.write_text("theme: nord  # picked in the palette\ndefault_host: later-added\n")
    save_theme("dracula", p)
    assert p.read_text() == "theme: dracula  # picked in the palette\ndefault_host: later-added\n"


def test_saving_appends_the_theme_when_the_file_has_none(tmp_path):
    p = write(tmp_path, "default_host: gpu-box\nkeymap:\n  dashboard.stop: X")  # no final newline
    save_theme("nord", p)
    assert p.read_text() == "default_host: gpu-box\nkeymap:\n  dashboard.stop: X\ntheme: nord\n"


def test_saving_creates_the_file_and_its_folder(tmp_path):
    p = tmp_path / "new" / "spectui" / "config.yaml"
    save_theme("textual-light", p)
    assert yaml.safe_load(p.read_text()) == {"theme": "textual-light"}


def test_a_flow_map_is_written_out_again_with_every_key(tmp_path):
    p = write(tmp_path, "{theme: nord, default_host: gpu-box, keymap: {dashboard.stop: X}}\n")
    save_theme("dracula", p)
    assert yaml.safe_load(p.read_text()) == {"theme": "dracula", "default_host": "gpu-box",
                                             "keymap": {"dashboard.stop": "X"}}


def test_a_theme_name_yaml_would_misread_is_quoted(tmp_path):
    p = write(tmp_path, "theme: nord\n")
    save_theme("yes", p)
    assert p.read_text() == 'theme: "yes"\n'
    assert load_settings(p).theme == "yes"


def test_a_broken_file_is_left_alone(tmp_path):
    broken = "theme: nord\nssh: [unclosed\n"
    p = write(tmp_path, broken)
    with pytest.raises(SettingsSaveError) as info:
        save_theme("dracula", p)
    assert p.read_text() == broken
    assert str(info.value).startswith(f"the theme was not saved, because {p}:3:1: invalid YAML")


def test_a_symlinked_file_keeps_its_link(tmp_path):
    real = tmp_path / "dotfiles" / "spectui.yaml"
    real.parent.mkdir()
    real.write_text("theme: nord\ndefault_host: gpu-box\n")
    link = tmp_path / "config.yaml"
    link.symlink_to(real)
    save_theme("dracula", link)
    assert link.is_symlink()
    assert real.read_text() == "theme: dracula\ndefault_host: gpu-box\n"


def test_a_file_that_cannot_be_written_is_one_sentence(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    p = blocker / "config.yaml"  # its folder is a file: nothing can be created there, not even by root
    with pytest.raises(SettingsSaveError) as info:
        save_theme("dracula", p)
    assert str(info.value).startswith(f"the theme was not saved to {p}: ")
    assert blocker.read_text() == ""
