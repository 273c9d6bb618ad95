"""The ``key: value`` pairs of SGLang's batch lines: key names and value conversion."""

from __future__ import annotations

import functools
import re
from typing import Any, Dict, List, Optional, Tuple

_PAREN_UNIT = re.compile(r"\s*\([^)]*\)")
_NON_WORD = re.compile(r"[^0-9A-Za-z]+")
_SPECIAL_KEYS = {"#token": "num_token", "token": "num_token"}
_RESERVED = ("kind", "time")  # record fields a log key must not overwrite


@functools.lru_cache(maxsize=4096)  # a pure function of a few recurring keys
def normalize_key(key: str) -> str:
    """SGLang's log key -> record field name (``#running-req`` -> ``running_req``)."""
    k = key.strip()
    name = _SPECIAL_KEYS.get(k)
    if name is None:
        k = _PAREN_UNIT.sub("", k.lstrip("#"))
        name = _NON_WORD.sub("_", k).strip("_").lower() or "field"
        if name in _RESERVED:
            name += "_field"
    return name


def convert_value(text: str) -> Any:
    """One log value: number, boolean, percentage as a fraction, else the string."""
    v = text.strip()
    if v == "True":
        return True
    if v == "False":
        return False
    try:
        return int(v)
    except ValueError:
        pass
    try:
        return float(v)
    except ValueError:
        pass
    if v.endswith("%"):
        try:
            return float(v[:-1]) / 100.0
        except ValueError:
            pass
    return v


# A parser's value cache (value text -> converted value): most values of a busy log repeat
# (``0``, ``True``, ``0.12``) and a dict lookup is far cheaper than ``float()``. A plain
# dict, so that the learned shapes index it at full speed (a miss raises KeyError, which
# sends the line to the generic reader, which fills the cache). Bounded: cleared when full.
_MISSING = object()
MAX_CACHED_VALUES = 65536


def cached_value(values: Optional[Dict[str, Any]], text: str) -> Any:
    """``text`` converted, through the cache ``values`` (none: converted each time)."""
    if values is None:
        return convert_value(text)
    value = values.get(text, _MISSING)
    if value is _MISSING:
        value = convert_value(text)
        if len(values) >= MAX_CACHED_VALUES:
            values.clear()
        values[text] = value
    return value


# "k1: v1, k2: v2" -> ["", k1, v1, k2, v2]. Keys hold no ':' or ','.
_PAIR_SPLIT = re.compile(r"(?:^|, )([^:,]+): ")


def pairs(body: str) -> Tuple[List[str], List[str], str, bool]:
    """Split ``k: v, k: v[, ]`` into raw keys, raw values, leading text and whether the
    list ended in a comma."""
    stripped = body.rstrip()
    trailing_comma = stripped.endswith(",")
    if trailing_comma:
        stripped = stripped.rstrip(", ")
    parts = _PAIR_SPLIT.split(stripped)
    return parts[1::2], parts[2::2], parts[0].strip(), trailing_comma
