"""The profile schema's vocabulary: which fields a profile file may have, the patterns its values follow,
and the parsers of its compound values (GPU lists, launchers, nodes).

:func:`spectui.core.profiles.profile_schema.validate_document` checks one parsed file (before ``extends``
is resolved) against the declared schema and returns every problem it finds, each located at the
offending key or value, with a "did you mean" where a close spelling or a likely intended form exists.
Messages never quote ``env`` values.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from spectui.core.profiles.model import Node

#: Every field a profile file may set, with a short description (used in messages and docs).
FIELDS: dict[str, str] = {
    "name": "the profile's name (defaults to the file name without .yaml)",
    "description": "one line shown in lists",
    "extends": "the name of a profile to inherit from",
    "model": "the model path or Hugging Face id, passed as --model-path",
    "python": "the interpreter on the host, e.g. an SGLang venv's bin/python",
    "launcher": "what follows the interpreter; default '-m sglang.launch_server'",
    "host": "the address the server listens on (--host)",
    "port": "the port the server listens on (--port)",
    "gpus": "GPU indexes or ids, exported as CUDA_VISIBLE_DEVICES",
    "env": "environment variables for the server; values may use ${VAR} from the host",
    "args": "SGLang flags without the leading dashes, e.g. tp-size: 8",
    "sim": "knobs for the simulated host (its --sim-* flags without the prefix)",
    "tags": "a list of words for filtering",
    "metrics": "add --enable-metrics (default true)",
    "nodes": "the hosts of a multi-node server, rank 0 first: [user@]host, or {host, address, ssh-port}",
    "dist-init-port": "the port on the first node where the nodes meet (--dist-init-addr); default 20000",
}

#: The keys a ``nodes`` entry written as a map may have.
NODE_FIELDS: dict[str, str] = {
    "host": "how spectui reaches the node over SSH: [user@]host",
    "address": "the address the other nodes reach it on, when not the SSH host name",
    "ssh-port": "the SSH port, when not 22",
}

#: Fields whose maps are merged key by key with the parent's under ``extends``.
MAP_FIELDS = ("env", "args", "sim")

#: Flags spectui writes itself from top-level fields; setting them in ``args`` is a mistake.
RESERVED_ARGS = {
    "model-path": "model",
    "model": "model",
    "host": "host",
    "port": "port",
    "enable-metrics": "metrics",
}

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FLAG_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
GPU_ID_RE = re.compile(r"^(\d+|(GPU|MIG)-[A-Za-z0-9/-]+)$")
GPU_RANGE_RE = re.compile(r"^(\d+)-(\d+)$")
#: An SSH destination ``[user@]host`` (no options, no spaces, no port: ``ssh-port`` holds that).
DESTINATION_RE = re.compile(r"^(?:[A-Za-z0-9._][A-Za-z0-9._-]*@)?(?:[A-Za-z0-9][A-Za-z0-9._-]*|\[[0-9A-Fa-f:.]+\])$")
HOSTNAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")


def type_name(value: Any) -> str:
    """A reader's word for the YAML type of ``value`` (never the value itself)."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int):
        return "a number"
    if isinstance(value, float):
        return "a decimal number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a map"
    return type(value).__name__


def parse_gpus(value: Any) -> tuple[str, ...] | None:
    """Normalise a ``gpus`` value to GPU ids; ``None`` if the value is not a valid GPU list.

    Accepts an index (``0``), a list (``[0, 1]``; ``[]``: none, a server on the CPU), or a string ``"0,1,2"`` /
    ``"0-7"`` / with ``GPU-<uuid>`` or ``MIG-<uuid>`` ids.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return (str(value),) if value >= 0 else None
    if isinstance(value, str):
        items: list[Any] = [p.strip() for p in value.split(",")]
    elif isinstance(value, list):
        if not value:
            return ()  # no GPUs: a server on the CPU (``device: cpu``)
        items = list(value)
    else:
        return None
    out: list[str] = []
    for item in items:
        if isinstance(item, bool):
            return None
        if isinstance(item, int):
            if item < 0:
                return None
            out.append(str(item))
            continue
        if not isinstance(item, str) or not item:
            return None
        rng = GPU_RANGE_RE.match(item)
        if rng:
            lo, hi = int(rng.group(1)), int(rng.group(2))
            if hi < lo:
                return None
            out.extend(str(i) for i in range(lo, hi + 1))
        elif GPU_ID_RE.match(item):
            out.append(item)
        else:
            return None
    return tuple(out) if out else None


def split_launcher(value: Any) -> list[str] | None:
    """The launcher as argv words, or ``None`` if ``value`` is not a usable launcher."""
    if isinstance(value, str):
        try:
            words = shlex.split(value)
        except ValueError:
            return None
        return words or None
    if isinstance(value, list) and value and all(isinstance(w, str) and w for w in value):
        return list(value)
    return None


def parse_nodes(value: Any) -> tuple[Node, ...]:
    """The ``Node`` entries of a schema-valid ``nodes`` value (none for null)."""
    out: list[Node] = []
    for entry in value or ():
        if isinstance(entry, str):
            out.append(Node(entry))
        else:
            out.append(Node(entry["host"], entry.get("address"), entry.get("ssh-port")))
    return tuple(out)


def _args_hint(value: Any) -> str | None:
    """Turn ``"--tp-size 8 --trust-remote-code"`` into ``{tp-size: 8, trust-remote-code: true}``."""
    if isinstance(value, list):
        words = [str(v) for v in value]
    else:
        try:
            words = shlex.split(value)
        except ValueError:
            return None
    pairs: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("--") or len(word) < 3:
            return None
        name, eq, inline = word[2:].partition("=")
        if eq:
            pairs.append(f"{name}: {inline}")
            i += 1
        elif i + 1 < len(words) and not words[i + 1].startswith("--"):
            pairs.append(f"{name}: {words[i + 1]}")
            i += 2
        else:
            pairs.append(f"{name}: true")
            i += 1
    return "{" + ", ".join(pairs) + "}" if pairs else None
