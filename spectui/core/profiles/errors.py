"""``ProfileError``: the one exception (and issue record) for everything a profile can get wrong.

Every message is one sentence that names where the problem is (``FILE:LINE:COL``), which field,
and what to do about it. Messages never contain ``env`` values: callers pass field names and
value *types*, not secret values. A key, a node or a file name quoted in the text shows its control
characters (:func:`spectui.core.textsafe.visible`): someone else's file cannot drive the terminal, the
console or the log that shows the error; ``path`` and ``field`` keep the names as they are.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

from spectui.core.textsafe import visible


class ProfileError(Exception):
    """A problem with a profile, located in its YAML file.

    ``path``, ``line`` and ``column`` point at the offending YAML node (``line`` and ``column``
    are 1-based; either may be ``None`` when the problem has no single place, e.g. a missing
    file). ``field`` is the dotted field name (``args.speculative-algorithm``), ``profile`` the
    profile's name when known, and ``suggestions`` the close matches offered in the message.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        column: int | None = None,
        field: str | None = None,
        profile: str | None = None,
        suggestions: Iterable[str] = (),
    ) -> None:
        self.message = visible(message.rstrip())
        self.path = str(path) if path is not None else None
        self.line = line
        self.column = column
        self.field = field
        self.profile = profile
        self.suggestions = list(suggestions)
        super().__init__(str(self))

    @property
    def location(self) -> str:
        """``FILE:LINE:COL`` (or as much of it as is known); empty when nothing is known."""
        if self.path is None:
            return ""
        parts = [visible(self.path)]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)

    def __str__(self) -> str:
        loc = self.location
        return f"{loc}: {self.message}" if loc else self.message

    def __repr__(self) -> str:
        return f"ProfileError({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ProfileError) and str(other) == str(self)

    def __hash__(self) -> int:
        return hash(str(self))

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "field": self.field,
            "profile": self.profile,
            "message": self.message,
            "suggestions": list(self.suggestions),
            "text": str(self),
        }


def close_matches(word: str, candidates: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """The candidates closest to ``word`` (difflib), best first."""
    return difflib.get_close_matches(word, list(candidates), n=n, cutoff=cutoff)


def did_you_mean(matches: list[str], quote: str = "'") -> str:
    """`` (did you mean 'x'?)``-style suffix, or ``""`` when there is nothing to suggest."""
    if not matches:
        return ""
    if len(matches) == 1:
        return f"; did you mean {quote}{matches[0]}{quote}?"
    listed = ", ".join(f"{quote}{m}{quote}" for m in matches[:-1])
    return f"; did you mean {listed} or {quote}{matches[-1]}{quote}?"
