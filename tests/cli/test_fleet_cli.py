"""``spectui status`` and ``spectui servers list`` with several hosts: one table, one JSON object, a failed
host as its own line, and the host options that take several hosts."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import io
import json
import socket
import sys
import time

import pytest

from spectui.cli.fleet import ask_hosts, table
from spectui.cli.hostopts import add_host_options, targets_from_args
from spectui.cli.main import main
from spectui.core.errors import KeyPassphraseNeeded
from spectui.core.session import HostTarget
from tests.cli.hand_started import hand_started_server
from tests.support.crowded import CrowdedHost
from tests.support.sshd import free_port


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def parser(**kw) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    add_host_options(p, **kw)
    return p


def test_host_option_repeated_keeps_every_host_and_the_first():
    args = parser(multi=True).parse_args(["-H", "a", "--host", "b", "-i", "k"])
    assert args.destinations == ["a", "b"] and args.destination == "a"
    assert [(t.kind, t.destination, t.ssh.identity_files) for t in targets_from_args(args)] == \
        [("ssh", "a", ["k"]), ("ssh", "b", ["k"])]
    assert [t.destination for t in targets_from_args(args, ["x", "y", "z"])] == ["x", "y", "z"]
    demo = parser(multi=True).parse_args(["--demo"])
    assert demo.destination is None and [t.kind for t in targets_from_args(demo)] == ["demo"]
    with pytest.raises(SystemExit):
        parser(multi=True).parse_args(["-H", "a", "--demo"])
    single = parser().parse_args(["-H", "a"])
    assert single.destination == "a" and [t.destination for t in targets_from_args(single)] == ["a"]


def test_positional_hosts():
    p = parser(positional=True, multi=True)
    args = p.parse_args(["h1", "h2", "--python", "py"])
    assert args.destinations == ["h1", "h2"] and args.destination == "h1"
    assert [t.destination for t in targets_from_args(args)] == ["h1", "h2"]
    none = p.parse_args([])
    assert none.destinations == [] and none.destination is None and targets_from_args(none) == []
    assert targets_from_args(none, ["from-settings"])[0].destination == "from-settings"
    assert parser(positional=True).parse_args(["h1"]).destination == "h1"


def test_table_aligns_and_lets_an_error_run_on():
    text = table(["HOST", "STATE", "RTT", "GPUS"], [["a", "ok", "1.5", "-"], ["longer-host", "error", "It failed."]],
                 right=(2,))
    assert text.splitlines() == ["HOST         STATE  RTT  GPUS", "a            ok     1.5  -",
                                 "longer-host  error  It failed."]


def test_a_host_that_never_answers_is_cut_off_at_the_limit():
    async def hang(target):
        await asyncio.sleep(60)

    t0 = time.monotonic()
    [answer] = ask_hosts(["slow"], [HostTarget(kind="local")], hang, 0.3)
    assert time.monotonic() - t0 < 5
    assert str(answer.error).startswith("slow did not answer within 0.3 s")


@pytest.fixture
def local(state_dir):
    """Host options for the simulated host on this machine."""
    return ["--sim", "--python", sys.executable, "--state-dir", str(state_dir)]


def test_status_of_two_hosts_one_failing(capsys, local):
    closed = f"127.0.0.1:{free_port()}"
    code, out, err = run(capsys, "status", "-H", "local", "-H", closed, *local)
    assert code == 1
    header, ok, failed = out.splitlines()
    assert header.split() == ["HOST", "STATE", "GPUS", "SGLANG", "RTT", "MS", "TELEMETRY"]
    assert ok.split()[:3] == ["local", "ok", "8x"] and ok.endswith("sim")
    assert failed.split()[:2] == [closed, "error"] and failed.endswith("refused the connection: is sshd running "
                                                                       "there, and is the port right?")
    assert err == ""  # the table says it all; only an unknown host key adds the command that trusts it

    code, out, err = run(capsys, "status", "-H", "local", "-H", closed, *local, "--json")
    r = json.loads(out)
    assert code == 1 and r["schema"] == "spectui.status.hosts/1"
    first, second = r["hosts"]
    assert first["dest"] == "local" and first["schema"] == "spectui.status/1" and first["gpu_telemetry"]["available"]
    assert second == {"dest": closed, "schema": "spectui.status/1",
                      "error": {"kind": "HostUnreachable", "message": second["error"]["message"]}}
    assert err == f"spectui: {closed}: {second['error']['message']}\n"

    code, out, _ = run(capsys, "status", "-H", "local", *local, "--json")  # one host: the object as ever
    assert code == 0 and json.loads(out)["schema"] == "spectui.status/1"


def test_a_silent_host_costs_the_connect_timeout_not_more(capsys, local):
    with socket.socket() as silent:  # accepts TCP connections and never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        dest = f"127.0.0.1:{silent.getsockname()[1]}"
        t0 = time.monotonic()
        code, out, _ = run(capsys, "status", "-H", dest, "-H", "local", *local, "--connect-timeout", "2")
        elapsed = time.monotonic() - t0
    assert code == 1 and elapsed < 6
    lines = out.splitlines()
    assert lines[1].startswith(dest) and "Timed out connecting to" in lines[1]
    assert lines[2].split()[:2] == ["local", "ok"]


def test_servers_list_of_two_hosts(capsys, local, state_dir, tmp_path, monkeypatch):
    """Other SGLang servers may run on this machine (here one that answers, started beside the test): the
    lines checked are those of the hosts and the server this test started."""
    monkeypatch.setenv("SPECTUI_PROFILES_PATH", str(tmp_path / "profiles"))
    closed = f"127.0.0.1:{free_port()}"
    with CrowdedHost(silent=0, trickling=0, answering=1), hand_started_server(state_dir, tmp_path) as server:
        code, out, err = run(capsys, "servers", "list", "-H", "local", "-H", closed, *local)
        assert code == 1, err
        header, *lines = out.splitlines()
        [row] = [line for line in lines if line.split()[:2] == ["local", server.name]]
        [failed] = [line for line in lines if line.startswith(closed)]
        assert header.split()[:3] == ["HOST", "NAME", "STATE"]
        assert row.split()[:4] == ["local", server.name, "ready", "external"]
        assert failed.split()[:3] == [closed, "-", "error"] and "refused the connection" in failed
        assert all(line.split()[0] == "local" for line in lines if line != failed)  # others: local servers

        code, out, _ = run(capsys, "servers", "list", "-H", "local", "-H", closed, *local, "--json")
        r = json.loads(out)
        assert code == 1 and r["schema"] == "spectui.servers.hosts/1"
        first, second = r["hosts"]
        assert first["dest"] == "local" and first["schema"] == "spectui.servers/1"
        assert [s["name"] for s in first["servers"]].count(server.name) == 1
        assert second["dest"] == closed and second["error"]["kind"] == "HostUnreachable"

        code, out, _ = run(capsys, "servers", "list", "-H", "local", *local, "--json")
        assert code == 0 and set(json.loads(out)) == {"schema", "servers"}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_an_encrypted_key_asks_its_passphrase_once_for_every_host(monkeypatch):
    asked = []
    monkeypatch.setattr(sys, "stdin", Terminal())
    monkeypatch.setattr(getpass, "getpass", lambda prompt: asked.append(prompt) or "secret")

    async def needs_passphrase(target):
        if target.ssh.passphrase != "secret":
            raise KeyPassphraseNeeded("The identity file is encrypted: give its passphrase.")
        return target.destination

    answers = ask_hosts(["a", "b"], [HostTarget(kind="ssh", destination=d) for d in "ab"], needs_passphrase, 5)
    assert [(a.result, a.error) for a in answers] == [("a", None), ("b", None)] and len(asked) == 1
