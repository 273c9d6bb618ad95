"""The agent over SSH (asyncssh), with host keys always verified against known_hosts.

An unknown key is refused with its SHA256 fingerprint unless the caller accepts new keys
(like OpenSSH's ``StrictHostKeyChecking=accept-new``) or trusts that exact fingerprint once;
a changed or ``@revoked`` key is always refused. There is no way to turn verification off:
``StrictHostKeyChecking`` in the SSH config is not consulted.
"""

from __future__ import annotations

import asyncio
import os
import socket

import asyncssh

from spectui.core.agent_bundle import AgentBundle
from spectui.core.aio import within
from spectui.core.errors import (
    AgentStartError,
    AuthFailed,
    ConnectError,
    HostKeyChanged,
    HostKeyRevoked,
    HostKeyUnknown,
    HostUnreachable,
    KeyPassphraseNeeded,
)
from spectui.core.transport.base import AgentPipe, Transport
from spectui.core.transport.known_hosts import Judgement, append, judge, lookup, removal_hint
from spectui.core.transport.ssh import SshOptions, parse_destination
from spectui.core.transport.ssh_config import HostConfig, config_paths, host_config


class HostKeyVerifier:
    """Decides on the key one host offers, from its known_hosts files as OpenSSH would.

    asyncssh is given no trusted plain keys, so every plain host key comes here; host certificates
    signed by an ``@cert-authority`` key are checked by asyncssh (signature, validity, principals).
    """

    def __init__(self, opts: SshOptions, host: HostConfig):
        self.opts = opts
        self.host = host
        self.files = host.known_hosts_files(opts.known_hosts)
        self.keys = lookup(self.files, host.key_name)
        self.judgement: Judgement | None = None
        self.verdict: str | None = None  # known | revoked | changed | unknown | added | trusted-once
        self.seen: asyncssh.SSHKey | None = None

    def asyncssh_known_hosts(self) -> tuple[list, list, list]:
        """(trusted keys, CA keys, revoked keys) for asyncssh: never None, so checking is never off."""
        revoked = [e.key for e in self.keys.revoked] if self.keys.authorities else []
        return [], [e.key for e in self.keys.authorities], revoked

    def host_key_algorithms(self) -> list[str]:
        """Algorithms of known keys first, then the rest; certificates only when a CA is trusted."""
        known = self.keys.host_key_algorithms
        rest = list(asyncssh.public_key.get_default_public_key_algs())
        return [a.decode("ascii") for a in known + [a for a in rest if a not in known]]

    def check(self, key: asyncssh.SSHKey) -> bool:
        self.seen = key
        self.judgement = judge(self.keys, key)
        self.verdict = self.judgement.verdict
        if self.verdict == "known":
            return True
        if self.verdict in ("revoked", "changed"):
            return False
        if key.get_fingerprint("sha256") in self.opts.trusted_fingerprints:
            self.verdict = "trusted-once"
            return True
        if self.opts.accept_new_host_key and self.files.writable:
            append(self.files.writable, self.host.key_name, key)
            self.verdict = "added"
            return True
        return False

    def error(self, reason: str = "") -> ConnectError:
        name = self.host.key_name
        if self.seen is None:
            if "revoked" in reason:
                return ConnectError(f"The host certificate of {name} uses a key marked @revoked in known_hosts; "
                                    f"spectui refuses to connect.")
            return ConnectError(f"The host key of {name} could not be verified ({reason or 'no key was offered'}).")
        key = self.seen
        fp = key.get_fingerprint("sha256")
        kind = key.get_algorithm()
        entry = self.judgement.entry if self.judgement else None
        common = dict(host=self.host.host_key_alias or self.host.hostname, port=self.host.port, fingerprint=fp,
                      key_type=kind, public_key=key.export_public_key("openssh").decode().strip())
        if self.verdict == "revoked" and entry is not None:
            return HostKeyRevoked(
                f"The host key of {name} ({kind} {fp}) is marked @revoked in {entry.path} line {entry.line}: "
                f"it must never be accepted, and spectui refuses to connect.",
                known_hosts=entry.path, **common)
        if self.verdict == "changed" and entry is not None:
            was = entry.key.get_algorithm()
            what = (f"it now offers {kind} {fp}" if was == kind else
                    f"known_hosts records only {was} keys for it, and it now offers {kind} {fp}")
            exc = HostKeyChanged(
                f"The host key of {name} has CHANGED ({what}; recorded in {entry.path} line {entry.line}): someone "
                f"may be intercepting the connection, or the host was reinstalled; spectui refuses to connect. If "
                f"you know the change is expected, remove the old key: {removal_hint(entry, name)}",
                known_hosts=entry.path, **common)
            exc.removal = removal_hint(entry, name)
            return exc
        target = self.files.writable
        if target is None:
            return HostKeyUnknown(
                f"The host key of {name} is not known ({kind} {fp}) and the SSH config sets UserKnownHostsFile "
                f"to none, so it cannot be saved; add it to a known_hosts file yourself once you have compared "
                f"the fingerprint with the host's own.",
                known_hosts=", ".join(self.files.system) or "none", **common)
        return HostKeyUnknown(
            f"The host key of {name} is not known ({kind} {fp}); compare that fingerprint with the host's own "
            f"and, if it matches, trust it with --accept-new-host-key (it is saved to {target}).",
            known_hosts=target, **common)


class _VerifyingClient(asyncssh.SSHClient):
    def __init__(self, verifier: HostKeyVerifier):
        self.verifier = verifier

    def validate_host_public_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        return self.verifier.check(key)


class SshPipe(AgentPipe):
    def __init__(self, proc: asyncssh.SSHClientProcess):
        self.proc = proc

    async def readline(self) -> bytes:
        try:
            return await self.proc.stdout.readline()
        except (asyncssh.Error, ConnectionError, asyncio.IncompleteReadError, BrokenPipeError):
            return b""

    def write(self, data: bytes) -> None:
        try:
            self.proc.stdin.write(data)
        except (asyncssh.Error, ConnectionError, BrokenPipeError):
            pass

    async def drain(self) -> None:
        try:
            await self.proc.stdin.drain()
        except (asyncssh.Error, ConnectionError, BrokenPipeError):
            pass

    def close_stdin(self) -> None:
        try:
            self.proc.stdin.write_eof()
        except (asyncssh.Error, ConnectionError, BrokenPipeError, OSError):
            pass

    async def wait_exit(self, timeout: float) -> int | None:
        try:
            await asyncio.wait_for(self.proc.wait_closed(), timeout)
        except (asyncio.TimeoutError, asyncssh.Error, ConnectionError):
            self.proc.close()
            return None
        return self.proc.exit_status

    async def stderr_tail(self) -> str:
        try:
            data = await asyncio.wait_for(self.proc.stderr.read(65536), 1.0)
        except (asyncio.TimeoutError, asyncssh.Error, ConnectionError):
            return ""
        return data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)


class SshTransport(Transport):
    kind = "ssh"

    def __init__(self, dest: str, opts: SshOptions | None = None):
        self.dest = dest
        self.opts = opts or SshOptions()
        self.user, self.host, dest_port = parse_destination(dest)
        self.port = dest_port or self.opts.port
        self.conn: asyncssh.SSHClientConnection | None = None
        self._jumps: list[asyncssh.SSHClientConnection] = []

    @property
    def destination(self) -> str:
        who = f"{self.user}@" if self.user else ""
        return f"{who}{self.host}" + (f":{self.port}" if self.port else "")

    def _kwargs(self, verifier: HostKeyVerifier, paths: list[str], user: str | None, port: int | None) -> dict:
        o = self.opts
        kw: dict = {
            "known_hosts": verifier.asyncssh_known_hosts(),
            "server_host_key_algs": verifier.host_key_algorithms(),
            "client_factory": lambda: _VerifyingClient(verifier),
            "keepalive_interval": o.keepalive_interval,
            "keepalive_count_max": o.keepalive_count_max,
            "connect_timeout": o.connect_timeout,
            "config": paths,
            # Jump hosts are opened here, each checked against the same known_hosts files.
            "tunnel": None,
        }
        if port:
            kw["port"] = port
        if user:
            kw["username"] = user
        if o.identity_files:
            kw["client_keys"] = [os.path.expanduser(p) for p in o.identity_files]
        if o.passphrase is not None:
            kw["passphrase"] = o.passphrase
        return kw

    async def connect(self) -> None:
        paths = config_paths(self.opts.config_file)
        target = host_config(paths, self.host, self.user, self.port)
        jump = self.opts.jump or target.proxy_jump
        tunnel = None
        try:
            # Every jump host is verified and authenticated exactly like the target.
            for hop in jump.split(",") if jump else []:
                juser, jhost, jport = parse_destination(hop)
                jconfig = host_config(paths, jhost, juser, jport)
                tunnel = await self._open(jhost, juser, jport, HostKeyVerifier(self.opts, jconfig), paths,
                                          tunnel, f"jump host {hop}")
                self._jumps.append(tunnel)
            self.verifier = HostKeyVerifier(self.opts, target)
            self.conn = await self._open(self.host, self.user, self.port, self.verifier, paths, tunnel,
                                         self.destination)
        except BaseException:
            await self.close()
            raise

    async def _open(self, host, user, port, verifier, paths, tunnel, where) -> asyncssh.SSHClientConnection:
        kw = self._kwargs(verifier, paths, user, port)
        if tunnel is not None:
            kw["tunnel"] = tunnel
        try:
            return await within(asyncssh.connect(host, **kw), self.opts.connect_timeout + 5)
        except asyncssh.HostKeyNotVerifiable as exc:
            raise verifier.error(exc.reason) from None
        except asyncssh.PermissionDenied as exc:
            ids = ", ".join(self.opts.identity_files) or "your keys and ssh-agent"
            raise AuthFailed(f"Authentication to {where} failed ({exc.reason}): the server accepted none of "
                             f"{ids}; check the user name and give the right key with -i.") from None
        except asyncssh.KeyEncryptionError as exc:
            raise ConnectError(f"An encrypted identity file could not be opened: {exc}.") from None
        except asyncssh.KeyImportError as exc:
            if "passphrase" in str(exc).lower():
                raise KeyPassphraseNeeded(f"The identity file is encrypted: give its passphrase ({exc}).") from None
            raise ConnectError(f"An identity file could not be read: {exc}.") from None
        except socket.gaierror:
            raise HostUnreachable(f"Cannot resolve {host!r}: check the name, or the alias in your SSH config.") from None
        except ConnectionRefusedError:
            raise HostUnreachable(f"{where} refused the connection: is sshd running there, and is the port right?") from None
        except asyncio.TimeoutError:
            raise HostUnreachable(f"Timed out connecting to {where} after {self.opts.connect_timeout:g} s.") from None
        except asyncssh.ConfigParseError as exc:
            raise ConnectError(f"The SSH config could not be read: {exc}.") from None
        except asyncssh.DisconnectError as exc:
            raise ConnectError(f"{where} closed the connection during setup: {exc.reason}.") from None
        except OSError as exc:
            raise HostUnreachable(f"Cannot connect to {where}: {exc.strerror or exc}.") from None

    async def start_agent(self, bundle: AgentBundle, python: str, agent_args: list[str]) -> AgentPipe:
        assert self.conn is not None, "connect() first"
        try:
            proc = await self.conn.create_process(bundle.remote_command(python, agent_args), encoding=None)
        except (asyncssh.Error, ConnectionError) as exc:
            raise AgentStartError(f"{self.destination} refused to run the agent: {exc}.") from None
        proc.stdin.write(bundle.payload)
        return SshPipe(proc)

    async def close(self) -> None:
        for conn in (self.conn, *reversed(self._jumps)):
            if conn is not None:
                conn.close()
                try:
                    await asyncio.wait_for(conn.wait_closed(), 3)
                except (asyncio.TimeoutError, asyncssh.Error, OSError):
                    pass
        self.conn = None
        self._jumps = []
