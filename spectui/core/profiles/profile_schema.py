"""A profile file's schema, declared for msgspec (:mod:`spectui.core.schema_errors` says why msgspec).

Imported only when a profile file is checked (:func:`validate_document`, which the loader imports on first use).
Each field's type says what it takes; the functions here word the sentence for a value it refuses
(with a "did you mean" where a likely intended form exists) and check what a type cannot say. Messages
never quote ``env`` values: they may be secrets.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any, ClassVar

import msgspec
from msgspec import Meta

from spectui.core.profiles.errors import ProfileError, close_matches
from spectui.core.profiles.schema import (DESTINATION_RE, ENV_NAME_RE, FIELDS, FLAG_KEY_RE, HOSTNAME_RE, NAME_RE,
                                          NODE_FIELDS, RESERVED_ARGS, _args_hint, parse_gpus, split_launcher,
                                          type_name)
from spectui.core.profiles.yamlsource import YamlDocument
from spectui.core.schema_errors import Check, Problem, Refused, Says, located, read, unknown_key


# --- strings, ports, switches ----------------------------------------------------------------------------------
def _text_says(fpath: tuple, value: Any) -> str | Refused:
    field = fpath[-1]
    if isinstance(value, str):
        return f"field '{field}' is empty; give it a value or remove the line"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = str(value)
        return Refused(f"field '{field}' must be a string, not {type_name(value)}; did you mean '\"{text}\"' "
                       "(quoted)?", suggestions=[f'"{text}"'])
    return f"field '{field}' must be a string, not {type_name(value)}"


def _name_check(fpath: tuple, value: str) -> str:
    if not NAME_RE.match(value):
        if fpath[-1] == "extends":
            raise Refused(f"field 'extends' must be a profile name, not '{value}'")
        raise Refused("field 'name' may hold only letters, digits, '.', '_' and '-', starting with a letter or digit")
    return value


def _extends_says(fpath: tuple, value: Any) -> str | Refused:
    if isinstance(value, list):
        return "field 'extends' names one profile, not a list; extend a profile that extends another"
    return _text_says(fpath, value)


def _port_says(fpath: tuple, value: Any) -> str | Refused:
    name = fpath[-1]
    if isinstance(value, int) and not isinstance(value, bool):
        return f"field '{name}' must be between 1 and 65535, not {value}"
    if isinstance(value, str) and value.strip().isdigit():
        return Refused(f"field '{name}' must be a number, not a string; did you mean {value.strip()} (without "
                       "quotes)?", suggestions=[value.strip()])
    return f"field '{name}' must be a number between 1 and 65535, not {type_name(value)}"


_SWITCH_WORDS = {"true": "true", "yes": "true", "on": "true", "1": "true",
                 "false": "false", "no": "false", "off": "false", "0": "false"}


def _metrics_says(fpath: tuple, value: Any) -> Refused:
    guess = _SWITCH_WORDS.get(str(value).strip().lower())
    hint = f"; did you mean {guess} (without quotes)?" if guess else ""
    return Refused(f"field 'metrics' must be true or false, not {type_name(value)}{hint}",
                   suggestions=[guess] if guess else [])


def _gpus(fpath: tuple, value: Any) -> Any:
    if parse_gpus(value) is None:
        shown = type_name(value) if not isinstance(value, (str, list, int)) else repr(value)
        raise Refused("field 'gpus' must be GPU indexes such as [0, 1, 2, 3], \"0,1,2,3\" or \"0-7\" "
                      f"(or GPU-/MIG- ids; [] for none), not {shown}")
    return value


def _launcher(fpath: tuple, value: Any) -> Any:
    if split_launcher(value) is not None:
        return value
    if isinstance(value, str) and value.strip():
        raise Refused("field 'launcher' has an unclosed quote; write it as a list of words instead")
    raise Refused("field 'launcher' must be a string such as '-m sglang.launch_server' or a list of "
                  f"words, not {type_name(value)}")


def _tags_says(fpath: tuple, value: Any) -> str | Refused:
    if isinstance(value, str):
        return Refused(f"field 'tags' must be a list; did you mean 'tags: [{value}]'?", suggestions=[f"[{value}]"])
    return f"field 'tags' must be a list of words, not {type_name(value)}"


Text = Annotated[str, Meta(pattern=r"\S"), Says(_text_says)]
Name = Annotated[Text, Check(_name_check)]
Extends = Annotated[str, Meta(pattern=r"\S"), Says(_extends_says), Check(_name_check)]
Port = Annotated[int, Meta(ge=1, le=65535), Says(_port_says)]
Tag = Annotated[str, Meta(pattern=r"\S"), Says(lambda f, v: f"each tag must be a word, not {type_name(v)}")]


# --- multi-node ------------------------------------------------------------------------------------------------
def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _destination(fpath: tuple, text: str) -> str:
    if DESTINATION_RE.match(text):
        return text
    if ":" in text and not text.endswith("]") and DESTINATION_RE.match(text.rsplit(":", 1)[0]):
        raise Refused(f"node '{text}' has a port; write the SSH port as 'ssh-port' in a map "
                      "({host: ..., ssh-port: ...}) and the meeting port as 'dist-init-port'")
    raise Refused(f"node '{text}' is not an SSH destination; write it as host or user@host")


def _address(fpath: tuple, value: str) -> str:
    if HOSTNAME_RE.match(value) or _is_ip(value):
        return value
    bare = value.rsplit(":", 1)[0]
    if ":" in value and (HOSTNAME_RE.match(bare) or _is_ip(bare)):
        raise Refused(f"node address '{value}' has a port; give the address alone and the port as the "
                      "profile's 'dist-init-port'")
    raise Refused(f"node address '{value}' is not a host name or an IP address")


NodeHost = Annotated[str, Says(lambda f, v: f"a node's 'host' must be a string, not {type_name(v)}"),
                     Check(_destination)]
NodeAddress = Annotated[str, Says(lambda f, v: f"a node's 'address' must be a host name or IP address, "
                                               f"not {type_name(v)}"), Check(_address)]


class NodeMap(msgspec.Struct, kw_only=True):
    """A node written as a map; a problem anywhere in it leaves the node out of the duplicate check."""

    partial: ClassVar[bool] = False
    host: NodeHost
    address: NodeAddress = None
    ssh_port: Port | None = msgspec.field(default=None, name="ssh-port")

    @classmethod
    def unknown(cls, fpath: tuple, known: tuple) -> Refused:
        return unknown_key(fpath, NODE_FIELDS, f"unknown node field '{fpath[-1]}'", "a node may set")

    @classmethod
    def missing(cls, fpath: tuple, name: str) -> Refused:
        return Refused("a node written as a map needs 'host' ([user@]host, how spectui reaches it over SSH)")


def _node(fpath: tuple, node: str | NodeMap) -> tuple[int, tuple]:
    """A valid node as (its index, what makes it one node: host and SSH port)."""
    if isinstance(node, str):
        return fpath[-1], (node, None)
    return fpath[-1], (node.host, node.ssh_port)


def _once_each(fpath: tuple, nodes: list[tuple[int, tuple]]) -> list:
    """One host behind several SSH ports (containers, forwarded VMs) is several nodes; the same one twice is not."""
    seen: dict[tuple, int] = {}
    twice = []
    for i, key in nodes:
        if key in seen:
            twice.append(Refused(f"node '{key[0]}' is listed twice (entries {seen[key] + 1} and {i + 1}); each node "
                                 "runs one rank", at=(i,)))
        else:
            seen[key] = i
    if twice:
        raise Refused(twice[0].message, at=twice[0].at, more=twice[1:])
    return nodes


def _nodes_says(fpath: tuple, value: Any) -> str:
    if isinstance(value, str):
        return f"field 'nodes' must be a list of hosts, rank 0 first; did you mean 'nodes: [{value}, ...]'?"
    if isinstance(value, list):
        return "field 'nodes' names the hosts of a multi-node server and needs at least two; for one host, leave " \
               "'nodes' out"
    return f"field 'nodes' must be a list of hosts, rank 0 first, not {type_name(value)}"


NodeEntry = Annotated[Annotated[str, Check(_destination)] | NodeMap,
                      Says(lambda f, v: f"each node must be a host name or a map with 'host', not {type_name(v)}"),
                      Check(_node)]


# --- maps: env, args, sim --------------------------------------------------------------------------------------
def _map_says(fpath: tuple, value: Any) -> str | Refused:
    if fpath[-1] == "args" and isinstance(value, (str, list)):
        hint = _args_hint(value)
        return Refused("field 'args' must be a map of SGLang flags without dashes"
                       + (f"; did you mean 'args: {hint}'?" if hint else ", e.g. 'args: {tp-size: 8}'"),
                       suggestions=[hint] if hint else [])
    return f"field '{fpath[-1]}' must be a map of names to values, not {type_name(value)}"


def _env_name(fpath: tuple, name: str) -> str:
    if not ENV_NAME_RE.match(name):
        raise Refused(_ENV_NAME_RULE)
    if name == "CUDA_VISIBLE_DEVICES":
        raise Refused("set GPUs with the 'gpus' field, not env CUDA_VISIBLE_DEVICES", suggestions=["gpus"])
    return name


def _env_value_says(fpath: tuple, value: Any) -> str:
    # never the value itself: it may be a secret
    if isinstance(value, bool):
        return f"env value for {fpath[-1]} is true/false; quote it (e.g. \"1\" or \"true\") so the server gets " \
               "the exact text"
    return f"env value for {fpath[-1]} must be a string, not {type_name(value)}"


def _flag_key(fpath: tuple, key: str) -> str:
    bare = key.lstrip("-").replace("_", "-")
    if "=" in key or not FLAG_KEY_RE.match(key.lstrip("-")):
        raise Refused(f"'{key}' is not a flag name; write one flag per key, e.g. 'tp-size: 8'")
    if bare in RESERVED_ARGS:
        field = RESERVED_ARGS[bare]
        raise Refused(f"spectui writes --{bare} itself; set the top-level field '{field}' instead",
                      suggestions=[field])
    if key.startswith("-"):
        raise Refused(f"write flags without the leading dashes; did you mean '{bare}'?", suggestions=[bare])
    if "_" in key:
        raise Refused(f"SGLang flags use dashes, not underscores; did you mean '{bare}'?", suggestions=[bare])
    return key


def _sim_key(fpath: tuple, key: str) -> str:
    if not FLAG_KEY_RE.match(key.lstrip("-")):
        raise Refused(_SIM_KEY_RULE)
    bare = key.lstrip("-")
    if bare.startswith("sim-"):
        raise Refused(f"write sim knobs without the --sim- prefix; did you mean '{bare[4:]}'?",
                      suggestions=[bare[4:]])
    if key.startswith("-"):
        raise Refused(f"write sim knobs without the leading dashes; did you mean '{bare}'?", suggestions=[bare])
    if "_" in key:
        dashed = key.replace("_", "-")
        raise Refused(f"sim knobs use dashes, not underscores; did you mean '{dashed}'?", suggestions=[dashed])
    return key


def _flag_value_says(fpath: tuple, value: Any) -> str:
    if value == "":
        return f"flag '{fpath[-1]}' has an empty value; use true for a bare flag or false to drop it"
    return f"flag '{fpath[-1]}' has a value of unsupported type {type_name(value)}"


_ENV_NAME_RULE = "environment variable names may hold only letters, digits and '_' and must not start with a digit"
_SIM_KEY_RULE = "sim knob names must be words such as 'hardware' or 'load-time'"
FlagItem = Annotated[int | float | str, Says(lambda f, v: f"values in the list for '{f[-2]}' must be numbers or "
                                                         f"strings, not {type_name(v)}")]
FlagValue = Annotated[None | bool | int | float | Annotated[str, Meta(min_length=1)] | dict | list[FlagItem],
                      Says(_flag_value_says)]
EnvValue = Annotated[str | int | float, Says(_env_value_says)]
Env = Annotated[dict[Annotated[str, Says(_ENV_NAME_RULE), Check(_env_name)], EnvValue | None], Says(_map_says)]
Args = Annotated[dict[Annotated[str, Says(lambda f, v: f"flag names must be words, not {type_name(v)}"),
                                Check(_flag_key)], FlagValue], Says(_map_says)]
Sim = Annotated[dict[Annotated[str, Says(_SIM_KEY_RULE), Check(_sim_key)], FlagValue], Says(_map_says)]


# --- the file ---------------------------------------------------------------------------------------------------
class ProfileFile(msgspec.Struct, kw_only=True):
    name: Name = None
    description: Text | None = None
    extends: Extends = None
    model: Text = None
    python: Text | None = None
    launcher: Annotated[Any, Check(_launcher)] | None = None
    host: Text | None = None
    port: Port | None = None
    gpus: Annotated[Any, Check(_gpus)] | None = None
    env: Env | None = None
    args: Args | None = None
    sim: Sim | None = None
    tags: Annotated[list[Tag], Says(_tags_says)] | None = None
    metrics: Annotated[bool, Says(_metrics_says)] | None = None
    nodes: Annotated[list[NodeEntry], Meta(min_length=2), Says(_nodes_says), Check(_once_each)] | None = None
    dist_init_port: Port | None = msgspec.field(default=None, name="dist-init-port")

    @classmethod
    def unknown(cls, fpath: tuple, known: tuple) -> Refused:
        key = fpath[-1]
        if not isinstance(key, str):
            return Refused(f"field names must be words, not {type_name(key)}", key=True)
        if close_matches(key, FIELDS) or not ("-" in key or "_" in key):
            return unknown_key(fpath, FIELDS, f"unknown field '{key}'", "a profile may set")
        flag = key.lstrip("-").replace("_", "-")
        return Refused(f"unknown field '{key}'; SGLang flags go under 'args:', e.g. 'args: {{{flag}: ...}}'",
                       key=True, suggestions=[f"args.{flag}"])


def profile_problems(data: dict) -> list[Problem]:
    """Every problem in one profile file's map of fields, in the file's order."""
    return read(data, ProfileFile)[1]


def validate_document(doc: YamlDocument, profile: str | None = None) -> list[ProfileError]:
    """Every schema problem in one parsed profile file (empty when it is valid)."""
    data = doc.data
    if data is None:
        problems = [Problem((), "the file is empty; a profile needs at least 'model' (or 'extends')")]
    elif not isinstance(data, dict):
        problems = [Problem((), "a profile file must be a map of fields such as name, model and args, "
                                f"not {type_name(data)}")]
    else:
        problems = profile_problems(data)
    return [located(doc, p, profile=profile) for p in problems]
