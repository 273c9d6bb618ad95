"""``Profile``: one fully resolved server profile (``extends`` applied, defaults filled in).

A Profile is what the rest of spectui works with. Its ``env`` and secret ``args`` (``api-key``, see
``secret_flags``) may hold secrets, so every way of showing it (``repr``, ``str``, ``redacted()``,
``to_dict()``) masks those values; only ``build_env`` and ``build_argv`` hand them out, for the
process that starts the server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from spectui.core.profiles.secret_flags import REDACTED, redact_args

if TYPE_CHECKING:
    from spectui.core.profiles.errors import ProfileError

DEFAULT_LAUNCHER: tuple[str, ...] = ("-m", "sglang.launch_server")
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 30000


@dataclass(frozen=True)
class Node:
    """One host of a multi-node profile (``nodes:``); the first is rank 0."""

    #: How spectui reaches it over SSH: ``[user@]host``.
    host: str
    #: The address the other nodes reach it on, when not the SSH host name (a cluster network).
    address: str | None = None
    #: The SSH port, when not the default.
    ssh_port: int | None = None

    @property
    def dist_address(self) -> str:
        """The address the other nodes use for this one: ``address``, else the SSH host name."""
        if self.address:
            return self.address
        host = self.host.rpartition("@")[2]
        return host[1:-1] if host.startswith("[") and host.endswith("]") else host

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"host": self.host}
        if self.address is not None:
            out["address"] = self.address
        if self.ssh_port is not None:
            out["ssh_port"] = self.ssh_port
        return out


@dataclass(frozen=True)
class Location:
    """Where a value was written: file, 1-based line and column."""

    path: str
    line: int | None = None
    column: int | None = None
    #: Where the key of a map entry was written (the value may be on another line).
    key_line: int | None = None
    key_column: int | None = None


@dataclass(frozen=True, eq=False, repr=False)
class Profile:
    """A resolved profile. Build it with ``load_profiles``; fields follow the YAML fields."""

    name: str
    model: str
    description: str = ""
    python: str | None = None
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    gpus: tuple[str, ...] | None = None
    env: dict[str, str] = field(default_factory=dict)
    args: dict[str, Any] = field(default_factory=dict)
    launcher: tuple[str, ...] = DEFAULT_LAUNCHER
    sim: dict[str, Any] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    metrics: bool = True
    #: The hosts of a multi-node server, rank 0 first; empty for a single-host profile.
    nodes: tuple[Node, ...] = ()
    #: The port on rank 0's node where the nodes meet (``--dist-init-addr``); None: the default.
    dist_init_port: int | None = None
    extends: str | None = None
    #: The file this profile was defined in.
    source: str | None = None
    #: The extends chain from the root ancestor down to this profile.
    chain: tuple[str, ...] = ()
    #: Where each value was written (dotted field name -> Location), across the extends chain.
    origins: dict[str, Location] = field(default_factory=dict)

    # -- identity --------------------------------------------------------------------------
    def launch_spec(self) -> dict[str, Any]:
        """Everything that decides what server runs; the input of ``content_hash``.

        The multi-node fields appear only when set, so a single-host profile keeps its hash."""
        spec = {
            "name": self.name,
            "model": self.model,
            "python": self.python,
            "launcher": list(self.launcher),
            "host": self.host,
            "port": self.port,
            "gpus": list(self.gpus) if self.gpus is not None else None,
            "env": dict(self.env),
            "args": dict(self.args),
            "sim": dict(self.sim),
            "metrics": self.metrics,
        }
        spec.update(self._multinode_fields())
        return spec

    def _multinode_fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.nodes:
            out["nodes"] = [node.to_dict() for node in self.nodes]
        if self.dist_init_port is not None:
            out["dist_init_port"] = self.dist_init_port
        return out

    @property
    def content_hash(self) -> str:
        """sha256 (hex) of the canonical JSON of ``launch_spec()``: equal for equal servers.

        Labels (description, tags) and provenance (source file, chain) do not change it.
        """
        import hashlib  # OpenSSL's bindings load when a hash is first asked for, not with every profile

        canonical = json.dumps(
            self.launch_spec(), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Profile):
            return NotImplemented
        return self.content_hash == other.content_hash and self.description == other.description \
            and self.tags == other.tags

    def __hash__(self) -> int:
        return hash(self.content_hash)

    # -- speculative summary ---------------------------------------------------------------
    @property
    def algorithm(self) -> str | None:
        """The ``speculative-algorithm`` argument, or ``None`` for a plain server."""
        value = self.args.get("speculative-algorithm")
        return str(value) if value not in (None, False) else None

    def speculative_settings(self) -> dict[str, Any]:
        """The key speculative settings (None where unset): steps, topk, draft tokens, draft model."""
        args = self.args
        return {
            "algorithm": self.algorithm,
            "num_steps": args.get("speculative-num-steps"),
            "topk": args.get("speculative-eagle-topk"),
            "draft_tokens": args.get("speculative-num-draft-tokens"),
            "draft_model": args.get("speculative-draft-model-path", args.get("speculative-draft-model")),
        }

    # -- display (secrets masked) ----------------------------------------------------------
    def location_of(self, field_name: str) -> Location | None:
        """Where ``field_name`` (e.g. ``args.speculative-algorithm``) was written, if known."""
        probe = field_name
        while probe:
            if probe in self.origins:
                return self.origins[probe]
            probe = probe.rpartition(".")[0]
        return Location(self.source) if self.source else None

    def redacted(self) -> dict[str, Any]:
        """A plain dict for display, with every ``env`` value and secret ``args`` value replaced by ``<redacted>``."""
        shown = {
            "name": self.name,
            "description": self.description,
            "model": self.model,
            "python": self.python,
            "launcher": list(self.launcher),
            "host": self.host,
            "port": self.port,
            "gpus": list(self.gpus) if self.gpus is not None else None,
            "env": {k: REDACTED for k in self.env},
            "args": redact_args(self.args),
            "sim": dict(self.sim),
            "tags": list(self.tags),
            "metrics": self.metrics,
            "extends": self.extends,
            "source": self.source,
            "content_hash": self.content_hash,
        }
        shown.update(self._multinode_fields())
        return shown

    to_dict = redacted

    def __repr__(self) -> str:
        env = {k: REDACTED for k in self.env}
        return (
            f"Profile(name={self.name!r}, model={self.model!r}, algorithm={self.algorithm!r}, "
            f"host={self.host!r}, port={self.port!r}, gpus={self.gpus!r}, env={env!r}, "
            f"args={redact_args(self.args)!r}, source={self.source!r})"
        )

    def __str__(self) -> str:
        algo = self.algorithm or "no speculation"
        return f"{self.name} ({self.model}, {algo})"


@dataclass
class ProfileLibrary:
    """The loaded profiles by name, plus every error found while loading them."""

    profiles: dict[str, Profile] = field(default_factory=dict)
    errors: list[ProfileError] = field(default_factory=list)
    #: Profile name -> files of lower layers that this name overrides.
    shadowed: dict[str, list[str]] = field(default_factory=dict)
    #: Every file that was read.
    files: list[str] = field(default_factory=list)

    def get(self, name: str) -> Profile:
        """The profile called ``name``; a ``ProfileError`` with close names if there is none."""
        try:
            return self.profiles[name]
        except KeyError:
            from spectui.core.profiles.errors import ProfileError, close_matches, did_you_mean

            matches = close_matches(name, self.profiles)
            raise ProfileError(
                f"no profile named '{name}'" + did_you_mean(matches)
                + ("" if matches else "; 'spectui profiles list' shows them"),
                profile=name, suggestions=matches) from None

    def names(self) -> list[str]:
        return sorted(self.profiles)

    def __iter__(self) -> Iterator[Profile]:
        return iter(self.profiles[n] for n in self.names())

    def __len__(self) -> int:
        return len(self.profiles)

    def __contains__(self, name: object) -> bool:
        return name in self.profiles

    @property
    def ok(self) -> bool:
        return not self.errors
