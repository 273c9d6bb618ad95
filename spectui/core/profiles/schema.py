"""The profile schema: which fields a profile file may have, and checking one file against it.

``validate_document`` looks at a single parsed file (before ``extends`` is resolved) and returns
every problem it finds, each located at the offending key or value, with a "did you mean" where a
close spelling or a likely intended form exists. Messages never quote ``env`` values.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from typing import Any

from spectui.core.profiles.errors import ProfileError, close_matches, did_you_mean
from spectui.core.profiles.model import Node
from spectui.core.profiles.yamlsource import YamlDocument

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


def _scalar_text(value: Any) -> str:
    """How a scalar looks in YAML, for suggestions (only used for non-secret fields)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


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


class _Checker:
    def __init__(self, doc: YamlDocument, profile: str | None) -> None:
        self.doc = doc
        self.profile = profile
        self.errors: list[ProfileError] = []

    def error(self, fpath: tuple, message: str, *, key: bool = False, suggestions=()) -> None:
        line, col = self.doc.where(fpath, key=key)
        self.errors.append(
            ProfileError(
                message,
                path=self.doc.path,
                line=line,
                column=col,
                field=".".join(str(p) for p in fpath) or None,
                profile=self.profile,
                suggestions=suggestions,
            )
        )

    # -- top level -------------------------------------------------------------------------
    def check(self) -> None:
        data = self.doc.data
        if data is None:
            self.error((), "the file is empty; a profile needs at least 'model' (or 'extends')")
            return
        if not isinstance(data, dict):
            self.error(
                (),
                f"a profile file must be a map of fields such as name, model and args, "
                f"not {type_name(data)}",
            )
            return
        for key, value in data.items():
            if not isinstance(key, str):
                self.error((key,), f"field names must be words, not {type_name(key)}", key=True)
                continue
            if key not in FIELDS:
                self.unknown_field(key)
                continue
            getattr(self, "check_" + key.replace("-", "_"))((key,), value)

    def unknown_field(self, key: str) -> None:
        matches = close_matches(key, FIELDS)
        if matches:
            self.error((key,), f"unknown field '{key}'" + did_you_mean(matches), key=True, suggestions=matches)
        elif "-" in key or "_" in key:
            flag = key.lstrip("-").replace("_", "-")
            self.error(
                (key,),
                f"unknown field '{key}'; SGLang flags go under 'args:', e.g. 'args: {{{flag}: ...}}'",
                key=True,
                suggestions=[f"args.{flag}"],
            )
        else:
            self.error(
                (key,),
                f"unknown field '{key}'; a profile may set {', '.join(FIELDS)}",
                key=True,
            )

    # -- scalar fields ---------------------------------------------------------------------
    def _string(self, fpath: tuple, value: Any, *, allow_null: bool = True) -> bool:
        if value is None and allow_null:
            return True
        if isinstance(value, str) and value.strip():
            return True
        field = fpath[-1]
        if isinstance(value, str):
            self.error(fpath, f"field '{field}' is empty; give it a value or remove the line")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            text = _scalar_text(value)
            self.error(
                fpath,
                f"field '{field}' must be a string, not {type_name(value)}; "
                f"did you mean '\"{text}\"' (quoted)?",
                suggestions=[f'"{text}"'],
            )
        else:
            self.error(fpath, f"field '{field}' must be a string, not {type_name(value)}")
        return False

    def check_name(self, fpath: tuple, value: Any) -> None:
        if self._string(fpath, value, allow_null=False) and not NAME_RE.match(value):
            self.error(
                fpath,
                "field 'name' may hold only letters, digits, '.', '_' and '-', starting with a "
                "letter or digit",
            )

    def check_description(self, fpath: tuple, value: Any) -> None:
        self._string(fpath, value)

    def check_model(self, fpath: tuple, value: Any) -> None:
        self._string(fpath, value, allow_null=False)

    def check_python(self, fpath: tuple, value: Any) -> None:
        self._string(fpath, value)

    def check_host(self, fpath: tuple, value: Any) -> None:
        self._string(fpath, value)

    def check_extends(self, fpath: tuple, value: Any) -> None:
        if isinstance(value, list):
            self.error(fpath, "field 'extends' names one profile, not a list; extend a profile that extends another")
        elif self._string(fpath, value, allow_null=False) and not NAME_RE.match(value):
            self.error(fpath, f"field 'extends' must be a profile name, not '{value}'")

    def check_port(self, fpath: tuple, value: Any) -> None:
        if value is None or (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535):
            return
        name = fpath[-1]
        if isinstance(value, int) and not isinstance(value, bool):
            self.error(fpath, f"field '{name}' must be between 1 and 65535, not {value}")
        elif isinstance(value, str) and value.strip().isdigit():
            self.error(
                fpath,
                f"field '{name}' must be a number, not a string; did you mean {value.strip()} (without quotes)?",
                suggestions=[value.strip()],
            )
        else:
            self.error(fpath, f"field '{name}' must be a number between 1 and 65535, not {type_name(value)}")

    def check_metrics(self, fpath: tuple, value: Any) -> None:
        if value is None or isinstance(value, bool):
            return
        text = str(value).strip().lower()
        guess = {"true": "true", "yes": "true", "on": "true", "1": "true",
                 "false": "false", "no": "false", "off": "false", "0": "false"}.get(text)
        hint = f"; did you mean {guess} (without quotes)?" if guess else ""
        self.error(fpath, f"field 'metrics' must be true or false, not {type_name(value)}{hint}",
                   suggestions=[guess] if guess else [])

    def check_gpus(self, fpath: tuple, value: Any) -> None:
        if value is None or parse_gpus(value) is not None:
            return
        self.error(
            fpath,
            "field 'gpus' must be GPU indexes such as [0, 1, 2, 3], \"0,1,2,3\" or \"0-7\" "
            f"(or GPU-/MIG- ids; [] for none), not {type_name(value) if not isinstance(value, (str, list, int)) else repr(value)}",
        )

    def check_launcher(self, fpath: tuple, value: Any) -> None:
        if value is None or split_launcher(value) is not None:
            return
        if isinstance(value, str) and value.strip():
            self.error(fpath, "field 'launcher' has an unclosed quote; write it as a list of words instead")
        else:
            self.error(
                fpath,
                "field 'launcher' must be a string such as '-m sglang.launch_server' or a list of "
                f"words, not {type_name(value)}",
            )

    def check_tags(self, fpath: tuple, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, str):
            self.error(fpath, f"field 'tags' must be a list; did you mean 'tags: [{value}]'?",
                       suggestions=[f"[{value}]"])
            return
        if not isinstance(value, list):
            self.error(fpath, f"field 'tags' must be a list of words, not {type_name(value)}")
            return
        for i, tag in enumerate(value):
            if not isinstance(tag, str) or not tag.strip():
                self.error(fpath + (i,), f"each tag must be a word, not {type_name(tag)}")

    # -- multi-node ------------------------------------------------------------------------
    def check_dist_init_port(self, fpath: tuple, value: Any) -> None:
        self.check_port(fpath, value)

    def check_nodes(self, fpath: tuple, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, str):
            self.error(fpath, f"field 'nodes' must be a list of hosts, rank 0 first; did you mean 'nodes: [{value}, ...]'?")
            return
        if not isinstance(value, list):
            self.error(fpath, f"field 'nodes' must be a list of hosts, rank 0 first, not {type_name(value)}")
            return
        if len(value) < 2:
            self.error(fpath, "field 'nodes' names the hosts of a multi-node server and needs at least two; "
                       "for one host, leave 'nodes' out")
            return
        seen: dict[tuple, int] = {}
        for i, entry in enumerate(value):
            host = self._node(fpath + (i,), entry)
            if host is None:
                continue
            # one host behind several SSH ports (containers, forwarded VMs) is several nodes
            key = (host, entry.get("ssh-port") if isinstance(entry, dict) else None)
            if key in seen:
                self.error(fpath + (i,), f"node '{host}' is listed twice (entries {seen[key] + 1} and {i + 1}); "
                           "each node runs one rank")
            else:
                seen[key] = i

    def _node(self, npath: tuple, entry: Any) -> str | None:
        """Check one ``nodes`` entry; its SSH host when valid."""
        if isinstance(entry, str):
            return entry if self._destination(npath, entry) else None
        if not isinstance(entry, dict):
            self.error(npath, f"each node must be a host name or a map with 'host', not {type_name(entry)}")
            return None
        for key in entry:
            if key not in NODE_FIELDS:
                matches = close_matches(str(key), NODE_FIELDS)
                self.error(npath + (key,), f"unknown node field '{key}'" + (did_you_mean(matches) if matches else
                           f"; a node may set {', '.join(NODE_FIELDS)}"), key=True, suggestions=matches)
        ok = True
        if "address" in entry:
            ok = self._address(npath + ("address",), entry["address"]) and ok
        if "ssh-port" in entry:
            before = len(self.errors)
            self.check_port(npath + ("ssh-port",), entry["ssh-port"])
            ok = ok and len(self.errors) == before
        if "host" not in entry:
            self.error(npath, "a node written as a map needs 'host' ([user@]host, how spectui reaches it over SSH)")
            return None
        host = entry["host"]
        if not isinstance(host, str) or not self._destination(npath + ("host",), host):
            if not isinstance(host, str):
                self.error(npath + ("host",), f"a node's 'host' must be a string, not {type_name(host)}")
            return None
        return host if ok else None

    def _destination(self, npath: tuple, text: str) -> bool:
        if DESTINATION_RE.match(text):
            return True
        if ":" in text and not text.endswith("]") and DESTINATION_RE.match(text.rsplit(":", 1)[0]):
            self.error(npath, f"node '{text}' has a port; write the SSH port as 'ssh-port' in a map "
                       "({host: ..., ssh-port: ...}) and the meeting port as 'dist-init-port'")
        else:
            self.error(npath, f"node '{text}' is not an SSH destination; write it as host or user@host")
        return False

    def _address(self, apath: tuple, value: Any) -> bool:
        if isinstance(value, str) and (HOSTNAME_RE.match(value) or _is_ip(value)):
            return True
        if isinstance(value, str) and ":" in value and (HOSTNAME_RE.match(value.rsplit(":", 1)[0])
                                                        or _is_ip(value.rsplit(":", 1)[0])):
            self.error(apath, f"node address '{value}' has a port; give the address alone and the port "
                       "as the profile's 'dist-init-port'")
        elif isinstance(value, str):
            self.error(apath, f"node address '{value}' is not a host name or an IP address")
        else:
            self.error(apath, f"a node's 'address' must be a host name or IP address, not {type_name(value)}")
        return False

    # -- maps ------------------------------------------------------------------------------
    def _map(self, fpath: tuple, value: Any) -> bool:
        if value is None or isinstance(value, dict):
            return True
        field = fpath[-1]
        if field == "args" and isinstance(value, (str, list)):
            hint = _args_hint(value)
            self.error(
                fpath,
                "field 'args' must be a map of SGLang flags without dashes"
                + (f"; did you mean 'args: {hint}'?" if hint else ", e.g. 'args: {tp-size: 8}'"),
                suggestions=[hint] if hint else [],
            )
        else:
            self.error(fpath, f"field '{field}' must be a map of names to values, not {type_name(value)}")
        return False

    def check_env(self, fpath: tuple, value: Any) -> None:
        if not self._map(fpath, value) or not value:
            return
        for name, val in value.items():
            kpath = fpath + (name,)
            if not isinstance(name, str) or not ENV_NAME_RE.match(name):
                self.error(kpath, "environment variable names may hold only letters, digits and '_' "
                           "and must not start with a digit", key=True)
                continue
            if name == "CUDA_VISIBLE_DEVICES":
                self.error(kpath, "set GPUs with the 'gpus' field, not env CUDA_VISIBLE_DEVICES", key=True,
                           suggestions=["gpus"])
                continue
            # Never quote the value: it may be a secret.
            if val is None or (isinstance(val, (str, int, float)) and not isinstance(val, bool)):
                continue
            if isinstance(val, bool):
                self.error(kpath, f"env value for {name} is true/false; quote it (e.g. \"1\" or \"true\") "
                           "so the server gets the exact text")
            else:
                self.error(kpath, f"env value for {name} must be a string, not {type_name(val)}")

    def check_args(self, fpath: tuple, value: Any) -> None:
        if not self._map(fpath, value) or not value:
            return
        for key, val in value.items():
            kpath = fpath + (key,)
            if not isinstance(key, str):
                self.error(kpath, f"flag names must be words, not {type_name(key)}", key=True)
                continue
            bare = key.lstrip("-").replace("_", "-")
            if "=" in key or not FLAG_KEY_RE.match(key.lstrip("-")):
                self.error(kpath, f"'{key}' is not a flag name; write one flag per key, e.g. 'tp-size: 8'", key=True)
                continue
            if bare in RESERVED_ARGS:
                field = RESERVED_ARGS[bare]
                self.error(kpath, f"spectui writes --{bare} itself; set the top-level field '{field}' instead",
                           key=True, suggestions=[field])
                continue
            if key.startswith("-"):
                self.error(kpath, f"write flags without the leading dashes; did you mean '{bare}'?",
                           key=True, suggestions=[bare])
                continue
            if "_" in key:
                self.error(kpath, f"SGLang flags use dashes, not underscores; did you mean '{bare}'?",
                           key=True, suggestions=[bare])
                continue
            self._flag_value(kpath, key, val)

    def _flag_value(self, kpath: tuple, key: str, val: Any) -> None:
        if val is None or isinstance(val, (bool, int, float, str, dict)):
            if isinstance(val, str) and not val:
                self.error(kpath, f"flag '{key}' has an empty value; use true for a bare flag or false to drop it")
            return
        if isinstance(val, list):
            for i, item in enumerate(val):
                if isinstance(item, bool) or item is None or isinstance(item, (list, dict)):
                    self.error(kpath + (i,), f"values in the list for '{key}' must be numbers or strings, "
                               f"not {type_name(item)}")
            return
        self.error(kpath, f"flag '{key}' has a value of unsupported type {type_name(val)}")

    def check_sim(self, fpath: tuple, value: Any) -> None:
        if not self._map(fpath, value) or not value:
            return
        for key, val in value.items():
            kpath = fpath + (key,)
            if not isinstance(key, str) or not FLAG_KEY_RE.match(key.lstrip("-")):
                self.error(kpath, "sim knob names must be words such as 'hardware' or 'load-time'", key=True)
                continue
            bare = key.lstrip("-")
            if bare.startswith("sim-"):
                self.error(kpath, f"write sim knobs without the --sim- prefix; did you mean '{bare[4:]}'?",
                           key=True, suggestions=[bare[4:]])
                continue
            if key.startswith("-"):
                self.error(kpath, f"write sim knobs without the leading dashes; did you mean '{bare}'?",
                           key=True, suggestions=[bare])
                continue
            if "_" in key:
                dashed = key.replace("_", "-")
                self.error(kpath, f"sim knobs use dashes, not underscores; did you mean '{dashed}'?",
                           key=True, suggestions=[dashed])
                continue
            self._flag_value(kpath, key, val)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


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


def validate_document(doc: YamlDocument, profile: str | None = None) -> list[ProfileError]:
    """Every schema problem in one parsed profile file (empty when it is valid)."""
    checker = _Checker(doc, profile)
    checker.check()
    return checker.errors
