"""Against two real OpenSSH sshd on loopback: ``status`` and ``servers list`` of several hosts at once."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from spectui.cli.main import main
from tests.support.sshd import LoopbackSshd

pytestmark = pytest.mark.sshd


def key_line(server: LoopbackSshd) -> str:
    kind, blob = Path(str(server.host_key) + ".pub").read_text().split()[:2]
    return f"[127.0.0.1]:{server.port} {kind} {blob}\n"


def options(tmp_path, state_dir, *servers, trusted=None) -> list[str]:
    """Host and SSH options reaching every server in ``servers``; known_hosts holds the keys of ``trusted``
    (default: all of them)."""
    known = tmp_path / "known_hosts"
    known.write_text("".join(key_line(s) for s in (servers if trusted is None else trusted)))
    config = tmp_path / "ssh_config"
    config.write_text("")
    words = ["-F", str(config), "--known-hosts", str(known), "--python", sys.executable, "--sim",
             "--state-dir", str(state_dir)]
    for s in servers:
        words += ["-i", str(s.client_key)]
    return words


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_two_hosts_one_table_and_one_json(sshd, other_sshd, state_dir, tmp_path, capsys):
    opts = options(tmp_path, state_dir, sshd, other_sshd)
    hosts = ["-H", sshd.dest, "-H", other_sshd.dest]
    code, out, err = run(capsys, "status", *hosts, *opts)
    assert code == 0, err
    assert [line.split()[:2] for line in out.splitlines()[1:]] == [[sshd.dest, "ok"], [other_sshd.dest, "ok"]]

    code, out, err = run(capsys, "status", *hosts, *opts, "--json")
    r = json.loads(out)
    assert code == 0 and r["schema"] == "spectui.status.hosts/1"
    assert [(h["dest"], h["target"]["destination"], h["gpu_telemetry"]["source"]) for h in r["hosts"]] == \
        [(sshd.dest, sshd.dest, "sim"), (other_sshd.dest, other_sshd.dest, "sim")]

    code, out, err = run(capsys, "servers", "list", *hosts, *opts, "--json")
    r = json.loads(out)
    assert code == 0 and r["schema"] == "spectui.servers.hosts/1"
    assert [(h["dest"], h["servers"]) for h in r["hosts"]] == [(sshd.dest, []), (other_sshd.dest, [])]


def test_a_stopped_host_and_an_unknown_key_are_their_own_lines(sshd, other_sshd, state_dir, tmp_path, capsys):
    stopped = LoopbackSshd(tmp_path / "stopped").start()
    stopped.stop()
    opts = options(tmp_path, state_dir, sshd, other_sshd, stopped, trusted=[sshd])
    known_before = (tmp_path / "known_hosts").read_text()
    t0 = time.monotonic()
    code, out, err = run(capsys, "status", "-H", sshd.dest, "-H", other_sshd.dest, "-H", stopped.dest, *opts,
                         "--connect-timeout", "5")
    assert code == 1 and time.monotonic() - t0 < 15
    rows = out.splitlines()[1:]
    assert rows[0].split()[:3] == [sshd.dest, "ok", "8x"]
    assert rows[1].split()[:2] == [other_sshd.dest, "error"]
    assert "is not known" in rows[1] and other_sshd.host_fingerprint in rows[1]
    assert rows[2].split()[:2] == [stopped.dest, "error"] and "refused the connection" in rows[2]
    # the command that trusts the unknown key names that host alone; nothing was saved meanwhile
    [hint] = err.splitlines()
    assert hint.startswith(f"spectui: {other_sshd.dest}: To trust it: spectui status --host {other_sshd.dest} ")
    assert hint.endswith(" --accept-new-host-key") and stopped.dest not in hint
    assert (tmp_path / "known_hosts").read_text() == known_before
