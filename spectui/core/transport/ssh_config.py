"""What the OpenSSH client config says about one host: its real name, port, user, jump hosts and
known_hosts files (ssh_config(5), https://man.openbsd.org/ssh_config), read with asyncssh's parser."""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass

from spectui.core.errors import ConnectError
from spectui.core.transport.known_hosts import (
    DEFAULT_GLOBAL_FILES,
    DEFAULT_USER_FILES,
    KnownHostsFiles,
    known_hosts_name,
    read_text,
)

DEFAULT_CONFIG = "~/.ssh/config"


@dataclass(frozen=True)
class HostConfig:
    alias: str
    hostname: str
    port: int
    user: str | None
    proxy_jump: str | None
    host_key_alias: str | None
    user_known_hosts: tuple[str, ...]
    global_known_hosts: tuple[str, ...]

    @property
    def key_name(self) -> str:
        """The known_hosts name: HostKeyAlias as is, else the host name with a non-22 port."""
        if self.host_key_alias:
            return self.host_key_alias.lower()
        return known_hosts_name(self.hostname.lower(), self.port)

    def known_hosts_files(self, explicit: str | None) -> KnownHostsFiles:
        user = (os.path.expanduser(explicit),) if explicit else self.user_known_hosts
        return KnownHostsFiles(user=user, system=self.global_known_hosts)


def config_paths(config_file: str | None) -> list[str]:
    """The config files to read; a missing or unreadable ``-F`` file is one sentence naming it."""
    if config_file:
        path = os.path.expanduser(config_file)
        if read_text(path, "The SSH config file") is None:
            raise ConnectError(f"The SSH config file {path} given with -F does not exist: check the path.")
        return [path]
    default = os.path.expanduser(DEFAULT_CONFIG)
    return [default] if read_text(default, "The SSH config file") is not None else []


def _expand(path: str, *, host: str, port: int, user: str | None, alias: str) -> str:
    """ssh_config(5) TOKENS allowed in UserKnownHostsFile: %d %h %n %p %r %u %%, and a leading ~."""
    local = getpass.getuser()
    tokens = {"d": os.path.expanduser("~"), "h": host, "n": alias, "p": str(port), "r": user or local,
              "u": local, "%": "%"}
    out, i = [], 0
    while i < len(path):
        if path[i] == "%" and i + 1 < len(path) and path[i + 1] in tokens:
            out.append(tokens[path[i + 1]])
            i += 2
        else:
            out.append(path[i])
            i += 1
    return os.path.expanduser("".join(out))


def host_config(paths: list[str], alias: str, user: str | None, port: int | None) -> HostConfig:
    """Settings for ``alias`` (a ``Host`` name or a real host name) from the given config files."""
    import asyncssh  # loaded only when a host's config is read: commands that name no SSH host never pay for it
    from asyncssh.config import SSHClientConfig

    try:
        cfg = SSHClientConfig.load(None, paths, False, False, False, getpass.getuser(),
                                   user if user else (), alias, port if port else ())
    except asyncssh.ConfigParseError as exc:
        raise ConnectError(f"The SSH config could not be read: {exc}.") from None
    hostname = str(cfg.get("Hostname") or alias)
    real_port = int(port or cfg.get("Port") or 22)
    real_user = user or cfg.get("User")
    jump = cfg.get("ProxyJump")
    jump = None if not jump or str(jump).lower() == "none" else str(jump)

    def files(option: str, default: tuple[str, ...]) -> tuple[str, ...]:
        given = cfg.get(option)
        names = tuple(given) if given is not None else default
        if any(n.lower() == "none" for n in names):
            return ()
        return tuple(_expand(n, host=hostname, port=real_port, user=real_user, alias=alias) for n in names)

    return HostConfig(alias=alias, hostname=hostname, port=real_port, user=real_user, proxy_jump=jump,
                      host_key_alias=cfg.get("HostKeyAlias"),
                      user_known_hosts=files("UserKnownHostsFile", DEFAULT_USER_FILES),
                      global_known_hosts=files("GlobalKnownHostsFile", DEFAULT_GLOBAL_FILES))
