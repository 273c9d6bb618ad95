"""``PATH[:LINE]`` references, as typed on the command line or shown next to search hits."""

from __future__ import annotations

import re

_REF = re.compile(r"^(?P<path>.+?)(?::(?P<line>\d+))?(?::\d+)?$")


def parse_ref(ref: str) -> tuple[str, int | None]:
    """``"srt/x.py:42"`` -> ``("srt/x.py", 42)``; ``"srt/x.py"`` -> ``("srt/x.py", None)``.

    A trailing ``:COL`` (as ``grep`` and compilers print) is accepted and ignored.
    """
    m = _REF.match(ref.strip())
    if not m:
        return ref, None
    line = m.group("line")
    return m.group("path"), int(line) if line else None
