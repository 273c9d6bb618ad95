"""Parse SGLang server log lines into records (plain dicts).

Runs on the GPU host under the host's Python (3.8+): standard library only, and only
relative imports from the rest of the agent.

A line SGLang's logger wrote starts with ``[%Y-%m-%d %H:%M:%S] `` -- optionally with
``.mmm`` milliseconds (``SGLANG_LOG_MS``) and rank tokens before the closing bracket
(``[2026-11-30 10:00:00.123 DP1 TP8] ``; SGLang 0.5.23 writes, in this order, ``DPn``,
``PPn``, ``ATTN_CPn``, ``MOE_DPn``, ``TPn``, ``EPn``; each ``NAMEn`` token becomes
``name_rank``, e.g. ``attn_cp_rank``). Under Ray the line may be led by
``(SchedulerActor pid=N, ip=A.B.C.D) ``. tqdm progress bars (weight loading) are written
without that prefix, often as ``\\r``-separated updates on one physical line.

Records are dicts with ``kind`` and ``time`` (the timestamp text as written in the log,
``YYYY-MM-DD HH:MM:SS[.mmm]``, which ``datetime.fromisoformat`` reads; ``None`` for lines
that carry none, such as tqdm bars and tracebacks printed without a prefix), the rank
fields when present, and then fields by kind:

``decode`` / ``prefill``
    The anchor (``Decode batch.``, ``Decode batch,``, ``Decode batch [iter],``, the same
    for ``Prefill batch``) followed by ``key: value`` pairs, read by key, never by
    position. Keys are normalised: leading ``#`` dropped, a parenthesised unit dropped,
    lower case, other characters to ``_`` (``#running-req`` -> ``running_req``,
    ``gen throughput (token/s)`` -> ``gen_throughput``, ``#full token`` -> ``full_token``),
    except the bare ``#token`` which becomes ``num_token`` as in SGLang's own parser.
    Values: integers and decimals as numbers, ``True``/``False`` as booleans
    (``cuda_graph``), ``12.5%`` as the fraction 0.125, anything else as the string.
    Unknown pairs are kept under their normalised names. ``iter`` holds the forward
    iteration when the anchor carries one.

    Where an accept rate appears, ``accept_rate_formula`` says what it divides, decided
    by the line's shape (the formula changed in SGLang PR #23530):

    * ``"incl-bonus/draft-tokens"`` -- accepted tokens including the bonus token over
      steps x draft tokens: every ``Decode batch.`` line, and a ``Decode batch,`` line
      whose pair list ends with a trailing comma (``#queue-req: 0, ``), the late-2025 to
      early-2026 shape.
    * ``"drafts-only"`` -- correct drafts over steps x (draft tokens - 1): the 0.5.23
      shape, whose pair list ends without a trailing comma (``#queue-req: 0``), and any
      line with ``cap len`` or ``block accept len``, which only that era writes.

    The trailing comma went away shortly before the formula changed, so ``Decode
    batch,`` lines written between the two releases (spring 2026) are read as
    ``drafts-only`` although they still count the bonus token: for those, trust
    ``accept_len``, which never changed meaning.

``loading`` (and ``progress`` for other tqdm bars, e.g. CUDA graph capture)
    ``desc``, ``percent``, ``done``, ``total``, and ``elapsed`` / ``remaining`` in seconds
    when tqdm printed them.
``load_begin`` / ``load_end``
    The ``key=value`` pairs of ``Load weight begin.`` / ``Load weight end.`` with their
    units dropped (SGLang prints memory in GB and time in s): ``avail_mem``,
    ``elapsed``, ``type``, ``mem_usage``, ``quant``, ...
``ready``
    ``The server is fired up and ready to roll!``
``error``
    A Python traceback gathered by :class:`LogFeeder` into one record: ``summary`` is the
    traceback's final exception line (``RuntimeError: CUDA error: out of memory``; for a
    chained traceback, that of the last one), ``exception`` its type, ``context`` the
    text before ``Traceback`` on the opening line (``Scheduler hit an exception:``),
    ``lines`` the lines (at most ``max_error_lines``) and ``line_count``. Also SGLang's
    one-line "a child process failed" messages, with ``summary`` the message.

Lines that are not SGLang's, or SGLang lines of no interest (HTTP access lines, ...),
give ``None``. :func:`parse_line` is one-shot and so never returns tracebacks; feed lines
to a :class:`LogFeeder` to get them.

Speed: a busy server writes the same few line shapes for hours, so after the key-driven
reader has read a batch line, its shape is compiled (see "Learned shapes" below): later
lines of that shape cost one regex match and one dict display, SGLang lines of no
interest one regex miss, about what SGLang's own decode regex costs to merely find a
line (``bench/parse_speed.py``). :meth:`LogFeeder.feed_lines` reads runs of such lines
in one loop. The module keeps this learned state (bounded) for the process; it is not
meant to be called from several threads at once.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

__all__ = [
    "FORMULA_INCL_BONUS",
    "FORMULA_DRAFTS_ONLY",
    "LogFeeder",
    "normalize_key",
    "parse_line",
    "parse_lines",
    "parse_progress",
    "line_time",
]

FORMULA_INCL_BONUS = "incl-bonus/draft-tokens"
FORMULA_DRAFTS_ONLY = "drafts-only"

_TRACEBACK = "Traceback (most recent call last)"
_CHAIN_MARKERS = (
    "During handling of the above exception",
    "The above exception was the direct cause",
)

# ---------------------------------------------------------------------------
# Prefix
# ---------------------------------------------------------------------------

_RANK_TOKEN = re.compile(r"([A-Za-z][A-Za-z_]*?)(\d+)$")
_RAY_PREFIX = re.compile(r"\((?P<actor>[\w.-]+) pid=(?P<pid>\d+)(?:,\s*ip=(?P<ip>[\w.:-]+))?\)\s*")

# Rank text (what follows the timestamp inside the brackets) -> record items.
_RANKS_CACHE: Dict[str, Tuple[Tuple[str, Any], ...]] = {}


def _rank_items(text: str) -> Tuple[Tuple[str, Any], ...]:
    items = _RANKS_CACHE.get(text)
    if items is not None:
        return items
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
    items = tuple(found)
    if len(_RANKS_CACHE) < 4096:
        _RANKS_CACHE[text] = items
    return items


def _split_prefix(line: str) -> Optional[Tuple[str, Tuple[Tuple[str, Any], ...], str]]:
    """``(time, rank items, message)`` for a line with SGLang's prefix, else ``None``."""
    if line[:1] != "[":
        if line[:1] == "(":
            m = _RAY_PREFIX.match(line)
            if m:
                inner = _split_prefix(line[m.end():])
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
        return None
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
    return time, _rank_items(extra), msg


# ---------------------------------------------------------------------------
# key: value pairs
# ---------------------------------------------------------------------------

_PAREN_UNIT = re.compile(r"\s*\([^)]*\)")
_NON_WORD = re.compile(r"[^0-9A-Za-z]+")
_SPECIAL_KEYS = {"#token": "num_token", "token": "num_token"}
_RESERVED = ("kind", "time")  # record fields a log key must not overwrite
_KEY_CACHE: Dict[str, str] = {}


def normalize_key(key: str) -> str:
    """SGLang's log key -> record field name (``#running-req`` -> ``running_req``)."""
    name = _KEY_CACHE.get(key)
    if name is not None:
        return name
    k = key.strip()
    name = _SPECIAL_KEYS.get(k)
    if name is None:
        k = _PAREN_UNIT.sub("", k.lstrip("#"))
        name = _NON_WORD.sub("_", k).strip("_").lower() or "field"
        if name in _RESERVED:
            name += "_field"
    if len(_KEY_CACHE) < 4096:
        _KEY_CACHE[key] = name
    return name


def _value(text: str) -> Any:
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


# Value text -> converted value. Most values of a busy log repeat (``0``, ``True``,
# ``0.12``) and a dict lookup is far cheaper than ``float()``. A plain dict, so that the
# learned shapes below index it at full speed (a miss raises KeyError, which sends the
# line to the generic reader, which fills the cache). Bounded: cleared when full.
_VALUES: Dict[str, Any] = {}
_MISSING = object()


def _cached_value(text: str) -> Any:
    value = _VALUES.get(text, _MISSING)
    if value is _MISSING:
        value = _value(text)
        if len(_VALUES) >= 65536:
            _VALUES.clear()
        _VALUES[text] = value
    return value


# "k1: v1, k2: v2" -> ["", k1, v1, k2, v2]. Keys hold no ':' or ','.
_PAIR_SPLIT = re.compile(r"(?:^|, )([^:,]+): ")


def _pairs(body: str) -> Tuple[List[str], List[str], str, bool]:
    """Split ``k: v, k: v[, ]`` into raw keys, raw values, leading text and whether the
    list ended in a comma."""
    stripped = body.rstrip()
    trailing_comma = stripped.endswith(",")
    if trailing_comma:
        stripped = stripped.rstrip(", ")
    parts = _PAIR_SPLIT.split(stripped)
    return parts[1::2], parts[2::2], parts[0].strip(), trailing_comma


# ---------------------------------------------------------------------------
# Message kinds
# ---------------------------------------------------------------------------


def _batch(kind: str, time: str, ranks: Tuple[Tuple[str, Any], ...], msg: str, anchor_len: int, rank_text: Optional[str] = None) -> Optional[dict]:
    """The generic, key-driven reading of a ``Decode batch`` / ``Prefill batch`` line."""
    rest = msg[anchor_len:]
    c = rest[:1]
    if c == "," or c == ".":
        sep = c
        body = rest[1:]
        iteration = None
    elif c == " " and rest[1:2] == "[":
        close = rest.find("]")
        if close < 0:
            return None
        try:
            iteration = int(rest[2:close])
        except ValueError:
            return None
        sep = rest[close + 1:close + 2]
        if sep != "," and sep != ".":
            return None
        body = rest[close + 2:]
    else:
        return None
    rec: Dict[str, Any] = {"kind": kind, "time": time}
    if ranks:
        rec.update(ranks)
    if iteration is not None:
        rec["iter"] = iteration
    keys, values, lead, trailing_comma = _pairs(body)
    if lead:  # text before the first pair: keep it rather than drop it
        rec["text"] = lead
    names = [normalize_key(k) for k in keys]
    converted = [_cached_value(v) for v in values]
    rec.update(zip(names, converted))
    formula = _formula(sep, trailing_comma, rec)
    if formula is not None:
        rec["accept_rate_formula"] = formula
    if rank_text is not None and not lead:
        _learn_shape(kind, time, rank_text, ranks, msg[:anchor_len], sep, iteration is not None, keys, names, converted, trailing_comma, formula)
    return rec


def _formula_fixed(rec: Dict[str, Any]) -> bool:
    return "cap_len" in rec or "block_accept_len" in rec


def _formula(sep: str, trailing_comma: bool, rec: Dict[str, Any]) -> Optional[str]:
    """Which accept-rate formula a line's shape implies (see the module docstring)."""
    if "accept_rate" not in rec:
        return None
    if sep == "." or (trailing_comma and not _formula_fixed(rec)):
        return FORMULA_INCL_BONUS
    return FORMULA_DRAFTS_ONLY


# ---------------------------------------------------------------------------
# Learned shapes: the fast path
# ---------------------------------------------------------------------------
#
# A server writes the same few batch-line shapes (the same prefix, keys and value forms)
# for hours. After the generic reader above has read a batch line by its keys, the line's
# shape becomes a regex (prefix and keys literal, values captured) and a dict display
# building the same record. All learned shapes are compiled into two readers sharing one
# body: one for a single line (parse_line), and one that reads lines from an iterator for
# as long as they are of a learned shape or SGLang lines of no interest (HTTP access
# lines, ...), dropped, and hands back the first line it cannot read (feed_lines). Such a
# line -- another key, order or value form, a loading line, a traceback -- is read the
# ordinary way, and the generic reader learns its shape if it has one. Tests check that
# both ways give equal records.

_HIGH_CARDINALITY = re.compile(r"(?:throughput|token|tflops|bw)$|^est_")
# As strict as _split_prefix: four digits, then the punctuation at its fixed places (the
# other places digits too, so that no "\r" can hide there).
_TIME_RX = r"\[([0-9]{4}-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9])"
_TIME_MS_RX = r"\[([0-9]{4}-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9][0-9][0-9])"
_VALUE_RX = r"([-.0-9A-Za-z%]+)"
# Matches (an empty match) unless the line is one the generic reader returns None for by
# its message's first letter: a valid prefix (rank text without "]", so that its "] " is
# the first one), then a letter _parse_message does not read. A miss allocates nothing.
_NOT_SKIPPED = re.compile(r"(?!\[[0-9]{4}-..-.. ..:..:..(?:\] |\.[0-9]{3}\] |(?:\.[0-9]{3})? [^\]\n]*\] )[^DPLT\[RS\n])").match
_MAX_SHAPES = 8  # per anchor, most recently learned first


class _Shape:
    """One learned batch-line shape: its regex, and how its record is built."""

    __slots__ = ("pattern", "items")

    def __init__(self, pattern: str, items: List[Tuple[str, Optional[str]]]) -> None:
        self.pattern = pattern
        # (field, how): "int", "float" or "_VALUES" applied to the next captured group,
        # None for the group as it is, else the repr of a constant.
        self.items = items

    def display(self, names: List[str]) -> str:
        """Source of the dict display building the record from the groups ``names``."""
        groups = iter(names)
        fields = []
        for field, how in self.items:
            if how is None:
                value = next(groups)
            elif how == "_VALUES":
                value = "_VALUES[%s]" % next(groups)
            elif how in ("int", "float"):
                value = "%s(%s)" % (how, next(groups))
            else:
                value = how
            fields.append("%r: %s" % (field, value))
        return "{%s}" % ", ".join(fields)


_SHAPES: Dict[str, List[_Shape]] = {"decode": [], "prefill": []}
_SEEN: Dict[str, None] = {}  # every pattern learned (bounded): each is learned once


def _learn_shape(kind: str, time: str, rank_text: str, ranks: Tuple[Tuple[str, Any], ...], anchor: str, sep: str, has_iter: bool, keys: List[str], names: List[str], values: List[Any], trailing_comma: bool, formula: Optional[str]) -> None:
    if not keys or len(keys) > 64 or len(set(names)) != len(names):
        return
    if not keys[0].startswith(" ") or keys[0][1:2].isspace() or any(_TRACEBACK in key for key in keys):
        return
    rx = [_TIME_MS_RX if len(time) > 19 else _TIME_RX, re.escape(rank_text), r"\] ", re.escape(anchor)]
    rx.append(r" \[([0-9]+)\]" + re.escape(sep) + " " if has_iter else re.escape(sep) + " ")
    items: List[Tuple[str, Optional[str]]] = [("kind", repr(kind)), ("time", None)]
    items.extend((name, repr(value)) for name, value in ranks)
    if has_iter:
        items.append(("iter", "int"))
    for n, (key, name, value) in enumerate(zip(keys, names, values)):
        if n:
            rx.append(", ")
        rx.append(re.escape(key[1:] if n == 0 else key) + ": ")
        # Numbers that change on every line are converted where they are read; other
        # values go through the cache, which holds what the generic reader made of them.
        if type(value) is int and _HIGH_CARDINALITY.search(name):
            rx.append(r"([0-9]+)")
            items.append((name, "int"))
        elif type(value) is float and _HIGH_CARDINALITY.search(name):
            rx.append(r"([0-9]+\.[0-9]+)")
            items.append((name, "float"))
        else:
            rx.append(_VALUE_RX)
            items.append((name, "_VALUES"))
    rx.append(r", ?\r?\n?" if trailing_comma else r" ?\r?\n?")  # (used with fullmatch)
    if formula is not None:
        items.append(("accept_rate_formula", repr(formula)))
    pattern = "".join(rx)
    if pattern in _SEEN or len(_SEEN) >= 256:
        return
    _SEEN[pattern] = None
    shapes = _SHAPES[kind]
    shapes.insert(0, _Shape(pattern, items))
    del shapes[_MAX_SHAPES:]
    global _read_line, _read_lines
    _read_line, _read_lines = _compile_readers(_SHAPES["decode"] + _SHAPES["prefill"])  # decode first: most lines are


_UNREAD = object()  # a line the fast readers leave to the generic reader


def _compile_readers(shapes: List[_Shape]) -> Tuple[Any, Any]:
    """Two readers of the lines of ``shapes`` (and of SGLang lines of no interest holding
    neither ``"\\r"`` nor a traceback, which they drop), compiled from the same code:

    * ``read_line(line)``: the line's record, ``None`` for a line of no interest, else
      ``_UNREAD``;
    * ``read_lines(lines, append)``: takes lines from the iterator ``lines`` and appends
      their records while it can; returns the first line it cannot read (``None`` at the
      end), which the caller reads the other way before calling it again."""
    namespace: Dict[str, Any] = {"_VALUES": _VALUES, "_not_skipped": _NOT_SKIPPED, "_UNREAD": _UNREAD}
    one = ["def read_line(line):"]
    many = ["def read_lines(lines, append):", "    for line in lines:"]
    for n, shape in enumerate(shapes):
        namespace["_match%d" % n] = match = re.compile(shape.pattern).fullmatch
        names = ["v%d" % i for i in range(match.__self__.groups)]
        read = ["m = _match%d(line)" % n, "if m is not None:", "    %s, = m.groups()" % ", ".join(names), "    try:"]
        record = shape.display(names)
        one += ["    " + text for text in read]
        one += ["            return %s" % record, "        except KeyError:  # a value not cached yet", "            return _UNREAD"]
        many += ["        " + text for text in read]
        many += ["                append(%s)" % record, "            except KeyError:", "                return line", "            continue"]
    skipped = "_not_skipped(line) is None and '\\r' not in line and 'Traceback' not in line"
    one += ["    return None if %s else _UNREAD" % skipped]
    many += ["        if %s:" % skipped, "            continue", "        return line", "    return None"]
    exec(compile("\n".join(one + many) + "\n", "<spectui log readers>", "exec"), namespace)
    return namespace["read_line"], namespace["read_lines"]


_read_line, _read_lines = _compile_readers([])


_EQ_PAIR = re.compile(r"([A-Za-z][\w .-]*?)=([^,]*)")
_NUM_UNIT = re.compile(r"^(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*[A-Za-z/%]*$")
_COMMIT_ELAPSED = re.compile(r"\bin (\d+(?:\.\d+)?) s\b")


def _load(kind: str, time: str, ranks: Tuple[Tuple[str, Any], ...], body: str) -> dict:
    rec: Dict[str, Any] = {"kind": kind, "time": time}
    if ranks:
        rec.update(ranks)
    body = body.strip()
    if body.endswith("."):
        body = body[:-1]
    found = False
    for key, raw in _EQ_PAIR.findall(body):
        found = True
        raw = raw.strip()
        m = _NUM_UNIT.match(raw)
        rec[normalize_key(key)] = float(m.group(1)) if m else raw
    if not found and kind == "load_end":
        # "Load weight end. Committed real weights after CUDA graph capture in 3.20 s (...)"
        m = _COMMIT_ELAPSED.search(body)
        if m:
            rec["elapsed"] = float(m.group(1))
        if body:
            rec["text"] = body
    return rec


_PROGRESS = re.compile(
    r"(?P<desc>[^\r\n%|]*?):\s*(?P<pct>\d+)%"
    r"(?: Completed \||\|[^|]*\|)\s*"
    r"(?P<done>\d+)/(?P<total>\d+)"
    r"(?:\s*\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:?]+))?"
)


def _clock_seconds(text: Optional[str]) -> Optional[int]:
    if not text or "?" in text:
        return None
    seconds = 0
    for part in text.split(":"):
        if not part.isdigit():
            return None
        seconds = seconds * 60 + int(part)
    return seconds


def parse_progress(text: str) -> Optional[dict]:
    """A tqdm progress line (SGLang's ``{desc}: NN% Completed | n/N [el<rem, rate]`` or tqdm's
    default bar) -> a ``loading`` record (``progress`` when the bar is not about loading)."""
    if "% Completed |" not in text and "%|" not in text:
        return None
    if "\r" in text:
        segments = [s for s in text.split("\r") if s.strip()]
        if not segments:
            return None
        text = segments[-1]
    m = _PROGRESS.search(text)
    if m is None:
        return None
    desc = m.group("desc").strip()
    lowered = desc.lower()
    kind = "loading" if ("load" in lowered or "checkpoint" in lowered) else "progress"
    rec: Dict[str, Any] = {
        "kind": kind,
        "time": None,
        "desc": desc,
        "percent": int(m.group("pct")),
        "done": int(m.group("done")),
        "total": int(m.group("total")),
    }
    elapsed = _clock_seconds(m.group("elapsed"))
    if elapsed is not None:
        rec["elapsed"] = elapsed
    remaining = _clock_seconds(m.group("remaining"))
    if remaining is not None:
        rec["remaining"] = remaining
    return rec


def _child_failed(time: str, ranks: Tuple[Tuple[str, Any], ...], msg: str) -> dict:
    rec: Dict[str, Any] = {"kind": "error", "time": time}
    if ranks:
        rec.update(ranks)
    rec["summary"] = msg.strip()
    rec["exception"] = None
    rec["context"] = None
    rec["lines"] = [msg]
    rec["line_count"] = 1
    return rec


def _parse_message(time: str, ranks: Tuple[Tuple[str, Any], ...], msg: str, rank_text: Optional[str] = None) -> Optional[dict]:
    # The first letters read here (Decode, Prefill, Load weight, The server is fired up,
    # [gpu=N] of 2024, Received sigquit / SIGQUIT received) are those _NOT_SKIPPED keeps.
    c = msg[:1]
    if c == "D":
        if msg.startswith("Decode batch"):
            return _batch("decode", time, ranks, msg, 12, rank_text)
    elif c == "P":
        if msg.startswith("Prefill batch"):
            return _batch("prefill", time, ranks, msg, 13, rank_text)
    elif c == "L":
        if msg.startswith("Load weight end."):
            return _load("load_end", time, ranks, msg[16:])
        if msg.startswith("Load weight begin."):
            return _load("load_begin", time, ranks, msg[18:])
    elif c == "T":
        if msg.startswith("The server is fired up and ready to roll"):
            rec: Dict[str, Any] = {"kind": "ready", "time": time}
            if ranks:
                rec.update(ranks)
            return rec
    elif c == "[":
        # 2024 releases: "[gpu=0] Decode batch. ..."
        if msg.startswith("[gpu="):
            close = msg.find("] ")
            if close > 5:
                rec2 = _parse_message(time, ranks, msg[close + 2:])
                if rec2 is not None and msg[5:close].isdigit():
                    rec2["gpu"] = int(msg[5:close])
                return rec2
    if (c == "R" or c == "S") and "usually means" in msg and "child failed" in msg:
        # "SIGQUIT received. ... It usually means one child failed." /
        # "Received sigquit from a child process. It usually means the child failed."
        return _child_failed(time, ranks, msg)
    return None


def parse_line(line: str) -> Optional[dict]:
    """One log line -> a record, or ``None`` for lines that are not SGLang's or not of
    interest. One-shot: tracebacks need :class:`LogFeeder`."""
    rec = _read_line(line)
    return _parse_generic(line) if rec is _UNREAD else rec


def _parse_generic(line: str) -> Optional[dict]:
    if "\r" in line or line[-1:] == "\n":
        line = line.rstrip("\r\n")
        if "\r" in line:
            segments = [s for s in line.split("\r") if s.strip()]
            if not segments:
                return None
            line = segments[-1]
    prefix = _split_prefix(line)
    if prefix is None:
        return parse_progress(line)
    time, ranks, msg = prefix
    rank_text = None
    if line[:1] == "[":
        close = len(line) - len(msg) - 2
        if line[close:close + 2] == "] ":
            rank_text = line[1 + len(time):close]
    return _parse_message(time, ranks, msg, rank_text)


def line_time(line: str) -> Optional[str]:
    """The timestamp of a line with SGLang's prefix (any message), else ``None``."""
    prefix = _split_prefix(line.rstrip("\r\n"))
    return prefix[0] if prefix is not None else None


def parse_lines(lines: Iterable[str], max_error_lines: int = 200) -> List[dict]:
    """All records of ``lines`` in order, tracebacks gathered (a :class:`LogFeeder` run)."""
    feeder = LogFeeder(max_error_lines=max_error_lines)
    out = feeder.feed_lines(lines)
    out.extend(feeder.flush())
    return out


# ---------------------------------------------------------------------------
# Stateful feeder: gathers tracebacks that span many lines
# ---------------------------------------------------------------------------

_EXC_TYPE = re.compile(r"([A-Za-z_][\w.]*)(?::|$)")


class _PendingTraceback:
    __slots__ = ("time", "ranks", "context", "lines", "line_count", "exc", "after_frames", "chained", "continuations", "max_lines")

    def __init__(self, time: Optional[str], ranks: Tuple[Tuple[str, Any], ...], context: Optional[str], first: str, max_lines: int) -> None:
        self.time = time
        self.ranks = ranks
        self.context = context
        self.lines = [first]
        self.line_count = 1
        self.exc: Optional[str] = None
        self.after_frames = False
        self.chained = False
        self.continuations = 0
        self.max_lines = max_lines

    def _keep(self, line: str) -> None:
        self.line_count += 1
        if len(self.lines) < self.max_lines:
            self.lines.append(line)

    def add(self, line: str) -> bool:
        """Take an unprefixed line; ``False`` when it does not belong to this traceback."""
        if line[:1] in (" ", "\t"):
            if line.strip():
                self.after_frames = True
            self._keep(line)
            return True
        s = line.strip()
        if not s:
            self._keep(line)
            return True
        if s.startswith(_TRACEBACK):
            if self.exc is not None and not self.chained:
                return False  # a separate traceback: this one is complete
            self.chained = False
            self.after_frames = False
            self._keep(line)
            return True
        if s.startswith(_CHAIN_MARKERS):
            self.chained = True
            self._keep(line)
            return True
        if self.exc is None or self.after_frames:
            self.exc = s
            self.after_frames = False
            self.continuations = 0
            self._keep(line)
            return True
        # A further line of the exception message, unless it is someone else's log line.
        if s.startswith("[") or self.continuations >= 50:
            return False
        self.continuations += 1
        self._keep(line)
        return True

    def record(self) -> dict:
        rec: Dict[str, Any] = {"kind": "error", "time": self.time}
        if self.ranks:
            rec.update(self.ranks)
        summary = self.exc or self.context or _TRACEBACK
        m = _EXC_TYPE.match(self.exc) if self.exc else None
        rec["summary"] = summary
        rec["exception"] = m.group(1) if m else None
        rec["context"] = self.context
        rec["lines"] = self.lines
        rec["line_count"] = self.line_count
        return rec


class LogFeeder:
    """Feed log lines one at a time; get records back, tracebacks as one ``error`` record.

    ``feed(line)`` returns the records the line completes (usually zero or one; a line
    that ends a pending traceback returns it before its own record). A traceback is
    complete when a line with SGLang's prefix arrives, a separate traceback starts, a
    bracketed line from another source follows its exception line, or on ``flush()``
    (call it at end of input, or when the log has been idle for a while).
    A physical line holding ``\\r``-separated tqdm updates gives only its last update.
    """

    def __init__(self, max_error_lines: int = 200) -> None:
        self.max_error_lines = max(1, int(max_error_lines))
        self._tb: Optional[_PendingTraceback] = None

    @property
    def pending(self) -> bool:
        """A traceback is being gathered."""
        return self._tb is not None

    def flush(self) -> List[dict]:
        """Close a pending traceback, if any, and return it."""
        tb, self._tb = self._tb, None
        return [tb.record()] if tb is not None else []

    def feed_lines(self, lines: Iterable[str]) -> List[dict]:
        """``feed`` each of ``lines``; the records they complete, in order. While no
        traceback is pending, the lines of the learned shapes and the lines of no interest
        are read in one loop (see "Learned shapes" in the source)."""
        out: List[dict] = []
        it = iter(lines)
        while True:
            line = _read_lines(it, out.append) if self._tb is None else next(it, None)
            if line is None:
                return out
            out.extend(self.feed(line))

    def feed(self, line: str) -> List[dict]:
        if self._tb is None and "\r" not in line and "Traceback" not in line:
            rec = parse_line(line)  # the common case: one line, one record or none
            return [rec] if rec is not None else []
        line = line.rstrip("\r\n")
        if "\r" not in line:
            return self._feed_one(line)
        out: List[dict] = []
        progress: Optional[dict] = None
        for segment in line.split("\r"):
            if not segment.strip():
                continue
            for rec in self._feed_one(segment):
                if rec["kind"] in ("loading", "progress"):
                    progress = rec  # keep only the latest tqdm update of this line
                else:
                    if progress is not None:
                        out.append(progress)
                        progress = None
                    out.append(rec)
        if progress is not None:
            out.append(progress)
        return out

    def _feed_one(self, line: str) -> List[dict]:
        out: List[dict] = []
        prefix = _split_prefix(line)
        if self._tb is not None:
            if prefix is None and self._tb.add(line):
                return out
            out.extend(self.flush())
        if prefix is None:
            stripped = line.lstrip()
            if stripped.startswith(_TRACEBACK):
                self._tb = _PendingTraceback(None, (), None, line, self.max_error_lines)
                return out
            rec = parse_progress(line)
        else:
            time, ranks, msg = prefix
            at = msg.find(_TRACEBACK) if "Traceback" in msg else -1
            if at >= 0:
                context = msg[:at].strip().rstrip(":").strip() or None
                self._tb = _PendingTraceback(time, ranks, context, line, self.max_error_lines)
                return out
            rec = _parse_message(time, ranks, msg)
        if rec is not None:
            out.append(rec)
        return out
