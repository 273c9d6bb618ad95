"""Checking a profile against the flags a host's SGLang really has.

``parse_help_flags`` reads the text of ``python -m sglang.launch_server --help`` (plain argparse
output) into a ``FlagSet``: every option string, whether it takes a value or several, and its
choices where the help shows them, either argparse's ``{A,B,C}`` or a prose list such as
"Builtins: EAGLE, EAGLE3, ..." (SGLang 0.5.23 documents ``--speculative-algorithm`` that way
because plugins may register more). ``check_against`` reports each profile argument that this
SGLang would reject, located at its line in the YAML, with the closest real flags or values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from spectui.core.profiles.argv import SIM_FLAG_PREFIX
from spectui.core.profiles.errors import ProfileError, close_matches, did_you_mean
from spectui.core.profiles.model import Profile

_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: An option line of argparse's help: two-space indent then the invocation.
_ENTRY_RE = re.compile(r"^ {1,8}(-{1,2}[A-Za-z0-9?][^\s,]*(?:[ ,].*)?)$")
_PART_SPLIT_RE = re.compile(r",\s+(?=-)")
_FLAG_TOKEN_RE = re.compile(r"^-{1,2}[A-Za-z0-9?][A-Za-z0-9_.?-]*$")
_CHOICES_RE = re.compile(r"^\[?\{([^{}]*)\}")
_USAGE_OPT_RE = re.compile(
    r"\[(?P<flag>--[A-Za-z0-9][A-Za-z0-9_.-]*)(?: (?P<rest>[^\[\]]+?))?(?: (?P<more>\[[^\[\]]*\]))?\]"
)
_BUILTINS_RE = re.compile(r"\bBuiltins?:\s*([A-Za-z0-9_]+(?:\s*,\s*[A-Za-z0-9_]+)*)")


@dataclass(frozen=True)
class FlagInfo:
    """One option of the host's SGLang, as its ``--help`` describes it."""

    name: str
    aliases: tuple[str, ...] = ()
    takes_value: bool = False
    optional_value: bool = False
    multiple: bool = False
    choices: tuple[str, ...] | None = None
    #: True when ``choices`` come from prose ("Builtins: ...") and SGLang may accept other
    #: registered names; such values are compared without regard to case, as SGLang does.
    choices_open: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "aliases": list(self.aliases),
            "takes_value": self.takes_value,
            "optional_value": self.optional_value,
            "multiple": self.multiple,
            "choices": list(self.choices) if self.choices is not None else None,
            "choices_open": self.choices_open,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FlagInfo:
        choices = data.get("choices")
        return cls(
            name=data["name"],
            aliases=tuple(data.get("aliases") or ()),
            takes_value=bool(data.get("takes_value")),
            optional_value=bool(data.get("optional_value")),
            multiple=bool(data.get("multiple")),
            choices=tuple(choices) if choices is not None else None,
            choices_open=bool(data.get("choices_open")),
        )


@dataclass
class FlagSet:
    """The options a server accepts, by every option string (``--tp-size``, ``--tensor-parallel-size``)."""

    flags: dict[str, FlagInfo] = field(default_factory=dict)

    def add(self, info: FlagInfo) -> None:
        for name in (info.name, *info.aliases):
            self.flags.setdefault(name, info)

    def __contains__(self, flag: object) -> bool:
        return flag in self.flags

    def __len__(self) -> int:
        return len(self.flags)

    def __bool__(self) -> bool:
        return bool(self.flags)

    def get(self, flag: str) -> FlagInfo | None:
        return self.flags.get(flag)

    def names(self) -> list[str]:
        """Every long option string, sorted."""
        return sorted(n for n in self.flags if n.startswith("--"))

    def choices(self, flag: str) -> tuple[str, ...] | None:
        info = self.flags.get(flag)
        return info.choices if info else None

    def closest(self, flag: str, n: int = 3) -> list[str]:
        """The real option strings closest to ``flag``."""
        return close_matches(flag, self.names(), n=n)

    def to_json(self) -> dict[str, Any]:
        seen: dict[str, FlagInfo] = {}
        for info in self.flags.values():
            seen.setdefault(info.name, info)
        return {"flags": [seen[n].to_json() for n in sorted(seen)]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FlagSet:
        out = cls()
        for item in data.get("flags", []):
            out.add(FlagInfo.from_json(item))
        return out


def _parse_invocation(invocation: str) -> FlagInfo | None:
    parts = _PART_SPLIT_RE.split(invocation.strip())
    names: list[str] = []
    takes_value = optional = multiple = False
    choices: tuple[str, ...] | None = None
    for part in parts:
        flag, _, rest = part.strip().partition(" ")
        if not _FLAG_TOKEN_RE.match(flag):
            return None
        names.append(flag)
        rest = rest.strip()
        if rest:
            takes_value = True
            optional = optional or rest.startswith("[")
            multiple = multiple or "..." in rest
            m = _CHOICES_RE.match(rest)
            if m and choices is None:
                choices = tuple(c.strip() for c in m.group(1).split(",") if c.strip())
    if not names:
        return None
    long_names = [n for n in names if n.startswith("--")] or names
    primary = long_names[0]
    return FlagInfo(
        name=primary,
        aliases=tuple(n for n in names if n != primary),
        takes_value=takes_value,
        optional_value=optional,
        multiple=multiple,
        choices=choices,
    )


def _with_prose_choices(info: FlagInfo, help_text: str) -> FlagInfo:
    if info.choices is not None or not info.takes_value:
        return info
    m = _BUILTINS_RE.search(help_text)
    if not m:
        return info
    names = tuple(c.strip() for c in m.group(1).split(",") if c.strip())
    return FlagInfo(info.name, info.aliases, info.takes_value, info.optional_value, info.multiple,
                    names, choices_open=True)


def parse_help_flags(help_text: str) -> FlagSet:
    """The ``FlagSet`` described by argparse ``--help`` output (options section, then usage)."""
    lines = _ANSI_RE.sub("", help_text).replace("\t", "    ").splitlines()
    flagset = FlagSet()

    # Options section: an entry line, then its help lines (indented deeper) until the next entry.
    entries: list[tuple[FlagInfo, list[str]]] = []
    current: list[str] | None = None
    in_usage = False
    for line in lines:
        if line.lower().startswith("usage:"):
            in_usage = True
            continue
        if in_usage:
            in_usage = bool(line.strip())
            continue
        m = _ENTRY_RE.match(line)
        if m:
            invocation, *help_part = re.split(r"\s{2,}", m.group(1), maxsplit=1)
            info = _parse_invocation(invocation)
            if info is not None:
                current = list(help_part)
                entries.append((info, current))
                continue
        if line.strip() and not line.startswith(" "):
            current = None  # a section header such as "options:"
        elif current is not None and line.strip():
            current.append(line.strip())
    for info, help_lines in entries:
        flagset.add(_with_prose_choices(info, " ".join(help_lines)))

    # Usage section: options that the options section did not list.
    for m in _USAGE_OPT_RE.finditer(_usage_block(lines)):
        flag, rest, more = m.group("flag"), (m.group("rest") or "").strip(), m.group("more")
        if rest.startswith("|"):
            for name in (flag, *re.findall(r"--[A-Za-z0-9][A-Za-z0-9_.-]*", rest)):
                if name not in flagset:
                    flagset.add(FlagInfo(name))
            continue
        if flag in flagset:
            continue
        if more and not rest:
            flagset.add(FlagInfo(flag, takes_value=True, optional_value=True, multiple="..." in more))
            continue
        info = _parse_invocation(f"{flag} {rest}{' ...' if more and '...' in more else ''}".strip())
        if info is not None:
            flagset.add(info)
    return flagset


def _usage_block(lines: list[str]) -> str:
    out: list[str] = []
    for line in lines:
        if not out:
            if line.lower().startswith("usage:"):
                out.append(line[6:])
            continue
        if not line.strip():
            break
        out.append(line.strip())
    return " ".join(out)


# -- checking a profile ------------------------------------------------------------------------


def _error(profile: Profile, field_name: str, message: str, suggestions: Iterable[str] = (),
           *, at_key: bool = False) -> ProfileError:
    where = profile.location_of(field_name)
    line = column = None
    if where is not None:
        line, column = where.line, where.column
        if at_key and where.key_line is not None:
            line, column = where.key_line, where.key_column
    return ProfileError(
        message,
        path=where.path if where else profile.source,
        line=line,
        column=column,
        field=field_name,
        profile=profile.name,
        suggestions=suggestions,
    )


def _check_value(profile: Profile, field_name: str, flag: str, info: FlagInfo, value: Any) -> list[ProfileError]:
    errors: list[ProfileError] = []
    key = flag[2:]
    if not info.takes_value:
        if value is not True:
            errors.append(_error(profile, field_name,
                                 f"{flag} is a switch and takes no value here; write '{key}: true' "
                                 "(or false to leave it out)", [f"{key}: true"]))
        return errors
    if value is True:
        if not info.optional_value:
            errors.append(_error(profile, field_name, f"{flag} needs a value, but the profile gives only 'true'"))
        return errors
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if isinstance(value, (list, tuple)) and not info.multiple:
        errors.append(_error(profile, field_name, f"{flag} takes one value here, not a list of {len(values)}"))
        return errors
    if info.choices is None:
        return errors
    for item in values:
        text = "true" if item is True else "false" if item is False else str(item)
        if info.choices_open:
            known = {c.upper() for c in info.choices}
            if text.upper() in known:
                continue
            matches = close_matches(text.upper(), info.choices)
            errors.append(_error(
                profile, field_name,
                f"'{text}' is not a {flag} value this SGLang knows (its --help lists "
                f"{', '.join(info.choices)})"
                + did_you_mean(matches), matches))
        elif text not in info.choices:
            matches = [c for c in info.choices if c.lower() == text.lower()] \
                or close_matches(text, info.choices) or close_matches(text.upper(), info.choices)
            errors.append(_error(
                profile, field_name,
                f"'{text}' is not a valid {flag} for this SGLang (choose from {', '.join(info.choices)})"
                + did_you_mean(matches), matches))
    return errors


def check_against(profile: Profile, flagset: FlagSet, *, simulated: bool = False) -> list[ProfileError]:
    """Every argument of ``profile`` that the server described by ``flagset`` would reject.

    Each ``ProfileError`` is located where the argument was written (possibly in a parent
    profile's file) and suggests the closest real flags or values. With ``simulated``, the
    ``sim`` knobs are checked too, as ``--sim-*`` flags.
    """
    if not flagset:
        return [_error(profile, "args", "the server's --help listed no flags, so the profile cannot be "
                       "checked; is that SGLang's launch_server?")]
    errors: list[ProfileError] = []
    own = [("model", "--model-path", profile.model), ("host", "--host", profile.host),
           ("port", "--port", profile.port)]
    if profile.metrics:
        own.append(("metrics", "--enable-metrics", True))
    for field_name, flag, _value in own:
        if flag not in flagset:
            errors.append(_error(profile, field_name, f"this SGLang has no {flag} flag, which spectui needs "
                                 f"for '{field_name}'"))

    items = [("args", name, value) for name, value in profile.args.items()]
    if simulated:
        items += [("sim", SIM_FLAG_PREFIX + name, value) for name, value in profile.sim.items()]
    for section, name, value in items:
        flag = "--" + name
        field_name = f"{section}.{name[len(SIM_FLAG_PREFIX):] if section == 'sim' else name}"
        info = flagset.get(flag)
        if info is None:
            matches = flagset.closest(flag)
            if section == "sim":
                matches = [m for m in matches if m.startswith("--" + SIM_FLAG_PREFIX)]
                shown = [m[2 + len(SIM_FLAG_PREFIX):] for m in matches]
            else:
                shown = [m[2:] for m in matches]
            errors.append(_error(profile, field_name, f"the server's --help lists no flag {flag}"
                                 + did_you_mean(shown), shown, at_key=True))
            continue
        errors.extend(_check_value(profile, field_name, flag, info, value))
    return sorted(errors, key=lambda e: (e.path or "", e.line or 0, e.column or 0))
