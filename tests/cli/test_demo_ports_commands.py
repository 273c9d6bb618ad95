"""`spectui servers|bench|tune ... --demo` move a taken profile port as `spectui demo` does (and say so), take
`--port-base`, and leave a real host's ports alone."""

from __future__ import annotations

import argparse
import json
import socket
import sys

import pytest

from spectui.cli.hostopts import demo_profiles
from spectui.cli.main import main
from spectui.core.profiles import load_profiles
from tests.core.test_demo_ports import free_block


class Pipe:
    def isatty(self):
        return False

    def readline(self):
        return ""


@pytest.fixture
def demo(state_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTUI_PROFILES_PATH", str(tmp_path / "profiles"))
    monkeypatch.setenv("SPECTUI_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "profiles").mkdir()
    monkeypatch.setattr(sys, "stdin", Pipe())
    return tmp_path


def profile(tmp_path, port: int) -> None:
    (tmp_path / "profiles" / "mine.yaml").write_text(
        f"name: mine\nmodel: sim/mine\nport: {port}\ngpus: [2]\nargs:\n  tp-size: 1\nsim:\n  load-time: 0.3\n")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def listed_port(capsys, *host) -> int:
    code, out, err = run(capsys, "servers", "list", *host, "--json")
    assert code == 0, err
    (server,) = [s for s in json.loads(out)["servers"] if s["name"] == "mine"]
    return server["port"]


def test_a_switch_on_the_demo_moves_off_a_taken_port_and_says_so(demo, state_dir, capsys):
    port = free_block(1, start=43000)
    profile(demo, port)
    host = ["--demo", "--state-dir", str(state_dir)]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        try:
            code, out, err = run(capsys, "servers", "switch", "mine", *host)
            assert code == 0, err
            assert f"demo: port {port} taken, using {port + 100}" in err
            assert "mine: ready" in out
            assert listed_port(capsys, *host) == port + 100
        finally:
            run(capsys, "servers", "stop", *host)


def test_port_base_places_the_demo_servers(demo, state_dir, capsys):
    base = free_block(1, start=44000)
    profile(demo, 30000)
    host = ["--demo", "--state-dir", str(state_dir), "--port-base", str(base)]
    try:
        code, out, err = run(capsys, "servers", "switch", "mine", *host)
        assert code == 0, err
        assert listed_port(capsys, *host) == base
    finally:
        run(capsys, "servers", "stop", *host)


def test_a_real_host_keeps_its_ports(demo):
    port = free_block(1, start=45000)
    profile(demo, port)
    library = load_profiles()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        args = argparse.Namespace(demo=False, destination="local", state_dir=None, port_base=None)
        assert demo_profiles(args, library) is library
        args = argparse.Namespace(demo=True, destination=None, state_dir=str(demo / "s"), port_base=None)
        assert demo_profiles(args, library).get("mine").port == port + 100
