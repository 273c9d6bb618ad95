"""What names an SSH host and how to reach it: ``[user@]host[:port]`` and the ssh-like options.

Nothing here loads asyncssh, so commands that never open an SSH connection start without it; the
connection itself (:class:`SshTransport`) is in :mod:`spectui.core.transport.ssh_client`, loaded on
first use of that name from here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from spectui.core.errors import ConnectError

if TYPE_CHECKING:
    from spectui.core.transport.ssh_client import HostKeyVerifier, SshPipe, SshTransport

__all__ = ["HostKeyVerifier", "SshOptions", "SshPipe", "SshTransport", "parse_destination"]

#: The names that live with the connection and load asyncssh when first asked for.
_CONNECTION_NAMES = frozenset({"HostKeyVerifier", "SshPipe", "SshTransport"})


@dataclass
class SshOptions:
    config_file: str | None = None          # -F
    identity_files: list[str] = field(default_factory=list)  # -i
    port: int | None = None                 # -p
    jump: str | None = None                 # -J
    known_hosts: str | None = None          # --known-hosts; None: from the SSH config
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


def __getattr__(name: str):
    if name in _CONNECTION_NAMES:
        from spectui.core.transport import ssh_client

        return getattr(ssh_client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
