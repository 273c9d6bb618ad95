"""Checking profiles against the SGLang a host really has, by SGLang's own argument parser.

The host's interpreter parses each profile's command line with ``ServerArgs.add_cli_args``
(agent method ``launch.parse``), so abbreviations, ambiguous prefixes and values outside a
flag's choices get the server's own verdict. Where that parser cannot be imported, the check
falls back to the launcher's ``--help`` text (``parse_help_flags``) and says so. Verdicts and
flag sets are cached per host and SGLang version.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from spectui.agent.protocol import Method
from spectui.core.profiles import FlagCache, FlagSet, Profile, ProfileError, check_against, parse_help_flags
from spectui.core.profiles.argv import SIM_LAUNCHER
from spectui.core.profiles.errors import close_matches, did_you_mean
from spectui.core.profiles.flagcache import simulator_flags_key
from spectui.core.profiles.flags import (
    ProfileItem,
    abbreviation_note,
    ambiguous_flag_error,
    deprecation_note,
    located_error,
    notes_against,
    open_choice_errors,
    profile_items,
    unknown_flag_error,
)
from spectui.core.session import Session

#: How the simulated host's launcher reads its flags (it picks them by ``--sim-log-format``).
SIM_PARSER = {"kind": "parse_function", "target": "spectui.sim.server.cli:parse_args"}
#: How SGLang's launcher builds its parser (sglang 0.5.23 wheel, sglang/srt/server_args.py:679).
SGLANG_PARSER = {"kind": "add_cli_args", "target": "sglang.srt.server_args:ServerArgs.add_cli_args"}
_AMBIGUOUS_RE = re.compile(r"could match (.+)$")


@dataclass
class FlagCheck:
    """One profile's verdict: ``errors`` would stop the server, ``notes`` are worth a look."""

    profile: Profile
    errors: list[ProfileError]
    notes: list[ProfileError]
    #: "parser" (the host's own argparse) or "help" (its --help text, when the parser failed to import)
    method: str
    version: str
    python: str | None = None
    #: Why the --help text was used instead of the parser.
    fallback_reason: str | None = None
    #: Field -> the full option it resolved to and the value the parser read.
    resolved: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def basis(self) -> str:
        if self.method == "help":
            return f"checked against --help text: {self.fallback_reason}"
        return f"checked by the host's own SGLang parser ({self.version})"

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.profile.name, "method": self.method, "basis": self.basis, "version": self.version,
                "python": self.python, "errors": [e.to_dict() for e in self.errors],
                "notes": [n.to_dict() for n in self.notes], "resolved": self.resolved}


def _group_key(session: Session, profile: Profile, python: str | None) -> tuple[str, tuple[str, ...]]:
    if session.target.simulated:
        return python or session.hello.get("python") or "python3", SIM_LAUNCHER
    return python or session.target.server_python(profile.python) or "python3", tuple(profile.launcher)


async def _version_key(session: Session, python: str, launcher: tuple[str, ...]) -> str:
    if session.target.simulated:
        return simulator_flags_key(python)
    info = await session.client.call(Method.PYTHON_SGLANG, {"python": python}, timeout=60)
    return f"sglang-{info.get('version') or 'unknown'}@{python}:{' '.join(launcher)}"


def verdict_errors(profile: Profile, items: list[ProfileItem], verdict: dict) -> tuple[list, list, dict]:
    """Errors, notes and resolved flags from the host parser's verdict on ``items``."""
    errors: list[ProfileError] = []
    notes: list[ProfileError] = []
    resolved: dict[str, dict[str, Any]] = {}
    for item, answer in zip(items, verdict.get("items") or []):
        message, option = answer.get("error"), answer.get("option")
        if message:
            errors.append(_item_error(profile, item, answer, message))
            continue
        if option is None:
            continue
        resolved[item.field] = {"option": answer.get("flag") or option, "value": answer.get("value")}
        if answer.get("choices") is None and answer.get("help"):
            errors.extend(open_choice_errors(profile, item, option, answer["help"]))
        if option != item.words[0].split("=", 1)[0]:
            notes.append(abbreviation_note(profile, item, option))
        if answer.get("deprecated"):
            notes.append(deprecation_note(profile, item, answer["deprecated"]))
    if not errors and verdict.get("error"):
        where = "args" if profile.args else "model"
        errors.append(located_error(profile, where, f"this SGLang's parser refuses the command line: "
                                    f"{verdict['error']}"))
    key = lambda e: (e.path or "", e.line or 0, e.column or 0)  # noqa: E731
    return sorted(errors, key=key), sorted(notes, key=key), resolved


def _item_error(profile: Profile, item: ProfileItem, answer: dict, message: str) -> ProfileError:
    if answer.get("option") is None:
        m = _AMBIGUOUS_RE.search(message)
        if message.startswith("ambiguous option") and m:
            return ambiguous_flag_error(profile, item, [o.strip() for o in m.group(1).split(",")])
        return unknown_flag_error(profile, item, answer.get("close") or [], "this SGLang's parser knows")
    choices = answer.get("choices") or []
    values = item.value if isinstance(item.value, (list, tuple)) else [item.value]
    matches: list[str] = []
    for value in values:
        text = str(value)
        if choices and text not in choices:
            matches += [c for c in choices if c.lower() == text.lower()] or close_matches(text, choices)
    return located_error(profile, item.field, f"this SGLang refuses {shlex.join(item.words)}: {message}"
                         + did_you_mean(matches), matches)


async def check_profiles_on_host(session: Session, profiles: list[Profile], *, python: str | None = None,
                                 cache: FlagCache | None = None) -> list[FlagCheck]:
    """Each profile checked by the parser of the interpreter that would launch it (``python``
    overrides the profile's own), in one host call per interpreter."""
    cache = cache or FlagCache()
    host = session.transport.destination
    simulated = session.target.simulated
    groups: dict[tuple[str, tuple[str, ...]], list[Profile]] = {}
    for profile in profiles:
        groups.setdefault(_group_key(session, profile, python), []).append(profile)
    out: dict[int, FlagCheck] = {}
    for (interpreter, launcher), members in groups.items():
        version = await _version_key(session, interpreter, launcher)
        items = {id(p): profile_items(p, simulated=simulated) for p in members}
        words = {id(p): [list(i.words) for i in items[id(p)]] for p in members}
        verdicts = {id(p): cache.get_verdict(host, version, words[id(p)]) for p in members}
        todo = [p for p in members if verdicts[id(p)] is None]
        help_flags: FlagSet | None = None
        reason = None
        if todo:
            cached_flags = cache.get(host, version)
            res = await session.client.call(Method.LAUNCH_PARSE, {
                "python": interpreter, "launcher": list(launcher), "parser": SIM_PARSER if simulated else SGLANG_PARSER,
                "commands": [{"items": words[id(p)]} for p in todo], "help_text": cached_flags is None,
            }, timeout=300)
            if res.get("mode") == "parser":
                for p, verdict in zip(todo, res.get("commands") or []):
                    verdicts[id(p)] = verdict
                    cache.put_verdict(host, version, words[id(p)], verdict)
            else:
                reason = res.get("reason") or "the host's SGLang parser could not be imported"
                help_flags = cached_flags if cached_flags is not None else parse_help_flags(res.get("text") or "")
                if cached_flags is None and help_flags:
                    cache.put(host, version, help_flags)
        for p in members:
            verdict = verdicts[id(p)]
            if verdict is not None:
                errors, notes, resolved = verdict_errors(p, items[id(p)], verdict)
                out[id(p)] = FlagCheck(p, errors, notes, "parser", version, interpreter, resolved=resolved)
            else:
                flagset = help_flags or FlagSet()
                out[id(p)] = FlagCheck(p, check_against(p, flagset, simulated=simulated),
                                       notes_against(p, flagset, simulated=simulated), "help", version,
                                       interpreter, fallback_reason=reason)
    return [out[id(p)] for p in profiles]


async def check_on_host(session: Session, profile: Profile, cache: FlagCache | None = None, *,
                        python: str | None = None) -> list[ProfileError]:
    """What would stop ``profile``'s server from starting on this host (the pre-launch check)."""
    [result] = await check_profiles_on_host(session, [profile], python=python, cache=cache)
    return result.errors
