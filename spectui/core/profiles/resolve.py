"""Applying ``extends``: merging each profile over its parent and filling in defaults.

Top-level fields of the child replace the parent's; the maps ``env``, ``args`` and ``sim`` are
merged key by key. In the result, an ``args`` flag set to ``false`` or null is dropped (so a child
can remove an inherited flag), as are ``env`` and ``sim`` entries set to null. Unknown parents and
cycles are reported with the chain, located at the ``extends`` line that causes them. A resolved
multi-node profile is then held to ``multinode.check_multinode`` (its nodes and parallel sizes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spectui.core.profiles.errors import ProfileError, close_matches, did_you_mean
from spectui.core.profiles.model import (
    DEFAULT_HOST,
    DEFAULT_LAUNCHER,
    DEFAULT_PORT,
    Location,
    Profile,
)
from spectui.core.profiles.multinode import check_multinode
from spectui.core.profiles.schema import MAP_FIELDS, parse_gpus, parse_nodes, split_launcher
from spectui.core.profiles.yamlsource import YamlDocument


@dataclass
class RawProfile:
    """One schema-valid profile file before ``extends`` is applied."""

    name: str
    doc: YamlDocument
    #: False when the file had schema errors: children cannot be resolved on top of it.
    valid: bool = True

    @property
    def data(self) -> dict[str, Any]:
        return self.doc.data if isinstance(self.doc.data, dict) else {}

    @property
    def path(self) -> str:
        return self.doc.path

    @property
    def parent(self) -> str | None:
        value = self.data.get("extends")
        return value if isinstance(value, str) else None

    def error(self, fpath: tuple, message: str, suggestions=()) -> ProfileError:
        line, col = self.doc.where(fpath)
        return ProfileError(message, path=self.path, line=line, column=col,
                            field=".".join(map(str, fpath)) or None, profile=self.name,
                            suggestions=suggestions)

    def origins(self) -> dict[str, Location]:
        out: dict[str, Location] = {}
        for key, value in self.data.items():
            fpaths = [(key,)]
            if key in MAP_FIELDS and isinstance(value, dict):
                fpaths += [(key, sub) for sub in value]
            for fpath in fpaths:
                line, col = self.doc.where(fpath)
                key_line, key_col = self.doc.where(fpath, key=True)
                out[".".join(map(str, fpath))] = Location(self.path, line, col, key_line, key_col)
        return out


def merge_profile_data(parent: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """``child`` over ``parent``: fields replaced, ``env``/``args``/``sim`` merged key by key."""
    merged = {k: (dict(v) if isinstance(v, dict) else v) for k, v in parent.items()}
    merged.pop("name", None)
    for key, value in child.items():
        if key in MAP_FIELDS and isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = dict(value) if isinstance(value, dict) else value
    return merged


class _Resolver:
    def __init__(self, raws: dict[str, RawProfile]) -> None:
        self.raws = raws
        self.merged: dict[str, tuple[dict, dict[str, Location], tuple[str, ...]] | None] = {}
        self.errors: list[ProfileError] = []

    def merged_data(self, name: str, stack: tuple[str, ...] = ()):
        """Merged data, origins and chain for ``name``; None (with an error recorded) on failure."""
        if name in self.merged:
            return self.merged[name]
        raw = self.raws[name]
        parent = raw.parent
        result = None
        if not raw.valid:
            result = None
        elif parent is None:
            result = (dict(raw.data), raw.origins(), (name,))
        elif parent in stack + (name,):
            # Members in extends order, ending with this profile; shown starting from it.
            members = stack[stack.index(parent):] + (name,) if parent in stack else (name,)
            # Report the cycle in each member's file, its chain starting from that member.
            for i, member in enumerate(members):
                ring = members[i:] + members[:i]
                chain = " -> ".join(ring + (member,))
                self.errors.append(self.raws[member].error(
                    ("extends",), f"profile '{member}' is in an extends cycle: {chain}; "
                    "remove 'extends' from one of them"))
                self.merged[member] = None
            return None
        elif parent not in self.raws:
            matches = close_matches(parent, self.raws)
            self.errors.append(raw.error(
                ("extends",),
                f"profile '{name}' extends '{parent}', which is not a known profile" + did_you_mean(matches),
                suggestions=matches))
        else:
            up = self.merged_data(parent, stack + (name,))
            if up is None:
                if name in self.merged:  # failed as part of a cycle, already reported
                    return None
                self.errors.append(raw.error(
                    ("extends",), f"profile '{name}' extends '{parent}', which has errors; fix those first"))
            else:
                pdata, porigins, pchain = up
                data = merge_profile_data(pdata, raw.data)
                origins = {**porigins, **raw.origins()}
                result = (data, origins, pchain + (name,))
        self.merged[name] = result
        return result


def build_profile(name: str, raw: RawProfile, data: dict[str, Any], origins: dict[str, Location],
                  chain: tuple[str, ...]) -> Profile:
    """Turn merged, schema-valid data into a ``Profile`` (raises ``ProfileError`` if ``model`` is missing)."""
    model = data.get("model")
    if not isinstance(model, str) or not model.strip():
        line, col = raw.doc.where(())
        via = f" (nor does any profile it extends: {' -> '.join(chain)})" if len(chain) > 1 else ""
        raise ProfileError(
            f"profile '{name}' has no model{via}; add 'model: org/model-name'",
            path=raw.path, line=line, column=col, field="model", profile=name)
    env = {k: str(v) for k, v in (data.get("env") or {}).items() if v is not None}
    args = {k: v for k, v in (data.get("args") or {}).items() if v is not None and v is not False}
    sim = {k: v for k, v in (data.get("sim") or {}).items() if v is not None}
    gpus = parse_gpus(data["gpus"]) if data.get("gpus") is not None else None
    launcher = split_launcher(data["launcher"]) if data.get("launcher") is not None else None
    port = data.get("port")
    metrics = data.get("metrics")
    dist_port = data.get("dist-init-port")
    return Profile(
        name=name,
        model=model,
        description=data.get("description") or "",
        python=data.get("python") or None,
        host=data.get("host") or DEFAULT_HOST,
        port=port if isinstance(port, int) else DEFAULT_PORT,
        gpus=gpus,
        env=env,
        args=args,
        launcher=tuple(launcher) if launcher else DEFAULT_LAUNCHER,
        sim=sim,
        tags=tuple(data.get("tags") or ()),
        metrics=True if metrics is None else bool(metrics),
        nodes=parse_nodes(data.get("nodes")),
        dist_init_port=dist_port if isinstance(dist_port, int) else None,
        extends=raw.parent,
        source=raw.path,
        chain=chain,
        origins=origins,
    )


def resolve_profiles(raws: dict[str, RawProfile]) -> tuple[dict[str, Profile], list[ProfileError]]:
    """Resolve every profile in ``raws``; returns the good ones and all errors found."""
    resolver = _Resolver(raws)
    profiles: dict[str, Profile] = {}
    errors: list[ProfileError] = []
    for name in sorted(raws):
        merged = resolver.merged_data(name)
        if merged is None:
            continue
        data, origins, chain = merged
        try:
            profile = build_profile(name, raws[name], data, origins, chain)
        except ProfileError as exc:
            errors.append(exc)
            continue
        multinode_errors = check_multinode(profile)
        if multinode_errors:
            errors.extend(multinode_errors)
        else:
            profiles[name] = profile
    return profiles, resolver.errors + errors
