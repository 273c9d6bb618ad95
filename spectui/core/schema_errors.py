"""Declared validation: a file's schema, read into one located sentence per problem.

The settings file, its alert rules, profiles and benchmark presets declare their fields as
``msgspec.Struct`` classes. A field's type says what it takes (``int``, ``list[str]``, a nested
``Struct``, ``X | None``) and ``msgspec.Meta`` its bounds and patterns; the same ``Annotated`` type
carries what this module adds:

- :class:`Says`: the sentence for a value the type refuses (text, or a function of the field path
  and the value that returns the text or a :class:`Refused`);
- :class:`Check`: a function run on the converted value, returning it (possibly normalised) or
  raising :class:`Refused` with its own sentence.

A ``Struct`` may set ``partial = False`` (a ``ClassVar``: a refused field refuses it whole, where by
default its good fields are kept) and define ``unknown(fpath, known)`` and ``missing(fpath, name)``
class methods, which return the :class:`Refused` for a key it does not have (:func:`unknown_key` words
the usual one, with a "did you mean" from :func:`spectui.core.profiles.errors.did_you_mean`) and for a
required one left out. :func:`read` walks a value against such a type and returns what converted and every
:class:`Problem` (field path, sentence, at the key or the value); :func:`located` turns a problem
into a :class:`~spectui.core.profiles.errors.ProfileError` at ``FILE:LINE:COL`` through the
document's position map (:meth:`YamlDocument.where`).

Why msgspec rather than pydantic: it is one package with no dependencies of its own (pydantic brings
pydantic-core, annotated-types and typing-inspection), and it imports in a few milliseconds where
pydantic takes over a hundred; ``spectui profiles list`` validates every profile file, so the schema
library is on the start-up path of commands that must start fast (it is still imported only by the
modules that validate). Its strict conversion refuses ``true`` for a number and ``"8"`` for an int, as
these files' readers always have. It stops at the first error of one conversion, so :func:`read`
converts field by field and entry by entry: that reports every problem, and lets a bad value keep its
default while the rest of the file applies.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

from spectui.core.profiles.errors import ProfileError, close_matches, did_you_mean
from spectui.core.profiles.yamlsource import YamlDocument

FAILED: Any = object()  # what a refused value reads as: the field keeps its default


@dataclass(frozen=True)
class Problem:
    """One problem: where (a field path such as ``("ssh", "port")``), the sentence, at the key or the value."""

    fpath: tuple
    message: str
    key: bool = False
    suggestions: tuple[str, ...] = ()


class Refused(Exception):
    """A value (or key) refused, with the one sentence that says what to write; ``at`` goes below its path."""

    def __init__(self, message: str, *, at: tuple = (), key: bool = False, suggestions=(), more=()) -> None:
        super().__init__(message)
        self.message = message
        self.at = tuple(at)
        self.key = key
        self.suggestions = tuple(suggestions)
        self.more: tuple[Refused, ...] = tuple(more)  # further problems a check found in the same value

    def problem(self, fpath: tuple) -> Problem:
        return Problem(tuple(fpath) + self.at, self.message, self.key, self.suggestions)


@dataclass(frozen=True)
class Says:
    """The sentence for a value the annotated type refuses: text, or ``fn(fpath, value) -> str | Refused``."""

    text: str | Callable[[tuple, Any], str | Refused]

    def refusal(self, fpath: tuple, value: Any) -> Refused:
        said = self.text(fpath, value) if callable(self.text) else self.text
        return said if isinstance(said, Refused) else Refused(said)


@dataclass(frozen=True)
class Check:
    """``fn(fpath, value) -> value``, run once the value has its type; raises :class:`Refused` to refuse it."""

    fn: Callable[[tuple, Any], Any]


def unknown_key(fpath: tuple, known: typing.Iterable[str], said: str, listed: str) -> Refused:
    """``SAID`` (naming the key) with a "did you mean" when a known key is close, else ``; LISTED`` the known keys."""
    known = list(known)
    matches = close_matches(str(fpath[-1]), known)
    rest = did_you_mean(matches) if matches else f"; {listed} {', '.join(known)}"
    return Refused(said + rest, key=True, suggestions=matches)


def located(doc: YamlDocument | None, problem: Problem, *, path: str | None = None,
            cls: type[ProfileError] = ProfileError, **extra: Any) -> ProfileError:
    """``problem`` as a ``ProfileError`` (or ``cls``) at its ``FILE:LINE:COL`` in ``doc``."""
    line, column = doc.where(problem.fpath, key=problem.key) if doc is not None else (None, None)
    return cls(problem.message, path=path if path is not None else (doc.path if doc else None), line=line,
               column=column, field=".".join(str(p) for p in problem.fpath) or None,
               suggestions=problem.suggestions, **extra)


def read(value: Any, tp: Any, fpath: tuple = ()) -> tuple[Any, list[Problem]]:
    """``value`` converted to ``tp`` (``FAILED`` when refused as a whole) and every problem found in it."""
    reader = _Reader()
    return reader.value(value, tp, tuple(fpath)), reader.problems


def _split(tp: Any) -> tuple[Any, list]:
    """A type without its ``Annotated`` layer, and that layer's metadata."""
    if typing.get_origin(tp) is Annotated:
        base, *meta = typing.get_args(tp)
        return base, meta
    return tp, []


def _members(tp: Any) -> tuple:
    return typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,)


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)


def _branch(members: tuple, value: Any) -> Any:
    """The member of a union that reads ``value``: X of ``X | None``; a Struct or dict for a map, a list for a
    list; the one other member (with its own annotations) for anything else; None to convert against the whole
    union."""
    if len(members) == 2 and type(None) in members:
        return next(m for m in members if m is not type(None))
    return _container(members, value) or _scalar(members)


def _container(members: tuple, value: Any) -> Any:
    for m in members:
        base = _split(m)[0]
        if isinstance(value, dict) and (_is_struct(base) or typing.get_origin(base) is dict):
            return m
        if isinstance(value, list) and typing.get_origin(base) is list:
            return m
    return None


def _scalar(members: tuple) -> Any:
    scalars = [m for m in members if m is not type(None) and not _walked(_split(m)[0])]
    return scalars[0] if len(members) > 1 and len(scalars) == 1 and _split(scalars[0])[1] else None


def _walked(base: Any) -> bool:
    return _is_struct(base) or typing.get_origin(base) in (dict, list)


class _Reader:
    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def value(self, value: Any, tp: Any, fpath: tuple, said: Says | None = None) -> Any:
        """``value`` as ``tp``; ``said`` words a refusal where ``tp`` has no :class:`Says` of its own."""
        base, meta = _split(tp)
        said = next((m for m in meta if isinstance(m, Says)), said)
        start = len(self.problems)
        members = _members(base)
        if value is None and type(None) in members:
            return None
        branch = _branch(members, value)
        if branch is not None and branch is not _container(members, value):
            got = self.value(value, branch, fpath, said)  # the member to read it as, on its own
        else:
            got = self.shaped(value, base, meta, branch, fpath, said)
        if got is FAILED:
            return FAILED
        before = len(self.problems)
        try:
            for check in (m for m in meta if isinstance(m, Check)):
                got = check.fn(fpath, got)
        except Refused as refused:
            self.problems.extend(r.problem(fpath) for r in (refused, *refused.more))
            got = FAILED
        if isinstance(value, list) and len(self.problems) > before:
            self.in_entry_order(start, len(fpath))
        return got

    def in_entry_order(self, start: int, depth: int) -> None:
        """A list's problems in the order of its entries, what a check found about an entry beside the rest."""
        def entry(p: Problem) -> int:
            return p.fpath[depth] if len(p.fpath) > depth and isinstance(p.fpath[depth], int) else -1
        self.problems[start:] = sorted(self.problems[start:], key=entry)

    def shaped(self, value: Any, base: Any, meta: list, branch: Any, fpath: tuple, said: Says | None) -> Any:
        """``value`` converted to ``base`` under its bounds; a container is walked entry by entry."""
        limits = [m for m in meta if isinstance(m, msgspec.Meta)]
        shape = base if branch is None else type(value)
        try:
            got = msgspec.convert(value, Annotated[(shape, *limits)] if limits else shape, strict=True)
        except msgspec.ValidationError as exc:
            said = said or Says(f"'{'.'.join(map(str, fpath))}' is not valid: {exc}")
            self.problems.append(said.refusal(fpath, value).problem(fpath))
            return FAILED
        return got if branch is None else self.walk(value, branch, fpath)

    def walk(self, value: Any, tp: Any, fpath: tuple) -> Any:
        base, meta = _split(tp)
        if meta:  # a union member with its own annotations: converted (and checked) as itself
            return self.value(value, tp, fpath)
        if _is_struct(base):
            return self.struct(value, base, fpath)
        args = typing.get_args(base)
        if typing.get_origin(base) is dict:
            return self.mapping(value, *(args or (Any, Any)), fpath)
        item = args[0] if args else Any
        got = [self.value(v, item, fpath + (i,)) for i, v in enumerate(value)]
        return [v for v in got if v is not FAILED]

    def mapping(self, value: dict, key_type: Any, value_type: Any, fpath: tuple) -> dict:
        out = {}
        for k, v in value.items():
            before = len(self.problems)
            key = self.value(k, key_type, fpath + (k,))
            if key is FAILED:
                self.problems[before:] = [Problem(p.fpath, p.message, True, p.suggestions)
                                          for p in self.problems[before:]]
                continue
            got = self.value(v, value_type, fpath + (k,))
            if got is not FAILED:
                out[key] = got
        return out

    def struct(self, value: dict, tp: type, fpath: tuple) -> Any:
        fields = _fields(tp)
        good: dict[str, Any] = {}
        refused = False
        for key, item in value.items():
            f = fields.get(key) if isinstance(key, str) else None
            if f is None:
                self.problems.append(_keyed(tp, "unknown", fpath + (key,), tuple(fields)).problem(fpath + (key,)))
                continue
            got = self.value(item, f.type, fpath + (key,))
            if got is not FAILED:
                good[f.name] = got
            refused = refused or got is FAILED
        required = [f for f in fields.values() if f.required and f.encode_name not in value]
        for f in required:
            self.problems.append(_keyed(tp, "missing", fpath, f.encode_name).problem(fpath))
        whole = refused and not getattr(tp, "partial", True)
        if whole or any(f.required and f.name not in good for f in fields.values()):
            return FAILED
        return tp(**good)


@functools.cache
def _fields(tp: type) -> dict[str, Any]:
    """A Struct's fields by their name in the file (their annotations are evaluated once)."""
    return {f.encode_name: f for f in msgspec.structs.fields(tp)}


def _keyed(tp: type, hook: str, fpath: tuple, arg: Any) -> Refused:
    """The Struct's own sentence for an unknown or a missing key, or a plain one."""
    method = getattr(tp, hook, None)
    if method is not None:
        return method(fpath, arg)
    if hook == "unknown":
        return unknown_key(fpath, arg, f"unknown key '{fpath[-1]}'", "the known ones are")
    return Refused(f"'{arg}' is missing; add '{arg}: ...'")
