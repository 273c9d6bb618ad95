"""``spectui exporter``'s bad input ends in one sentence, never a traceback: a port in use, an address that is not
HOST:PORT, a host that does not resolve, --demo options without --demo."""

from __future__ import annotations

import socket
import subprocess
import sys


def exporter(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spectui", "exporter", *args], capture_output=True, text=True,
                          timeout=timeout)


def one_sentence(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    assert lines[0].startswith("spectui exporter: ") and lines[0].endswith("."), text
    return lines[0]


def test_a_port_in_use_is_one_sentence(tmp_path):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        r = exporter("--demo", "--state-dir", str(tmp_path / "demo"), "--listen", f"127.0.0.1:{port}")
    assert r.returncode == 1
    assert f"127.0.0.1:{port}: it is in use" in one_sentence(r.stderr)


def test_an_unknown_host_is_one_sentence():
    r = exporter("nosuchhost.invalid", "--listen", "127.0.0.1:0", "--connect-timeout", "10")
    assert r.returncode == 1
    assert "nosuchhost.invalid" in one_sentence(r.stderr)


def test_bad_options_are_one_sentence():
    r = exporter("--demo", "--listen", "nope")
    assert r.returncode == 2 and "is not HOST:PORT" in one_sentence(r.stderr)
    r = exporter("somehost", "--hosts", "2")
    assert r.returncode == 2 and "go with --demo" in one_sentence(r.stderr)
    r = exporter("--demo", "--hosts", "99")
    assert r.returncode == 2 and "--hosts must be from 1" in one_sentence(r.stderr)
