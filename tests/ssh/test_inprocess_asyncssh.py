"""The SSH transport against an in-process asyncssh server that runs commands for real."""

import asyncio
import sys

import asyncssh
import pytest

from spectui.core.errors import AuthFailed, HostKeyUnknown
from spectui.core.session import HostTarget, open_session
from spectui.core.transport.ssh import SshOptions, parse_destination
from tests.support.sshd import free_port


async def run_command(process: asyncssh.SSHServerProcess) -> None:
    """Execute the requested command like sshd would, wiring stdio through."""
    proc = await asyncio.create_subprocess_shell(
        process.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    await process.redirect(stdin=proc.stdin, stdout=proc.stdout, stderr=proc.stderr, send_eof=True)
    process.exit(await proc.wait())


@pytest.fixture
async def server(tmp_path):
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key.write_private_key(tmp_path / "id")
    port = free_port()
    srv = await asyncssh.create_server(
        asyncssh.SSHServer, "127.0.0.1", port, server_host_keys=[host_key],
        authorized_client_keys=asyncssh.import_authorized_keys(client_key.export_public_key().decode()),
        process_factory=run_command, encoding=None)
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} " + host_key.export_public_key().decode())
    yield {"port": port, "known": known, "id": tmp_path / "id", "host_key": host_key, "tmp": tmp_path}
    srv.close()
    await srv.wait_closed()


def make_target(server, state_dir, **kw):
    (server["tmp"] / "cfg").write_text("")
    opts = SshOptions(config_file=str(server["tmp"] / "cfg"), identity_files=[str(server["id"])],
                      known_hosts=str(server["known"]), **kw)
    return HostTarget(kind="ssh", destination=f"127.0.0.1:{server['port']}", ssh=opts, python=sys.executable,
                      simulated=True, state_dir=str(state_dir))


async def test_agent_over_inprocess_server(server, state_dir):
    s = await open_session(make_target(server, state_dir))
    try:
        frame = await s.client.call("gpu.sample")
        assert frame["source"] == "sim" and len(frame["gpus"]) == 8
        assert await s.client.rtt() < 1.0
    finally:
        await s.close()


async def test_unknown_key_reports_the_fingerprint(server, state_dir):
    server["known"].write_text("")
    with pytest.raises(HostKeyUnknown) as info:
        await open_session(make_target(server, state_dir))
    assert info.value.fingerprint == server["host_key"].get_fingerprint("sha256")


async def test_unauthorized_key(server, state_dir, tmp_path):
    asyncssh.generate_private_key("ssh-ed25519").write_private_key(tmp_path / "other")
    t = make_target(server, state_dir)
    t.ssh.identity_files = [str(tmp_path / "other")]
    with pytest.raises(AuthFailed, match="failed"):
        await open_session(t)


@pytest.mark.parametrize("dest,expected", [
    ("gpu-host", (None, "gpu-host", None)),
    ("root@gpu-host", ("root", "gpu-host", None)),
    ("root@gpu-host:2222", ("root", "gpu-host", 2222)),
    ("[::1]:2200", (None, "::1", 2200)),
    ("me@[fe80::1]", ("me", "fe80::1", None)),
])
def test_destination_parsing(dest, expected):
    assert parse_destination(dest) == expected


@pytest.mark.parametrize("dest", ["", "a@b@c", "host:99999", "host:port"])
def test_bad_destinations_are_one_sentence(dest):
    from spectui.core.errors import ConnectError

    with pytest.raises(ConnectError):
        parse_destination(dest)
