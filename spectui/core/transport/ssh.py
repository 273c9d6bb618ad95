"""What names an SSH host and how to reach it: ``[user@]host[:port]`` and the ssh-like options.

Nothing here loads asyncssh, so commands that never open an SSH connection start without it; the
connection itself (``SshTransport``) is in :mod:`spectui.core.transport.ssh_client`, which
:meth:`spectui.core.session.HostTarget.make_transport` imports when a connection is made.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from spectui.core.errors import ConnectError

__all__ = ["SshOptions", "parse_destination"]


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
