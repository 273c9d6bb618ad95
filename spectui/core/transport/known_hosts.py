"""known_hosts files read and matched the way OpenSSH's client does.

Formats and rules follow OpenSSH's sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT" and ssh_config(5)
(https://man.openbsd.org/sshd#SSH_KNOWN_HOSTS_FILE_FORMAT, https://man.openbsd.org/ssh_config):

* a host is looked up as ``host`` on port 22 and as ``[host]:port`` on any other port; a plain
  ``host`` entry does not apply to another port;
* host patterns are comma lists with ``*``/``?`` wildcards and ``!`` negation, or hashed
  ``|1|salt|hmac-sha1`` names (``ssh-keygen -H``);
* ``@revoked`` marks a key that must never be accepted; ``@cert-authority`` a CA whose host
  certificates are trusted;
* user files (``UserKnownHostsFile``, default ``~/.ssh/known_hosts ~/.ssh/known_hosts2``) and
  global files (``GlobalKnownHostsFile``, default ``/etc/ssh/ssh_known_hosts
  /etc/ssh/ssh_known_hosts2``) are all read; new keys are added to the first user file.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
import hmac
import os
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from spectui.core.errors import ConnectError

if TYPE_CHECKING:  # loaded where a key is read, so that naming files and hosts costs no asyncssh import
    import asyncssh

DEFAULT_USER_FILES = ("~/.ssh/known_hosts", "~/.ssh/known_hosts2")
DEFAULT_GLOBAL_FILES = ("/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")


def known_hosts_name(host: str, port: int) -> str:
    """The name OpenSSH looks up and writes: ``host`` on port 22, ``[host]:port`` otherwise."""
    return host if port == 22 else f"[{host}]:{port}"


def read_text(path: str, what: str) -> str | None:
    """A text file's content, None when it does not exist; one sentence naming the file otherwise."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ConnectError(f"{what} {path} is a folder, not a file: give the path of the file itself.") from None
    except PermissionError:
        raise ConnectError(f"{what} {path} cannot be read (permission denied): fix its permissions.") from None
    except OSError as exc:
        raise ConnectError(f"{what} {path} cannot be read: {exc.strerror or exc}.") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConnectError(f"{what} {path} is not a text file (byte {exc.start + 1} is not UTF-8): "
                           f"give an OpenSSH {what.lower()} file.") from None


@dataclass(frozen=True)
class Entry:
    """One key line of a known_hosts file."""

    path: str
    line: int
    marker: str          # "" | "revoked" | "cert-authority"
    patterns: str
    key: asyncssh.SSHKey

    def matches(self, name: str) -> bool:
        return host_matches(self.patterns, name)

    def names_literally(self, name: str) -> bool:
        """Whether ``ssh-keygen -R name`` removes this line (a literal or hashed name, not a wildcard)."""
        if self.patterns.startswith("|1|"):
            return True
        return name.lower() in (p.lower() for p in self.patterns.split(","))


def _hashed_matches(pattern: str, name: str) -> bool:
    parts = pattern.split("|")
    if len(parts) != 4 or parts[1] != "1":
        return False
    try:
        salt, digest = base64.b64decode(parts[2]), base64.b64decode(parts[3])
    except (binascii.Error, ValueError):
        return False
    return hmac.compare_digest(hmac.new(salt, name.encode(), hashlib.sha1).digest(), digest)


def host_matches(patterns: str, name: str) -> bool:
    """OpenSSH's ``match_hostname``: any positive pattern matches and no negated one does."""
    if patterns.startswith("|"):
        return _hashed_matches(patterns, name)
    name = name.lower()
    found = False
    for pattern in patterns.split(","):
        negated = pattern.startswith("!")
        pattern = pattern[1:] if negated else pattern
        if pattern and fnmatch.fnmatchcase(name, pattern.lower().replace("[", "[[]")):
            if negated:
                return False
            found = True
    return found


def parse(text: str, path: str) -> list[Entry]:
    """The key lines of a known_hosts file; comments and lines OpenSSH would skip are skipped."""
    import asyncssh

    entries = []
    for number, raw in enumerate(text.splitlines(), 1):
        fields = raw.split()
        if not fields or fields[0].startswith("#"):
            continue
        marker = ""
        if fields[0].startswith("@"):
            marker = fields[0][1:]
            fields = fields[1:]
            if marker not in ("revoked", "cert-authority"):
                continue
        if len(fields) < 3:
            continue
        try:
            key = asyncssh.import_public_key(f"{fields[1]} {fields[2]}")
        except (asyncssh.KeyImportError, ValueError):
            continue
        entries.append(Entry(path, number, marker, fields[0], key))
    return entries


@dataclass(frozen=True)
class KnownHostsFiles:
    """The files a host's key is checked against; ``user[0]`` receives new keys."""

    user: tuple[str, ...]
    system: tuple[str, ...] = DEFAULT_GLOBAL_FILES

    @property
    def writable(self) -> str | None:
        return self.user[0] if self.user else None

    def read(self) -> list[Entry]:
        entries: list[Entry] = []
        for path in (*self.user, *self.system):
            text = read_text(path, "The known_hosts file")
            if text is not None:
                entries.extend(parse(text, path))
        return entries


@dataclass
class HostKeys:
    """What the known_hosts files say about one host name."""

    name: str
    known: list[Entry] = field(default_factory=list)
    authorities: list[Entry] = field(default_factory=list)
    revoked: list[Entry] = field(default_factory=list)

    @property
    def host_key_algorithms(self) -> list[bytes]:
        """Host key algorithms to offer first, like OpenSSH orders them: those of keys it knows."""
        algs: list[bytes] = []
        if self.authorities:
            import asyncssh

            algs.extend(asyncssh.public_key.get_default_certificate_algs())
        for e in self.known:
            algs.extend(a for a in e.key.sig_algorithms if a not in algs)
        return algs


def lookup(files: KnownHostsFiles, name: str) -> HostKeys:
    found = HostKeys(name)
    for e in files.read():
        if e.matches(name):
            {"": found.known, "cert-authority": found.authorities, "revoked": found.revoked}[e.marker].append(e)
    return found


@dataclass(frozen=True)
class Judgement:
    verdict: str                  # known | revoked | changed | unknown
    entry: Entry | None = None    # the line that decided (revoked/changed) or matched (known)


def judge(keys: HostKeys, key: asyncssh.SSHKey) -> Judgement:
    """OpenSSH's order: a revoked key is refused first, then a recorded key is accepted; any other key
    for a host that has recorded keys is a changed key (never trusted); otherwise the key is unknown."""
    blob = key.public_data
    for e in keys.revoked:
        if e.key.public_data == blob:
            return Judgement("revoked", e)
    for e in keys.known:
        if e.key.public_data == blob:
            return Judgement("known", e)
    same_type = [e for e in keys.known if e.key.get_algorithm() == key.get_algorithm()]
    if same_type or keys.known:
        return Judgement("changed", (same_type or keys.known)[0])
    return Judgement("unknown")


def removal_hint(entry: Entry, name: str) -> str:
    """How to remove the line that records the old key, as a command or an edit."""
    if entry.names_literally(name):
        return f"ssh-keygen -R {shlex.quote(name)} -f {shlex.quote(entry.path)}"
    return f"delete line {entry.line} of {entry.path} (its pattern {entry.patterns} covers {name})"


def append(path: str, name: str, key: asyncssh.SSHKey) -> None:
    """Add ``name keytype base64`` to a known_hosts file, as OpenSSH's accept-new does."""
    os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
    kind, blob = key.export_public_key("openssh").decode().split()[:2]
    line = f"{name} {kind} {blob}\n"
    try:
        needs_newline = os.path.getsize(path) > 0 and not _ends_with_newline(path)
    except OSError:
        needs_newline = False
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(("\n" if needs_newline else "") + line)
    except OSError as exc:
        raise ConnectError(f"The host key could not be saved to {path}: {exc.strerror or exc}.") from None


def _ends_with_newline(path: str) -> bool:
    with open(path, "rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"
