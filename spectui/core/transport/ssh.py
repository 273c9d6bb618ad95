"""The agent over SSH (asyncssh), with host keys always verified against known_hosts.

An unknown key is refused with its SHA256 fingerprint unless the caller accepts new keys
(like OpenSSH's ``StrictHostKeyChecking=accept-new``) or trusts that exact fingerprint once;
a changed key is always refused. There is no way to turn verification off.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
from dataclasses import dataclass, field

import asyncssh

from spectui.core.agent_bundle import AgentBundle
from spectui.core.errors import (
    AgentStartError,
    AuthFailed,
    ConnectError,
    HostKeyChanged,
    HostKeyUnknown,
    HostUnreachable,
    KeyPassphraseNeeded,
)
from spectui.core.transport.base import AgentPipe, Transport

DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"


@dataclass
class SshOptions:
    config_file: str | None = None          # -F
    identity_files: list[str] = field(default_factory=list)  # -i
    port: int | None = None                 # -p
    jump: str | None = None                 # -J
    known_hosts: str = DEFAULT_KNOWN_HOSTS
    accept_new_host_key: bool = False
    trusted_fingerprints: frozenset[str] = frozenset()  # "trust once"
    passphrase: str | None = None
    connect_timeout: float = 15.0
    keepalive_interval: float = 15.0
    keepalive_count_max: int = 3


_DEST = re.compile(r"^(?:(?P<user>[^@]+)@)?(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:@\[\]]+))(?::(?P<port>\d+))?$")


def parse_destination(dest: str) -> tuple[str | None, str, int | None]:
    """``[user@]host[:port]`` (``[v6addr]:port`` too) -> (user, host, port)."""
    m = _DEST.match(dest.strip())
    if not m:
        raise ConnectError(f"{dest!r} is not a host: write [user@]host[:port] or an alias from your SSH config.")
    port = int(m.group("port")) if m.group("port") else None
    if port is not None and not 0 < port < 65536:
        raise ConnectError(f"Port {port} in {dest!r} is out of range.")
    return m.group("user"), m.group("v6") or m.group("host"), port


def known_hosts_name(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


class HostKeyVerifier:
    """Decides on host keys asyncssh did not find trusted in known_hosts."""

    def __init__(self, opts: SshOptions):
        self.opts = opts
        self.path = os.path.expanduser(opts.known_hosts)
        self.verdict: str | None = None  # unknown | changed | added | trusted-once
        self.seen: tuple[str, int, asyncssh.SSHKey] | None = None

    def known_hosts(self) -> asyncssh.SSHKnownHosts:
        try:
            with open(self.path, encoding="utf-8") as fh:
                return asyncssh.import_known_hosts(fh.read())
        except FileNotFoundError:
            return asyncssh.import_known_hosts("")

    def check(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        self.seen = (host, port, key)
        fingerprint = key.get_fingerprint("sha256")
        trusted = self.known_hosts().match(host, addr, port if port != 22 else None)[0]
        if trusted:
            # known_hosts names this host with another key: never accepted.
            self.verdict = "changed"
            return False
        if fingerprint in self.opts.trusted_fingerprints:
            self.verdict = "trusted-once"
            return True
        if self.opts.accept_new_host_key:
            self._append(host, port, key)
            self.verdict = "added"
            return True
        self.verdict = "unknown"
        return False

    def _append(self, host: str, port: int, key: asyncssh.SSHKey) -> None:
        os.makedirs(os.path.dirname(self.path) or ".", mode=0o700, exist_ok=True)
        line = known_hosts_name(host, port) + " " + key.export_public_key("openssh").decode().strip() + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)

    def error(self) -> ConnectError:
        if self.seen is None:
            return ConnectError("The host key could not be verified.")
        host, port, key = self.seen
        name = known_hosts_name(host, port)
        fp = key.get_fingerprint("sha256")
        kind = key.get_algorithm()
        common = dict(host=host, port=port, fingerprint=fp, key_type=kind, known_hosts=self.path,
                      public_key=key.export_public_key("openssh").decode().strip())
        if self.verdict == "changed":
            return HostKeyChanged(
                f"The host key of {name} has CHANGED (it now offers {kind} {fp}): someone may be intercepting "
                f"the connection, or the host was reinstalled; spectui refuses to connect. If you know the change "
                f"is expected, remove the old key with: ssh-keygen -R '{name}' -f {self.path}",
                **common)
        return HostKeyUnknown(
            f"The host key of {name} is not known ({kind} {fp}); compare that fingerprint with the host's own "
            f"and, if it matches, trust it with --accept-new-host-key.",
            **common)


class _VerifyingClient(asyncssh.SSHClient):
    def __init__(self, verifier: HostKeyVerifier):
        self.verifier = verifier

    def validate_host_public_key(self, host: str, addr: str, port: int, key: asyncssh.SSHKey) -> bool:
        return self.verifier.check(host, addr, port, key)


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
        self._jump: asyncssh.SSHClientConnection | None = None
        self.verifier = HostKeyVerifier(self.opts)

    @property
    def destination(self) -> str:
        who = f"{self.user}@" if self.user else ""
        return f"{who}{self.host}" + (f":{self.port}" if self.port else "")

    def _kwargs(self, verifier: HostKeyVerifier, user: str | None, port: int | None) -> dict:
        o = self.opts
        kw: dict = {
            "known_hosts": verifier.known_hosts(),
            "client_factory": lambda: _VerifyingClient(verifier),
            "keepalive_interval": o.keepalive_interval,
            "keepalive_count_max": o.keepalive_count_max,
            "connect_timeout": o.connect_timeout,
        }
        if o.config_file:
            kw["config"] = [os.path.expanduser(o.config_file)]
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
        tunnel = None
        if self.opts.jump:
            # The jump host is verified and authenticated exactly like the target.
            juser, jhost, jport = parse_destination(self.opts.jump)
            jverifier = HostKeyVerifier(self.opts)
            tunnel = self._jump = await self._open(jhost, juser, jport, jverifier, None, f"jump host {self.opts.jump}")
        kw_extra = {"tunnel": tunnel} if tunnel is not None else {}
        self.conn = await self._open(self.host, self.user, self.port, self.verifier, kw_extra, self.destination)

    async def _open(self, host, user, port, verifier, extra, where) -> asyncssh.SSHClientConnection:
        kw = self._kwargs(verifier, user, port)
        kw.update(extra or {})
        try:
            return await asyncio.wait_for(asyncssh.connect(host, **kw), self.opts.connect_timeout + 5)
        except asyncssh.HostKeyNotVerifiable:
            raise verifier.error() from None
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
        for conn in (self.conn, self._jump):
            if conn is not None:
                conn.close()
                try:
                    await asyncio.wait_for(conn.wait_closed(), 3)
                except (asyncio.TimeoutError, asyncssh.Error, OSError):
                    pass
        self.conn = self._jump = None
