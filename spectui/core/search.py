"""One search language for the console's log screen and its source browser.

A query is a Python regular expression, or, with the mode key, plain text matched as typed. Case
follows the query (smart case): a query without an upper-case letter ignores case, one with an
upper-case letter matches it exactly. The source browser sends :attr:`Query.regex` and
:attr:`Query.ignore_case` to the host's agent (which runs the same ``re``); the log screen and the
dashboard's log tail compile the query here. A pattern that does not compile raises
:class:`SearchError` with one sentence saying why; the caller keeps what it showed before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from spectui.core.errors import SpectuiError

REGEX = "regex"
TEXT = "text"
_ESCAPE = re.compile(r"\\.")


class SearchError(SpectuiError):
    """A query that is not a regular expression; the message is one sentence."""


@dataclass(frozen=True)
class Query:
    """What was typed and how it is read: a regular expression, or plain text (``literal``)."""

    text: str
    literal: bool = False

    @property
    def mode(self) -> str:
        return TEXT if self.literal else REGEX

    @property
    def regex(self) -> str:
        """The query as a regular expression: plain text escaped, a regex as typed."""
        return re.escape(self.text) if self.literal else self.text

    @property
    def ignore_case(self) -> bool:
        """Smart case: no upper-case letter (an escape such as ``\\S`` aside) ignores case."""
        letters = self.text if self.literal else _ESCAPE.sub("", self.text)
        return not any(c.isupper() for c in letters)

    def compile(self) -> re.Pattern:
        """The compiled query; :class:`SearchError` when it is not a regular expression."""
        return _compile(self.regex, self.ignore_case, self.text)

    def label(self) -> str:
        """How a status line names the search: ``/accept len: [2-9]/ (regex)``."""
        return f"/{self.text}/ ({self.mode})"


@lru_cache(maxsize=64)
def _compile(regex: str, ignore_case: bool, typed: str) -> re.Pattern:
    try:
        return re.compile(regex, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise SearchError(bad_regex(typed, exc)) from None


def bad_regex(typed: str, exc: re.error) -> str:
    where = f" at position {exc.pos + 1}" if exc.pos is not None else ""
    return (f"{typed!r} is not a regular expression ({exc.msg}{where}); fix it, or switch to plain text "
            "to search for it as typed.")


def spans(pattern: re.Pattern | None, line: str) -> list[tuple[int, int]]:
    """Where ``pattern`` matches ``line``: (start, end) pairs, empty matches left out."""
    if pattern is None:
        return []
    return [m.span() for m in pattern.finditer(line) if m.end() > m.start()]


def found(pattern: re.Pattern | None, line: str) -> bool:
    """Whether ``line`` has a match (no pattern: every line)."""
    return pattern is None or pattern.search(line) is not None
