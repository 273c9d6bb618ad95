"""The settings file's schema (``config.yaml``, :mod:`spectui.core.settings`), alert rules included.

Imported only when a settings file is read, so that commands that read none do not load msgspec.
Each field declares its type, bounds and the sentence for a bad value (:mod:`spectui.core.schema_errors`).
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import replace
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from spectui.core.alerts import DEFAULT_RULES, OUTPUT_KEYS, RULE_FIELDS, AlertConfig
from spectui.core.schema_errors import Check, Problem, Refused, Says, read, unknown_key
from spectui.core.settings import TELEMETRY_HZ_MAX

_DESTINATION = re.compile(r"[^\s\-][^\s]*")


def shown(value: Any) -> str:
    """A short picture of a value for a message: ``a map``, ``a list`` or its repr (at most 40 characters)."""
    if isinstance(value, (dict, list)):
        return "a map" if isinstance(value, dict) else "a list"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _when(ok: Any, says: Says) -> Check:
    """A check that refuses a value ``ok(value)`` rejects with the sentence ``says`` words for it."""
    def check(fpath: tuple, value: Any) -> Any:
        if not ok(value):
            raise says.refusal(fpath, value)
        return value
    return Check(check)


def _number(low: float, high: float, what: str) -> Any:
    return Annotated[float, Meta(ge=low, le=high), Says(
        lambda f, v: f"'{f[-1]}' is the {what}: a number from {low:g} to {high:g}, not {shown(v)}")]


def _integer(low: int, high: int, what: str) -> Any:
    return Annotated[int, Meta(ge=low, le=high), Says(
        lambda f, v: f"'{f[-1]}' is the {what}: a whole number from {low} to {high}, not {shown(v)}")]


def _map_of_options(fpath: tuple, value: Any) -> str:
    return f"'{fpath[-1]}' takes a map of options (one 'name: value' per line below it)"


_said_destination = Says(lambda f, v: f"'{f[-1]}' takes one [user@]host[:port] or SSH config alias, without "
                                      "spaces and not starting with '-'")
Destination = Annotated[str, _said_destination,
                        _when(lambda v: _DESTINATION.fullmatch(v) and v.isprintable(), _said_destination)]
_said_host = Says(lambda f, v: f"'hosts' entry {f[-1] + 1} takes one [user@]host[:port] or SSH config alias, "
                               "without spaces and not starting with '-'")
HostEntry = Annotated[str, _said_host, _when(lambda v: _DESTINATION.fullmatch(v) and v.isprintable(), _said_host)]
_said_word = Says(lambda f, v: f"'{f[-1]}' takes a theme name such as textual-dark")
Word = Annotated[str, Meta(pattern=r"\S"), _said_word, _when(str.isprintable, _said_word),
                 Check(lambda f, v: v.strip())]
_said_file = Says(lambda f, v: f"'{f[0] if len(f) > 2 else f[-1]}' takes a file path")
FilePath = Annotated[str, Meta(pattern=r"\S"), _said_file, _when(lambda v: "\0" not in v, _said_file),
                     Check(lambda f, v: os.path.expanduser(v.strip()))]


class _Section(msgspec.Struct, kw_only=True):
    @classmethod
    def unknown(cls, fpath: tuple, known: tuple) -> Refused:
        where = "a setting" if len(fpath) == 1 else f"an option of '{fpath[0]}'"
        return unknown_key(fpath, known, f"'{fpath[-1]}' is not {where}", "the known ones are")


class Ssh(_Section):
    config_file: FilePath = msgspec.field(default=None, name="config")
    identity_files: Annotated[FilePath | list[FilePath], _said_file] = msgspec.field(default=None, name="identity")
    port: _integer(1, 65535, "SSH port") = None
    jump: Destination = None
    known_hosts: FilePath = None
    accept_new_host_key: Annotated[bool, Says("accept_new_host_key takes true or false")] = None
    connect_timeout: _number(0.1, 600.0, "connect timeout in seconds") = None


class Demo(_Section):
    port_base: _integer(1024, 65535, "first port of the demo servers") = None


def _choice(name: str, *choices: str) -> Any:
    return Annotated[Literal[choices], Says(
        lambda f, v: f"'probe.{name}' is one of {', '.join(choices)}, not {shown(v)}")]


class Probe(_Section):
    """The console's verify-cost probe (p): torch.distributed backend and where the ranks' tensors live,
    as ``spectui probe --backend/--device`` (gloo on cpu rehearses a probe on hosts without GPUs)."""

    backend: _choice("backend", "auto", "nccl", "gloo") = None
    device: _choice("device", "auto", "cuda", "cpu") = None


def _keys(fpath: tuple, value: Any) -> str:
    """A keymap entry's keys (``"x"``, ``"x,ctrl+x"`` or a list of them) as one comma-separated string."""
    binding_id = fpath[-1]
    keys = value if isinstance(value, list) else [value]
    if not keys or not all(isinstance(k, str) and k.strip() for k in keys):
        raise Refused(f"give {binding_id} its keys as text, e.g. \"x\" or \"x,ctrl+x\"")
    names = [n.strip() for k in keys for n in k.split(",")]
    if not all(names):
        raise Refused(f"the keys of {binding_id} have an empty name between commas; remove it")
    return ",".join(names)


BindingId = Annotated[str, Says("a keymap entry is a binding id such as dashboard.stop")]


# --- alerts: ---------------------------------------------------------------------------------------------------
def _share(fpath: tuple, value: float) -> float:
    """``ratio`` and ``fraction``: above 0 and at most 1, and only on the rules that have one."""
    rule, name = fpath[-2], fpath[-1]
    if not 0 < value <= 1:
        raise Refused(f"alerts.{rule}.{name} must be above 0 and at most 1")
    if getattr(DEFAULT_RULES[rule], name) is None:
        raise Refused(f"alerts.{rule} has no {name}")
    return value


Seconds = Annotated[float, Meta(ge=0), Says(lambda f, v: f"alerts.{f[-2]}.{f[-1]} must be a number of at least 0")]
Share = Annotated[Seconds, Check(_share)]


class Rule(msgspec.Struct, kw_only=True):
    enabled: Annotated[bool, Says(lambda f, v: f"alerts.{f[-2]}.enabled must be true or false")] = None
    for_s: Seconds = None
    clear_s: Seconds = None
    ratio: Share = None
    fraction: Share = None

    @classmethod
    def unknown(cls, fpath: tuple, known: tuple) -> Refused:
        return Refused(f"alerts.{fpath[-2]} has no setting {fpath[-1]!r}; it takes {', '.join(RULE_FIELDS)}")


RuleEntry = Annotated[bool | Rule, Says(lambda f, v: f"alerts.{f[-1]} must be true, false or a map of "
                                                     f"{', '.join(RULE_FIELDS)}")]
OnOff = Annotated[bool, Says(lambda f, v: f"alerts.{f[-1]} must be true or false")]
Webhook = Annotated[str, Meta(pattern=r"^https?://"), Says("alerts.webhook must be an http:// or https:// URL")]


class Alerts(msgspec.Struct, kw_only=True):
    bell: OnOff = None
    desktop: OnOff = None
    webhook: Webhook = None
    below_break_even: RuleEntry = None
    accept_collapse: RuleEntry = None
    server_down: RuleEntry = None
    gpu_memory: RuleEntry = None
    throughput_collapse: RuleEntry = None

    @classmethod
    def unknown(cls, fpath: tuple, known: tuple) -> Refused:
        names = [*DEFAULT_RULES, *OUTPUT_KEYS]
        close = difflib.get_close_matches(str(fpath[-1]), names, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"the rules and outputs are {', '.join(names)}"
        return Refused(f"unknown alert rule {fpath[-1]!r}; {hint}", key=True, suggestions=close)

    def config(self) -> AlertConfig:
        """The rules and outputs set here, over the defaults."""
        rules = dict(DEFAULT_RULES)
        for rule_id, default in DEFAULT_RULES.items():
            entry = getattr(self, rule_id)
            if isinstance(entry, bool):
                rules[rule_id] = replace(default, enabled=entry)
            elif entry is not None:
                rules[rule_id] = replace(default, **{f: getattr(entry, f) for f in entry.__struct_fields__
                                                     if getattr(entry, f) is not None})
        outputs = {k: getattr(self, k) for k in OUTPUT_KEYS if getattr(self, k) is not None}
        return AlertConfig(rules=rules, **outputs)


AlertsSection = Annotated[Alerts | None, Says("alerts must be a map of rule ids (and bell, desktop, webhook)")]


def read_alerts(data: Any) -> tuple[AlertConfig, list[Problem]]:
    """The ``alerts:`` section over the defaults, and its problems (a bad value keeps its default)."""
    got, problems = read(data, AlertsSection, ("alerts",))
    return (got.config() if isinstance(got, Alerts) else AlertConfig()), problems


# --- the whole file ---------------------------------------------------------------------------------------------
_said_hosts = "'hosts' takes a list of [user@]host[:port] or SSH config aliases, such as [gpu-a, gpu-b]"


class SettingsFile(_Section):
    theme: Word = None
    default_host: Destination = None
    hosts: Annotated[list[HostEntry], Meta(min_length=1), Says(_said_hosts)] = None
    telemetry_hz: _number(0.0, TELEMETRY_HZ_MAX, "GPU telemetry rate in Hz") = None
    ssh: Annotated[Ssh | None, Says(_map_of_options)] = None
    keymap: Annotated[dict[BindingId, Annotated[Any, Check(_keys)]] | None, Says(_map_of_options)] = None
    demo: Annotated[Demo | None, Says(_map_of_options)] = None
    alerts: AlertsSection = None
    probe: Annotated[Probe | None, Says(_map_of_options)] = None


def read_settings(data: dict) -> tuple[SettingsFile, list[Problem]]:
    """The settings that convert (the others keep their defaults) and every problem, in the file's order."""
    return read(data, SettingsFile)
