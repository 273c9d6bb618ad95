"""known_hosts as OpenSSH treats it: unit rules, then the real OpenSSH sshd on loopback."""

import subprocess
import sys
from pathlib import Path

import asyncssh
import pytest

from spectui.cli.main import main
from spectui.core.errors import ConnectError, HostKeyChanged, HostKeyRevoked, HostKeyUnknown
from spectui.core.transport.known_hosts import KnownHostsFiles, host_matches, judge, lookup, parse
from spectui.core.transport.ssh import SshOptions
from spectui.core.transport.ssh_client import SshTransport
from tests.support.sshd import LoopbackSshd, keygen


def pub_line(pub: Path) -> str:
    kind, blob = pub.read_text().split()[:2]
    return f"{kind} {blob}"


def files(path: Path) -> KnownHostsFiles:
    return KnownHostsFiles(user=(str(path),), system=())


# --- matching rules --------------------------------------------------------------------------------------------


def test_plain_entry_is_for_port_22_only_and_bracketed_entry_for_its_port():
    assert host_matches("gpu1,10.0.0.5", "gpu1")
    assert not host_matches("gpu1", "[gpu1]:2222")
    assert host_matches("[gpu1]:2222", "[gpu1]:2222")
    assert not host_matches("[gpu1]:2222", "[gpu1]:2223")
    assert not host_matches("[gpu1]:2222", "gpu1")


def test_wildcards_and_negation():
    assert host_matches("*.lab.example", "gpu7.lab.example")
    assert host_matches("gpu?", "gpu7")
    assert not host_matches("*.lab.example,!gpu7.lab.example", "gpu7.lab.example")
    assert host_matches("*", "[gpu1]:2222")
    assert host_matches("GPU1", "gpu1")


@pytest.mark.parametrize("name", ["gpu1", "[127.0.0.1]:2222"])
def test_hashed_names_from_ssh_keygen_H_match_only_their_name(tmp_path, name):
    keygen(tmp_path / "k")
    kh = tmp_path / "known_hosts"
    kh.write_text(f"{name} {pub_line(tmp_path / 'k.pub')}\n")
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(kh)], check=True, capture_output=True)
    hashed = kh.read_text().split()[0]
    assert hashed.startswith("|1|")
    assert host_matches(hashed, name)
    assert not host_matches(hashed, "gpu2")
    # asyncssh's own matcher agrees on the same hashed file
    reference = asyncssh.import_known_hosts(kh.read_text())
    assert reference.match(name, "", None)[0]


def test_revoked_key_is_refused_before_a_matching_recorded_key(tmp_path):
    keygen(tmp_path / "k")
    line = pub_line(tmp_path / "k.pub")
    kh = tmp_path / "known_hosts"
    kh.write_text(f"gpu1 {line}\n@revoked * {line}\n")
    keys = lookup(files(kh), "gpu1")
    key = asyncssh.read_public_key(str(tmp_path / "k.pub"))
    j = judge(keys, key)
    assert j.verdict == "revoked" and j.entry.line == 2


def test_a_port_22_entry_leaves_another_port_unknown(tmp_path):
    keygen(tmp_path / "a")
    keygen(tmp_path / "b")
    kh = tmp_path / "known_hosts"
    kh.write_text(f"gpu1 {pub_line(tmp_path / 'a.pub')}\n")
    other = asyncssh.read_public_key(str(tmp_path / "b.pub"))
    assert judge(lookup(files(kh), "[gpu1]:2222"), other).verdict == "unknown"
    assert judge(lookup(files(kh), "gpu1"), other).verdict == "changed"


def test_markers_comments_and_bad_lines(tmp_path):
    keygen(tmp_path / "k")
    line = pub_line(tmp_path / "k.pub")
    entries = parse(f"# comment\n\n@cert-authority *.lab {line}\n@bogus h {line}\nh ssh-ed25519 notbase64\n"
                    f"h {line} a comment\n", "kh")
    assert [(e.marker, e.patterns, e.line) for e in entries] == [("cert-authority", "*.lab", 3), ("", "h", 6)]


def test_global_files_are_read_and_new_keys_go_to_the_first_user_file(tmp_path):
    keygen(tmp_path / "k")
    system = tmp_path / "ssh_known_hosts"
    system.write_text(f"gpu1 {pub_line(tmp_path / 'k.pub')}\n")
    f = KnownHostsFiles(user=(str(tmp_path / "u1"), str(tmp_path / "u2")), system=(str(system),))
    key = asyncssh.read_public_key(str(tmp_path / "k.pub"))
    assert judge(lookup(f, "gpu1"), key).verdict == "known"
    assert f.writable == str(tmp_path / "u1")


@pytest.mark.parametrize("content, expected", [(None, "is a folder"), (b"\xff\xfe\x00binary", "is not a text file")])
def test_unreadable_known_hosts_is_one_sentence_naming_it(tmp_path, content, expected):
    kh = tmp_path / "known_hosts"
    if content is None:
        kh.mkdir()
    else:
        kh.write_bytes(content)
    with pytest.raises(ConnectError) as info:
        lookup(files(kh), "gpu1")
    assert expected in str(info.value) and str(kh) in str(info.value) and "\n" not in str(info.value)


# --- against the real sshd -------------------------------------------------------------------------------------


def transport(sshd, known_hosts=None, config=None, **kw) -> SshTransport:
    o = SshOptions(config_file=str(config or sshd.ssh_config), identity_files=[str(sshd.client_key)],
                   known_hosts=None if known_hosts is None else str(known_hosts), **kw)
    return SshTransport(sshd.dest, o)


async def connects(t: SshTransport) -> bool:
    await t.connect()
    await t.close()
    return True


def host_pub(sshd) -> str:
    return pub_line(Path(str(sshd.host_key) + ".pub"))


@pytest.mark.sshd
@pytest.mark.parametrize("pattern", ["*", "[127.0.0.1]:{port}"])
async def test_revoked_key_is_never_trusted(sshd, pattern):
    sshd.known_hosts.write_text(f"@revoked {pattern.format(port=sshd.port)} {host_pub(sshd)}\n")
    for extra in ({}, {"accept_new_host_key": True},
                  {"trusted_fingerprints": frozenset({sshd.host_fingerprint})}):
        with pytest.raises(HostKeyRevoked) as info:
            await connects(transport(sshd, sshd.known_hosts, **extra))
        assert "@revoked" in str(info.value) and f"{sshd.known_hosts} line 1" in str(info.value)
    assert sshd.known_hosts.read_text().count("\n") == 1  # nothing was added


@pytest.mark.sshd
async def test_port_22_entry_does_not_make_another_port_changed(sshd, tmp_path):
    keygen(tmp_path / "old")
    sshd.known_hosts.write_text(f"127.0.0.1 {pub_line(tmp_path / 'old.pub')}\n")
    with pytest.raises(HostKeyUnknown):
        await connects(transport(sshd, sshd.known_hosts))


@pytest.mark.sshd
async def test_the_printed_removal_command_removes_the_old_key(sshd, tmp_path):
    keygen(tmp_path / "old")
    sshd.known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {pub_line(tmp_path / 'old.pub')}\n")
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(sshd.known_hosts)], check=True, capture_output=True)
    with pytest.raises(HostKeyChanged) as info:
        await connects(transport(sshd, sshd.known_hosts))
    command = str(info.value).split("remove the old key: ", 1)[1]
    assert command == f"ssh-keygen -R '[127.0.0.1]:{sshd.port}' -f {sshd.known_hosts}"
    subprocess.run(["sh", "-c", command], check=True, capture_output=True)
    with pytest.raises(HostKeyUnknown):
        await connects(transport(sshd, sshd.known_hosts))


@pytest.mark.sshd
async def test_hashed_entry_is_recognised(sshd):
    sshd.trust_host_key()
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(sshd.known_hosts)], check=True, capture_output=True)
    assert sshd.known_hosts.read_text().startswith("|1|")
    assert await connects(transport(sshd, sshd.known_hosts))


@pytest.mark.sshd
async def test_rsa_only_known_hosts_is_a_clear_refusal_not_a_reset(sshd, tmp_path):
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(tmp_path / "rsa")], check=True)
    sshd.known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {pub_line(tmp_path / 'rsa.pub')}\n")
    with pytest.raises(HostKeyChanged) as info:
        await connects(transport(sshd, sshd.known_hosts, accept_new_host_key=True))
    assert "records only ssh-rsa keys" in str(info.value) and sshd.host_fingerprint in str(info.value)


@pytest.mark.sshd
async def test_user_known_hosts_file_from_the_config_is_read_and_written(sshd, tmp_path):
    first, second = tmp_path / "first_known_hosts", tmp_path / "second_known_hosts"
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host *\n  UserKnownHostsFile {first} {second}\n  GlobalKnownHostsFile none\n"
                   f"  StrictHostKeyChecking no\n")
    with pytest.raises(HostKeyUnknown) as info:  # StrictHostKeyChecking no does not turn checking off
        await connects(transport(sshd, config=cfg))
    assert info.value.known_hosts == str(first)
    assert await connects(transport(sshd, config=cfg, accept_new_host_key=True))
    assert first.read_text() == f"[127.0.0.1]:{sshd.port} {host_pub(sshd)}\n"
    assert not second.exists()
    first.write_text("")
    second.write_text(f"[127.0.0.1]:{sshd.port} {host_pub(sshd)}\n")
    assert await connects(transport(sshd, config=cfg))


@pytest.mark.sshd
async def test_proxy_jump_from_the_config_is_checked_against_the_given_known_hosts(sshd, tmp_path):
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host gpu-box\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
                   f"  ProxyJump jumpbox\n"
                   f"Host jumpbox\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n")
    kh = tmp_path / "known_hosts"
    o = SshOptions(config_file=str(cfg), identity_files=[str(sshd.client_key)], known_hosts=str(kh))
    kh.write_text("")
    with pytest.raises(HostKeyUnknown):
        await connects(SshTransport("gpu-box", o))
    kh.write_text(f"[127.0.0.1]:{sshd.port} {host_pub(sshd)}\n")
    t = SshTransport("gpu-box", o)
    await t.connect()
    assert len(t._jumps) == 1
    await t.close()


@pytest.fixture(scope="module")
def cert_sshd(tmp_path_factory):
    """A second sshd whose host key carries a certificate signed by a host CA."""
    root = tmp_path_factory.mktemp("cert-sshd")
    server = LoopbackSshd(root)
    keygen(root / "host_ca", "host-ca")
    subprocess.run(["ssh-keygen", "-q", "-s", str(root / "host_ca"), "-I", "loopback", "-h", "-n", "127.0.0.1",
                    str(server.host_key) + ".pub"], check=True)
    with open(server.config, "a") as fh:
        fh.write(f"HostCertificate {server.host_key}-cert.pub\n")
    server.start()
    yield server
    server.stop()


@pytest.mark.sshd
async def test_cert_authority_entry_trusts_the_host_certificate(cert_sshd):
    ca = pub_line(cert_sshd.root / "host_ca.pub")
    cert_sshd.known_hosts.write_text(f"@cert-authority 127.0.0.1,[127.0.0.1]:* {ca}\n")
    assert await connects(transport(cert_sshd, cert_sshd.known_hosts))
    cert_sshd.known_hosts.write_text(f"@revoked * {ca}\n@cert-authority * {ca}\n")
    with pytest.raises(ConnectError, match="@revoked"):
        await connects(transport(cert_sshd, cert_sshd.known_hosts, accept_new_host_key=True))


# --- one sentence for unusable files -----------------------------------------------------------------------------


def status(sshd, state_dir, *args):
    return ["status", "--host", sshd.dest, "-i", str(sshd.client_key), "--python", sys.executable, "--sim",
            "--state-dir", str(state_dir), *args]


@pytest.mark.sshd
@pytest.mark.parametrize("kind", ["folder", "binary"])
def test_unusable_known_hosts_option_is_one_sentence(sshd, state_dir, tmp_path, capsys, kind):
    kh = tmp_path / "kh"
    kh.mkdir() if kind == "folder" else kh.write_bytes(b"\x80\x81 binary\n")
    assert main(status(sshd, state_dir, "-F", str(sshd.ssh_config), "--known-hosts", str(kh))) == 1
    err = capsys.readouterr().err.strip()
    assert str(kh) in err and "Traceback" not in err and "\n" not in err


@pytest.mark.sshd
@pytest.mark.parametrize("kind", ["missing", "binary", "folder"])
def test_unusable_ssh_config_is_one_sentence(sshd, state_dir, tmp_path, capsys, kind):
    cfg = tmp_path / "cfg"
    if kind == "binary":
        cfg.write_bytes(b"\x00\xff\xfe\x89PNG")
    elif kind == "folder":
        cfg.mkdir()
    assert main(status(sshd, state_dir, "-F", str(cfg), "--known-hosts", str(sshd.known_hosts))) == 1
    err = capsys.readouterr().err.strip()
    assert str(cfg) in err and "Traceback" not in err and "\n" not in err
