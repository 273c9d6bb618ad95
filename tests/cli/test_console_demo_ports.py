"""`spectui demo --port-base N` and the settings' demo.port_base: the flag wins, a port base out of range or
with a taken port is refused in one sentence before the console opens; `spectui connect` moves no port."""

import socket

import pytest

from spectui.cli import console
from spectui.cli.hostopts import host_settings
from spectui.cli.main import build_parser, main
from spectui.core.profiles import load_profiles
from tests.core.test_demo_ports import free_block


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A private config folder (no user profiles) and demo state: the shipped profiles, on two ports."""
    monkeypatch.setenv("SPECTUI_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.delenv("SPECTUI_PROFILES_PATH", raising=False)
    monkeypatch.setenv("SPECTUI_DEMO_STATE", str(tmp_path / "state"))
    (tmp_path / "config").mkdir()
    return tmp_path


def parse(*argv):
    return build_parser().parse_args(list(argv))


def shipped_ports():
    return sorted({p.port for p in load_profiles()})


def test_the_settings_port_base_is_the_default_and_the_flag_wins(env):
    assert len(shipped_ports()) == 2
    first = free_block(2, start=41000)
    second = free_block(2, start=first + 10)
    (env / "config" / "config.yaml").write_text(f"demo:\n  port_base: {first}\n")
    for argv, base in ((["demo"], first), (["demo", "--port-base", str(second)], second)):
        args = parse(*argv)
        plan = console.demo_ports(args, host_settings(args), load_profiles())
        assert plan.base == base
        assert sorted({p.port for p in plan.apply(load_profiles())}) == [base, base + 1]


def test_a_taken_port_base_is_refused_in_one_sentence_before_the_console_opens(env, capsys):
    base = free_block(2, start=42000)
    with socket.socket() as s:
        s.bind(("127.0.0.1", base + 1))
        s.listen()
        assert main(["demo", "--port-base", str(base)]) == 2
    assert capsys.readouterr().err == (
        f"spectui demo: --port-base {base}: port {base + 1} of the demo's range {base}-{base + 1} is in use on "
        "this machine; stop what listens there or choose another port base.\n")


def test_a_settings_port_base_that_does_not_fit_names_the_file(env, capsys):
    path = env / "config" / "config.yaml"
    path.write_text("demo:\n  port_base: 65535\n")
    assert main(["demo"]) == 2
    assert capsys.readouterr().err == (f"spectui demo: demo.port_base in {path} takes a port from 1024 to 65534 "
                                       "(the demo's profiles use 2 ports from it), not 65535.\n")


def test_the_flag_out_of_range_is_refused(env, capsys):
    assert main(["demo", "--port-base", "80"]) == 2
    assert capsys.readouterr().err == ("spectui demo: --port-base takes a port from 1024 to 65534 (the demo's "
                                       "profiles use 2 ports from it), not 80.\n")


def test_connect_has_no_port_base_and_moves_no_port(env, capsys):
    (env / "config" / "config.yaml").write_text("demo:\n  port_base: 31000\n")
    args = parse("connect", "gpu-box")
    assert console.build_target(args, host_settings(args)).ports is None
    with pytest.raises(SystemExit):
        parse("connect", "gpu-box", "--port-base", "31000")
    assert "unrecognized arguments: --port-base 31000" in capsys.readouterr().err
