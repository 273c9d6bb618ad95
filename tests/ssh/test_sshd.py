"""Against a real OpenSSH sshd on loopback: status, host keys, auth, clean endings."""

import asyncio
import json
import os
import signal
import sys
import time

import pytest

from spectui.cli.main import main
from spectui.core.errors import AuthFailed, Disconnected, HostKeyChanged, HostKeyUnknown
from spectui.core.session import open_session
from tests.support.procs import pid_alive, wait_gone
from tests.support.sshd import keygen

pytestmark = pytest.mark.sshd


def status_args(sshd, state_dir, *extra, trust=True):
    return ["status", "--host", sshd.dest, *sshd.cli_args(trust=trust), "--python", sys.executable, "--sim",
            "--state-dir", str(state_dir), *extra]


def target(sshd, state_dir, **opts):
    return sshd.host_target(state_dir, **opts)


def test_status_over_ssh_with_sim(sshd, state_dir, capsys):
    assert main(status_args(sshd, state_dir, "--json")) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["schema"] == "spectui.status/1"
    assert r["target"]["kind"] == "ssh" and r["target"]["simulated"] is True
    assert r["host"]["simulated"] is True and r["host"]["python"]["path"]
    assert r["gpu_telemetry"]["source"] == "sim" and len(r["gpu_telemetry"]["gpus"]) == 8
    assert r["rtt_ms"] > 0
    assert main(status_args(sshd, state_dir)) == 0
    text = capsys.readouterr().out
    assert "8x NVIDIA RTX PRO 6000 Blackwell (source: sim)" in text


def test_unknown_host_key_refused_with_fingerprint_then_accept_new(sshd, state_dir, capsys):
    sshd.known_hosts.write_text("")
    assert main(status_args(sshd, state_dir, trust=False)) == 1
    err = capsys.readouterr().err
    assert "is not known" in err and sshd.host_fingerprint in err
    assert "--accept-new-host-key" in err and "To trust it: spectui status --host" in err
    assert sshd.known_hosts.read_text() == ""  # nothing saved without consent
    assert main(status_args(sshd, state_dir, "--accept-new-host-key", trust=False)) == 0
    saved = sshd.known_hosts.read_text()
    assert saved.startswith(f"[127.0.0.1]:{sshd.port} ssh-ed25519 ")
    # and now it connects without the flag
    assert main(status_args(sshd, state_dir, trust=False)) == 0


def test_changed_host_key_refused_even_with_accept_new(sshd, state_dir, tmp_path, capsys):
    keygen(tmp_path / "other_host_key")
    kind, blob = (tmp_path / "other_host_key.pub").read_text().split()[:2]
    sshd.known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {kind} {blob}\n")
    assert main(status_args(sshd, state_dir, "--accept-new-host-key", trust=False)) == 1
    err = capsys.readouterr().err
    assert "CHANGED" in err and sshd.host_fingerprint in err and "ssh-keygen -R" in err
    assert "Traceback" not in err
    assert sshd.known_hosts.read_text() == f"[127.0.0.1]:{sshd.port} {kind} {blob}\n"  # untouched


async def test_changed_key_raises_typed_error(sshd, state_dir, tmp_path):
    keygen(tmp_path / "k2")
    kind, blob = (tmp_path / "k2.pub").read_text().split()[:2]
    t = target(sshd, state_dir, trust=False)
    sshd.known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {kind} {blob}\n")
    with pytest.raises(HostKeyChanged) as info:
        await open_session(t)
    assert info.value.fingerprint == sshd.host_fingerprint


async def test_unknown_key_trusted_once_by_fingerprint_is_not_saved(sshd, state_dir):
    sshd.known_hosts.write_text("")
    t = target(sshd, state_dir, trust=False)
    with pytest.raises(HostKeyUnknown) as info:
        await open_session(t)
    t.ssh.trusted_fingerprints = frozenset({info.value.fingerprint})
    s = await open_session(t)
    await s.close()
    assert sshd.known_hosts.read_text() == ""


def test_wrong_identity_gives_an_authentication_message(sshd, state_dir, capsys):
    args = status_args(sshd, state_dir)
    args[args.index(str(sshd.client_key))] = str(sshd.other_key)
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "Authentication to" in err and "failed" in err and str(sshd.other_key) in err
    assert "Traceback" not in err


async def test_wrong_identity_raises_auth_failed(sshd, state_dir):
    t = target(sshd, state_dir)
    t.ssh.identity_files = [str(sshd.other_key)]
    with pytest.raises(AuthFailed):
        await open_session(t)


async def test_agent_is_gone_on_the_host_after_disconnect(sshd, state_dir):
    s = await open_session(target(sshd, state_dir))
    pid = s.hello["pid"]
    await s.client.call("gpu.subscribe", {"interval_s": 0.1})
    assert pid_alive(pid)
    await s.close()
    assert wait_gone(pid), "agent still running on the host after the client left"


async def test_connection_dropped_mid_stream_ends_cleanly(sshd, state_dir):
    s = await open_session(target(sshd, state_dir))
    pid = s.hello["pid"]
    events = []
    s.client.add_listener(events.append)
    await s.client.call("gpu.subscribe", {"interval_s": 0.1})
    await asyncio.sleep(0.5)
    assert any(e.name == "gpu" for e in events)
    # Kill the per-connection sshd: the TCP connection dies under the client mid-stream.
    before = set(sshd.session_pids())
    assert before
    for p in before:
        os.kill(p, signal.SIGKILL)
    await asyncio.wait_for(s.client.closed.wait(), 10)
    last = events[-1]
    assert last.name == "disconnected" and last.data["clean"] is False
    assert s.client.close_reason.startswith("Disconnected from")
    with pytest.raises(Disconnected):
        await s.client.call("ping")
    await s.close()  # closing after a drop is quiet
    assert wait_gone(pid), "agent kept running after its connection dropped"


def test_unreachable_port_is_one_sentence(sshd, state_dir, capsys):
    from tests.support.sshd import free_port

    args = status_args(sshd, state_dir)
    args[args.index(sshd.dest)] = f"{sshd.user}@127.0.0.1:{free_port()}"
    assert main(args) == 1
    err = capsys.readouterr().err.strip()
    assert "refused the connection" in err and "\n" not in err


def test_config_alias_and_jump_host(sshd, state_dir, tmp_path, capsys):
    """A Host alias from -F FILE, reached through a -J jump host (the same sshd)."""
    sshd.trust_host_key()
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host gpu-box\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
                   f"  IdentityFile {sshd.client_key}\n"
                   f"Host jumpbox\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
                   f"  IdentityFile {sshd.client_key}\n")
    base = ["status", "--python", sys.executable, "--sim", "--state-dir", str(state_dir),
            "-F", str(cfg), "--known-hosts", str(sshd.known_hosts), "--json"]
    assert main([*base, "--host", "gpu-box"]) == 0
    assert json.loads(capsys.readouterr().out)["gpu_telemetry"]["source"] == "sim"
    assert main([*base, "--host", "gpu-box", "-J", "jumpbox"]) == 0
    assert json.loads(capsys.readouterr().out)["target"]["destination"] == "gpu-box"


async def test_ssh_agent_supplies_the_key(sshd, state_dir, tmp_path, monkeypatch):
    import subprocess

    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 5
        while not sock.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        env = dict(os.environ, SSH_AUTH_SOCK=str(sock))
        subprocess.run(["ssh-add", "-q", str(sshd.client_key)], env=env, check=True)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        monkeypatch.setenv("HOME", str(tmp_path))  # no default keys in ~/.ssh: only the agent has one
        t = target(sshd, state_dir)
        t.ssh.identity_files = []
        s = await open_session(t)
        await s.close()
    finally:
        agent.terminate()
        agent.wait()


async def test_encrypted_key_needs_its_passphrase(sshd, state_dir, tmp_path):
    import subprocess

    from spectui.core.errors import KeyPassphraseNeeded

    key = tmp_path / "id_locked"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "s3cret", "-f", str(key)], check=True)
    auth = sshd.root / "authorized_keys"
    original = auth.read_text()
    auth.write_text(original + (tmp_path / "id_locked.pub").read_text())
    try:
        t = target(sshd, state_dir)
        t.ssh.identity_files = [str(key)]
        with pytest.raises(KeyPassphraseNeeded, match="encrypted"):
            await open_session(t)
        t.ssh.passphrase = "s3cret"
        s = await open_session(t)
        await s.close()
    finally:
        auth.write_text(original)
