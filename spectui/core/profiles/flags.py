"""Checking a profile against the flags a host's SGLang really has.

``parse_help_flags`` reads the text of ``python -m sglang.launch_server --help`` (plain argparse
output) into a ``FlagSet``: every option string, whether it takes a value or several, and its
choices where the help shows them, either argparse's ``{A,B,C}`` or a prose list such as
"Builtins: EAGLE, EAGLE3, ..." (SGLang 0.5.23 documents ``--speculative-algorithm`` that way
because plugins may register more). ``check_against`` reports each profile argument that this
SGLang would reject, located at its line in the YAML, with the closest real flags or values.

Flag names are matched as SGLang's argparse matches them (``allow_abbrev``, the default of
``argparse.ArgumentParser()`` in sglang 0.5.23 wheel, sglang/srt/server_args.py:679): an exact
option string, else the one option it is a prefix of (``--tp`` for ``--tp-size``); a prefix of
several options is refused as ambiguous. ``notes_against`` reports what is accepted but worth a
word: abbreviations and flags whose help says they are deprecated. This text check is the
fallback; the host's own parser (``spectui.agent.servers.sglang_argparse``) is the authority.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from spectui.core.profiles.argv import SIM_FLAG_PREFIX, flag_words
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
#: Help text of a retired flag, as SGLang writes it: "Deprecated. Use ..." or "(Deprecated: use ...)"
#: (sglang 0.5.23 wheel, sglang/srt/server_args.py:414 and :441).
_DEPRECATED_HELP_RE = re.compile(r"^\W*deprecated\b", re.IGNORECASE)


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
    #: The help text of a flag SGLang marks as deprecated (None for a current flag).
    deprecated: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "deprecated": self.deprecated,
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
            deprecated=data.get("deprecated") or None,
        )


@dataclass(frozen=True)
class FlagMatch:
    """How an argv word matched: ``info`` and the full ``option`` it stands for, or several
    ``ambiguous`` options it is a prefix of, or nothing (an unknown flag)."""

    word: str
    info: FlagInfo | None
    option: str | None
    ambiguous: tuple[str, ...] = ()

    @property
    def abbreviated(self) -> bool:
        return self.option is not None and self.option != self.word.split("=", 1)[0]


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

    def resolve(self, word: str) -> FlagMatch:
        """What argparse makes of ``word`` (``--flag`` or ``--flag=value``) with these options."""
        if word in self.flags:
            return FlagMatch(word, self.flags[word], word)
        if "=" in word:
            head = word.split("=", 1)[0]
            if head in self.flags:
                return FlagMatch(word, self.flags[head], head)
        if word.startswith("--") and len(word) > 2:
            prefix = word.split("=", 1)[0]
            matches = [n for n in self.flags if n.startswith("--") and n.startswith(prefix)]
            if len(matches) == 1:
                return FlagMatch(word, self.flags[matches[0]], matches[0])
            if len(matches) > 1:
                return FlagMatch(word, None, None, tuple(matches))
        return FlagMatch(word, None, None)

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


def prose_choices(help_text: str) -> tuple[str, ...] | None:
    """The names a help text lists as "Builtins: A, B, C" (SGLang 0.5.23's open choice lists)."""
    m = _BUILTINS_RE.search(help_text or "")
    return tuple(c.strip() for c in m.group(1).split(",") if c.strip()) if m else None


def deprecation_in(help_text: str) -> str | None:
    """The help text itself when it marks the flag deprecated, else None."""
    text = " ".join((help_text or "").split())
    return text if _DEPRECATED_HELP_RE.match(text) else None


def _with_help(info: FlagInfo, help_text: str) -> FlagInfo:
    deprecated = deprecation_in(help_text)
    names = prose_choices(help_text) if info.choices is None and info.takes_value else None
    if names is None and deprecated is None:
        return info
    return FlagInfo(info.name, info.aliases, info.takes_value, info.optional_value, info.multiple,
                    names if names is not None else info.choices, choices_open=names is not None or info.choices_open,
                    deprecated=deprecated)


def _join_wrapped(lines: list[str]) -> str:
    """Help lines back into one text; argparse wraps after hyphens ("--cuda-graph-" / "backend")."""
    out = ""
    for line in lines:
        out += line if not out or re.search(r"[A-Za-z0-9]-$", out) else " " + line
    return out


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
        flagset.add(_with_help(info, _join_wrapped(help_lines)))

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


@dataclass(frozen=True)
class ProfileItem:
    """One flag of a profile's command line: the field it comes from and its argv words."""

    field: str
    flag: str
    value: Any
    words: tuple[str, ...]
    section: str  # "own" (model, host, port, metrics), "args" or "sim"

    def shown(self, option: str) -> str:
        """An option string as the profile would write it (``sim`` keys without ``sim-``)."""
        name = option[2:]
        if self.section == "sim" and name.startswith(SIM_FLAG_PREFIX):
            return name[len(SIM_FLAG_PREFIX):]
        return name


def profile_items(profile: Profile, *, simulated: bool = False) -> list[ProfileItem]:
    """The profile's server flags in ``build_argv`` order, each with the field it comes from."""
    own: list[tuple[str, str, Any]] = [("model", "--model-path", profile.model), ("host", "--host", profile.host),
                                       ("port", "--port", profile.port)]
    if profile.metrics:
        own.append(("metrics", "--enable-metrics", True))
    items = [ProfileItem(f, flag, v, tuple(flag_words(flag[2:], v)), "own") for f, flag, v in own]
    items += [ProfileItem(f"args.{name}", "--" + name, value, tuple(flag_words(name, value)), "args")
              for name, value in profile.args.items()]
    if simulated:
        items += [ProfileItem(f"sim.{name}", "--" + SIM_FLAG_PREFIX + name, value,
                              tuple(flag_words(SIM_FLAG_PREFIX + name, value)), "sim")
                  for name, value in profile.sim.items()]
    return [item for item in items if item.words]


def located_error(profile: Profile, field_name: str, message: str, suggestions: Iterable[str] = (),
                  *, at_key: bool = False) -> ProfileError:
    """A ``ProfileError`` at ``field_name``'s value (or its key) in the file that wrote it."""
    return _error(profile, field_name, message, suggestions, at_key=at_key)


def unknown_flag_error(profile: Profile, item: ProfileItem, close: Iterable[str], source: str) -> ProfileError:
    matches = [m for m in close if item.section != "sim" or m.startswith("--" + SIM_FLAG_PREFIX)]
    shown = [item.shown(m) for m in matches]
    return _error(profile, item.field, f"{source} no flag {item.flag}" + did_you_mean(shown), shown, at_key=True)


def ambiguous_flag_error(profile: Profile, item: ProfileItem, options: Iterable[str]) -> ProfileError:
    options = list(options)
    shown = [item.shown(m) for m in options]
    return _error(profile, item.field,
                  f"{item.flag} is ambiguous for this SGLang, which reads it as an abbreviation of "
                  f"{' or '.join(options)}; write the full flag", shown, at_key=True)


def open_choice_errors(profile: Profile, item: ProfileItem, option: str, help_text: str) -> list[ProfileError]:
    """A value outside the "Builtins: ..." list of a free-form flag's help (SGLang checks those
    names only when the server starts, so argparse alone lets a typo through)."""
    names = prose_choices(help_text)
    if not names or item.value is True:
        return []
    info = FlagInfo(option, takes_value=True, multiple=True, choices=names, choices_open=True)
    return _check_value(profile, item.field, item.flag, info, item.value)


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
    for item in profile_items(profile, simulated=simulated):
        match = flagset.resolve(item.flag)
        if match.ambiguous:
            errors.append(ambiguous_flag_error(profile, item, match.ambiguous))
            continue
        if match.info is None:
            if item.section == "own":
                errors.append(_error(profile, item.field, f"this SGLang has no {item.flag} flag, which spectui "
                                     f"needs for '{item.field}'"))
            else:
                errors.append(unknown_flag_error(profile, item, flagset.closest(item.flag),
                                                 "the server's --help lists"))
            continue
        if item.section != "own":
            errors.extend(_check_value(profile, item.field, item.flag, match.info, item.value))
    return sorted(errors, key=lambda e: (e.path or "", e.line or 0, e.column or 0))


def abbreviation_note(profile: Profile, item: ProfileItem, option: str) -> ProfileError:
    return _error(profile, item.field, f"{item.flag} is accepted as an abbreviation of {option}; write "
                  f"'{item.shown(option)}' so that a newer SGLang with more flags cannot find it ambiguous",
                  [item.shown(option)], at_key=True)


def deprecation_note(profile: Profile, item: ProfileItem, note: str) -> ProfileError:
    return _error(profile, item.field, f"{item.flag} is deprecated in this SGLang: {note.rstrip('.')}", at_key=True)


def notes_against(profile: Profile, flagset: FlagSet, *, simulated: bool = False) -> list[ProfileError]:
    """What this SGLang accepts but is worth changing: abbreviated and deprecated flags."""
    notes: list[ProfileError] = []
    for item in profile_items(profile, simulated=simulated):
        match = flagset.resolve(item.flag)
        if match.info is None:
            continue
        if match.abbreviated:
            notes.append(abbreviation_note(profile, item, match.option))
        if match.info.deprecated:
            notes.append(deprecation_note(profile, item, match.info.deprecated))
    return notes


# -- a whole command line, read as argparse reads it ----------------------------------------------

_NEGATIVE_NUMBER_RE = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _is_option_word(word: str) -> bool:
    return word.startswith("-") and word != "-" and not _NEGATIVE_NUMBER_RE.match(word)


def argv_verdict(argv: list[str], flagset: FlagSet) -> str | None:
    """What argparse would say about a server ``argv`` given only this ``--help`` text: None
    when it would accept it, else an argparse-style message. argparse reports an ambiguous
    abbreviation first (it resolves every option before reading values), then the first bad
    value, then every unrecognized word together; so does this."""
    ambiguous: list[str] = []
    bad_value: list[str] = []
    unknown: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if not _is_option_word(word):
            unknown.append(word)
            continue
        match = flagset.resolve(word)
        if match.ambiguous:
            ambiguous.append(f"ambiguous option: {word.split('=', 1)[0]} could match {', '.join(match.ambiguous)}")
            continue
        info = match.info
        if info is None:
            unknown.append(word)
            continue
        if "=" in word and match.option != word:
            values = [word.split("=", 1)[1]]
        else:
            values = []
            limit = (len(argv) if info.multiple else 1) if info.takes_value else 0
            while i < len(argv) and len(values) < limit and not _is_option_word(argv[i]):
                values.append(argv[i])
                i += 1
        label = "/".join([info.name, *info.aliases])
        if info.takes_value and not values and not info.optional_value:
            bad_value.append(f"argument {label}: expected {'at least ' if info.multiple else ''}one argument")
        elif not info.takes_value and values:
            bad_value.append(f"argument {label}: ignored explicit argument {values[0]!r}")
        elif info.choices is not None and not info.choices_open:
            for value in values:
                if value not in info.choices:
                    bad_value.append(f"argument {label}: invalid choice: {value!r}")
                    break
    if ambiguous:
        return ambiguous[0]
    if bad_value:
        return bad_value[0]
    if unknown:
        return "unrecognized arguments: " + " ".join(unknown)
    return None
