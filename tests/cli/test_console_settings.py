"""The settings file as the command line's defaults: the host of `spectui connect`, the SSH options
(the command line wins) and the telemetry rate."""

import pytest

from spectui.cli import console
from spectui.cli.hostopts import host_settings, target_from_args
from spectui.cli.main import build_parser, main

SETTINGS = """\
default_host: alice@gpu-box
telemetry_hz: 4
ssh:
  config: /etc/alt_ssh_config
  identity: [/keys/a]
  port: 2200
  jump: bastion
  known_hosts: /keys/known
  accept_new_host_key: true
  connect_timeout: 40
"""


@pytest.fixture
def config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTUI_CONFIG_DIR", str(tmp_path))
    return tmp_path


def parse(*argv):
    return build_parser().parse_args(list(argv))


def test_connect_without_dest_uses_the_default_host_and_the_ssh_settings(config_dir):
    (config_dir / "config.yaml").write_text(SETTINGS)
    args = parse("connect")
    settings = host_settings(args)
    target = console.build_target(args, settings)
    assert target.kind == "ssh" and target.destination == "alice@gpu-box"
    o = target.ssh
    assert (o.config_file, o.identity_files, o.port, o.jump, o.known_hosts) == \
        ("/etc/alt_ssh_config", ["/keys/a"], 2200, "bastion", "/keys/known")
    assert o.accept_new_host_key is True and o.connect_timeout == 40.0
    assert console.telemetry_hz(args, settings) == 4.0


def test_the_command_line_wins_over_the_settings(config_dir):
    (config_dir / "config.yaml").write_text(SETTINGS)
    args = parse("connect", "bob@other", "-F", "/my/config", "-i", "/keys/b", "-p", "22", "-J", "hop",
                 "--known-hosts", "/my/known", "--connect-timeout", "5", "--telemetry-hz", "0")
    settings = host_settings(args)
    target = console.build_target(args, settings)
    o = target.ssh
    assert target.destination == "bob@other"
    assert (o.config_file, o.identity_files, o.port, o.jump, o.known_hosts, o.connect_timeout) == \
        ("/my/config", ["/keys/b"], 22, "hop", "/my/known", 5.0)
    assert console.telemetry_hz(args, settings) == 0.0


def test_without_settings_the_defaults_are_unchanged(config_dir):
    args = parse("connect", "gpu-box")
    settings = host_settings(args)
    o = target_from_args(args).ssh
    assert (o.config_file, o.identity_files, o.port, o.jump, o.known_hosts) == (None, [], None, None, None)
    assert o.accept_new_host_key is False and o.connect_timeout == 15.0
    assert console.telemetry_hz(args, settings) == 1.0


def test_other_commands_take_the_ssh_settings_too(config_dir):
    (config_dir / "config.yaml").write_text("ssh:\n  port: 2222\n")
    args = parse("status", "-H", "gpu-box")
    assert target_from_args(args).ssh.port == 2222


def test_connect_with_no_host_anywhere_says_what_to_do(config_dir, capsys):
    assert main(["connect"]) == 2
    err = capsys.readouterr().err
    assert err == (f"spectui: spectui connect needs DEST ([user@]host[:port] or an SSH config alias), or "
                   f"default_host or hosts in {config_dir / 'config.yaml'}.\n")


def test_a_settings_problem_is_printed_and_the_command_goes_on(config_dir, capsys):
    (config_dir / "config.yaml").write_text("ssh:\n  port: 0\n  jump: bastion\n")
    args = parse("status", "-H", "gpu-box")
    target = target_from_args(args)
    assert target.ssh.jump == "bastion" and target.ssh.port is None
    assert capsys.readouterr().err == (f"spectui: {config_dir / 'config.yaml'}:2:9: 'port' is the SSH port: a "
                                       "whole number from 1 to 65535, not 0 (ignored; the other settings "
                                       "apply)\n")


def test_a_telemetry_rate_out_of_range_is_refused(config_dir, capsys):
    assert main(["demo", "--telemetry-hz", "11"]) == 2
    assert capsys.readouterr().err == "spectui: --telemetry-hz must be between 0 and 10, not 11.\n"


def test_the_settings_hosts_are_the_hosts_of_a_bare_connect(config_dir, capsys):
    from spectui.cli.console import connect_destinations
    from spectui.cli.hostopts import host_settings

    (config_dir / "config.yaml").write_text("default_host: gpu-z\nhosts: [gpu-a, 'bad host', gpu-b]\n")
    args = parse("connect")
    assert connect_destinations(args, host_settings(args, report=False)) == ["gpu-a", "gpu-b"]
    assert str(host_settings(args).errors[0]).endswith(
        "config.yaml:2:16: 'hosts' entry 2 takes one [user@]host[:port] or SSH config alias, without spaces and not starting "
        "with '-'")
    assert connect_destinations(parse("connect", "gpu-c", "gpu-d"), host_settings(args)) == ["gpu-c", "gpu-d"]
