"""SGLang's line prefix: timestamp, rank tokens, a Ray actor's lead, and the loose
prefixes of other releases and logging formats (see the package docstring)."""

from __future__ import annotations

import functools
import re
from typing import Any, List, Optional, Tuple

Ranks = Tuple[Tuple[str, Any], ...]
Prefix = Tuple[Optional[str], Ranks, str]

_RANK_TOKEN = re.compile(r"([A-Za-z][A-Za-z_]*?)(-?\d+)$")  # "DP-1": a negative rank
_RAY_PREFIX = re.compile(r"\((?P<actor>[\w.-]+) pid=(?P<pid>\d+)(?:,\s*ip=(?P<ip>[\w.:-]+))?\)\s*")


@functools.lru_cache(maxsize=4096)  # a pure function of a few recurring texts
def rank_items(text: str) -> Ranks:
    """Rank text (what follows the timestamp inside the brackets) -> record items."""
    found: List[Tuple[str, Any]] = []
    others: List[str] = []
    for token in text.split():
        m = _RANK_TOKEN.match(token)
        if m:
            found.append((m.group(1).lower() + "_rank", int(m.group(2))))
        else:
            others.append(token)  # e.g. " encode_server", " encode_dp_worker[3]"
    if others:
        found.append(("process", " ".join(others)))
    return tuple(found)


def split_prefix(line: str) -> Optional[Prefix]:
    """``(time, rank items, message)`` for a line with SGLang's prefix, else ``None``."""
    if line[:1] != "[":
        if line[:1] == "(":
            m = _RAY_PREFIX.match(line)
            if m:
                inner = split_prefix(line[m.end():])
                if inner is not None:
                    extra = (("pid", int(m.group("pid"))),)
                    return inner[0], inner[1] + extra, inner[2]
        return None
    # "[YYYY-MM-DD HH:MM:SS" is fixed width: check its punctuation, then find "] ".
    if (
        len(line) < 21
        or line[5] != "-"
        or line[8] != "-"
        or line[11] != " "
        or line[14] != ":"
        or line[17] != ":"
        or not line[1:5].isdigit()
    ):
        return _split_short_prefix(line)
    end = line.find("] ", 20)
    if end < 0:
        end = len(line) - 1
        if end < 20 or line[end] != "]":
            return None
    extra = line[20:end]
    msg = line[end + 2:] if line[end + 1:end + 2] == " " else line[end + 1:]
    if not extra:
        return line[1:20], (), msg
    if extra[0] == ".":
        if not extra[1:4].isdigit():
            return None
        time = line[1:24]
        extra = extra[4:]
        if not extra:
            return time, (), msg
    else:
        time = line[1:20]
    if extra[0] != " ":
        return None
    return time, rank_items(extra), msg


# The prefix of releases that logged the time of day only (``datefmt="%H:%M:%S"``: sglang
# 0.2.14 to 0.3.x, srt/utils.py ``configure_logger``), with SGLang's rank tokens or
# without, and the ranks alone (a prefix whose time was cut away).
_RANK_NAME = r"[A-Z][A-Z_]*-?\d+"
_SHORT_PREFIX = re.compile(
    r"\[(?:(\d\d:\d\d:\d\d(?:\.\d\d\d)?)((?: %s)*)|(%s(?: %s)*))\](?: |$)" % (_RANK_NAME, _RANK_NAME, _RANK_NAME),
    re.ASCII,
)


def _split_short_prefix(line: str) -> Optional[Prefix]:
    m = _SHORT_PREFIX.match(line)
    if m is None:
        return None
    ranks = m.group(2) or m.group(3)
    return m.group(1), rank_items(ranks) if ranks else (), line[m.end():]


# Lines without SGLang's prefix are read only when they hold a message of interest: the
# releases that logged the bare message (``format="%(message)s"``: sglang 0.2.0 to 0.2.13,
# the batch line led by ``[gpu_id=N]`` or ``[gpu=N]``), a line pasted without its prefix,
# a line under the user's own Python logging format (``SGLANG_LOGGING_CONFIG_PATH``, or a
# program embedding SGLang: ``2025-01-02 10:00:00,123 INFO 12345 scheduler.py:900: ``,
# ``INFO:sglang.srt.managers.scheduler:``), or SGLang's line behind another program's
# prefix (``sglang-1  | [2025-... TP0] ``, a tqdm bar left on the same line).
_LOOSE_ANCHOR = re.compile(
    r"(?:\[gpu(?:_id)?=\d+\] )?(?:Decode batch[ .,]|Prefill batch[ .,(]|Load weight (?:begin|end)\.|The server is fired up)"
)
_TAIL_BRACKET = re.compile(
    r"\[(?:((?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d(?:\.\d\d\d)?)((?: %s)*)|(%s(?: %s)*))\] ?$" % (_RANK_NAME, _RANK_NAME, _RANK_NAME),
    re.ASCII,
)
_CUSTOM_TIME = re.compile(r"(?:(\d{4}-\d\d-\d\d)[ T])?(\d\d:\d\d:\d\d)(?:[.,](\d{3}))?(?!\d)", re.ASCII)
_LEVEL_NAME = re.compile(r"\b(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b")
_MAX_HEAD = 200


def split_loose(line: str) -> Optional[Prefix]:
    """``(time, rank items, message)`` for a line without SGLang's prefix whose message is
    one of interest (see above), else ``None``. The time is ``YYYY-MM-DD HH:MM:SS[.mmm]``
    or ``HH:MM:SS[.mmm]`` (a comma before the milliseconds written as a dot), or ``None``."""
    m = _LOOSE_ANCHOR.search(line)
    if m is None:
        return None
    at = m.start()
    if at == 0:
        return None, (), line
    head = line[:at]
    if at > _MAX_HEAD or head[-1] not in " :|" or "'" in head or '"' in head:
        return None  # the anchor inside some other text (a request, a quoted message)
    b = _TAIL_BRACKET.search(head)
    if b is not None:
        ranks = b.group(2) or b.group(3)
        return b.group(1), rank_items(ranks) if ranks else (), line[at:]
    t = _CUSTOM_TIME.search(head)
    if t is None:
        if _LEVEL_NAME.search(head) is None:
            return None  # neither a time nor a level: not a logging prefix
        return None, (), line[at:]
    time = t.group(2)
    if t.group(1):
        time = t.group(1) + " " + time
    if t.group(3):
        time += "." + t.group(3)
    return time, (), line[at:]



def line_time(line: str) -> Optional[str]:
    """The timestamp of a line with SGLang's prefix (any message), else ``None``."""
    prefix = split_prefix(line.rstrip("\r\n"))
    return prefix[0] if prefix is not None else None
