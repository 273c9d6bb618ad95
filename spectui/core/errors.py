"""Errors a user can cause or meet, each carrying one clear sentence."""

from __future__ import annotations


class SpectuiError(Exception):
    """Base: ``str(exc)`` is one sentence fit to show a user as it is."""


class ConnectError(SpectuiError):
    """Connecting to a host failed."""


class HostUnreachable(ConnectError):
    """DNS failure, refused connection, timeout."""


class AuthFailed(ConnectError):
    """The server refused every identity offered."""


class KeyPassphraseNeeded(ConnectError):
    """An identity file is encrypted and no passphrase was given."""


class HostKeyError(ConnectError):
    """The host key could not be verified."""

    def __init__(self, message: str, *, host: str, port: int, fingerprint: str, key_type: str,
                 known_hosts: str, public_key: str | None = None):
        super().__init__(message)
        self.host = host
        self.port = port
        self.fingerprint = fingerprint
        self.key_type = key_type
        self.known_hosts = known_hosts
        self.public_key = public_key


class HostKeyUnknown(HostKeyError):
    """No known_hosts entry for this host: the user may choose to trust it."""


class HostKeyChanged(HostKeyError):
    """known_hosts has a different key for this host: always refused."""


class HostKeyRevoked(HostKeyChanged):
    """known_hosts marks the offered key ``@revoked``: always refused."""


class AgentStartError(ConnectError):
    """The host's Python could not run the agent (missing, too old, crashed at start)."""


class Disconnected(SpectuiError):
    """The connection to the agent ended."""


class AgentCallError(SpectuiError):
    """The agent answered a request with an error."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
