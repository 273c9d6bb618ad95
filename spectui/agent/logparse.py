"""Parse SGLang server log lines into records (plain dicts).

Runs on the GPU host under the host's Python (3.8+): standard library only, and only
relative imports from the rest of the agent.

A line SGLang's logger wrote starts with ``[%Y-%m-%d %H:%M:%S] `` (sglang 0.3.6 and later,
``configure_logger`` in srt/utils.py, later srt/utils/common.py) -- optionally with
``.mmm`` milliseconds (``SGLANG_LOG_MS``) and rank tokens before the closing bracket
(``[2026-11-30 10:00:00.123 DP1 TP8] ``; SGLang 0.5.23 writes, in this order, ``DPn``,
``PPn``, ``ATTN_CPn``, ``MOE_DPn``, ``TPn``, ``EPn``; each ``NAMEn`` token becomes
``name_rank``, e.g. ``attn_cp_rank``, the rank a number: ``DP-1``, which SGLang writes
when ``SGLANG_DP_RANK`` holds -1 (``int(os.environ["SGLANG_DP_RANK"])``, sglang 0.5.3
srt/managers/scheduler.py:2810-2812), gives ``dp_rank`` -1). Releases 0.2.14 to 0.3.x
wrote the time of day only (``datefmt="%H:%M:%S"``: ``[10:00:00 TP0] ``); a prefix may
also hold the ranks alone (``[TP0] ``). Under Ray the line may be led by
``(SchedulerActor pid=N, ip=A.B.C.D) ``. tqdm progress bars (weight loading) are written
without that prefix, often as ``\\r``-separated updates on one physical line.

Lines without such a prefix are read when their message is one of interest (a batch line,
weight loading, readiness): releases 0.2.0 to 0.2.13 logged the bare message
(``[gpu_id=0] Decode batch. ...``, later ``[gpu=0] ...``), a line may be pasted without
its prefix, written under the user's own Python logging format
(``2025-01-02 10:00:00,123 INFO 4242 scheduler.py:900: Decode batch. ...``,
``INFO:sglang.srt.managers.scheduler:Decode batch. ...``), or carry SGLang's prefix behind
another program's (``sglang-1  | [2026-... TP0] ``). Text before the message must look
like a logging prefix: it holds no quote, and a time or a level name when it is not
SGLang's bracket.

Records are dicts with ``kind`` and ``time`` (the timestamp text as written in the log,
``YYYY-MM-DD HH:MM:SS[.mmm]``, which ``datetime.fromisoformat`` reads, a comma before
milliseconds written as a dot; ``HH:MM:SS[.mmm]`` for a line that gives the time of day
only; ``None`` for lines that carry none, such as tqdm bars and tracebacks printed without
a prefix), the rank fields when present, and then fields by kind:

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
    iteration when the anchor carries one, ``mixed_running_req`` the count of
    ``Prefill batch(mixed #running-req: N).`` (0.2.14 to 0.3.x). A hybrid model's line
    gives ``token_usage`` from its ``full token usage`` (the full-attention pool); the
    ``swa``, ``mamba`` and ``pre-allocated`` usages are other pools and stay their own.

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
reader has read a batch line, its shape is compiled (see "Learned shapes" below).
:meth:`LogFeeder.feed_lines` reads a batch of such lines with one regex split over their
text and one list comprehension building their records, in less time than SGLang's own
decode regex takes to merely find the decode lines one by one (``bench/parse_speed.py``).
The module keeps this learned state (bounded) for the process; it is not
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

_RANK_TOKEN = re.compile(r"([A-Za-z][A-Za-z_]*?)(-?\d+)$")  # "DP-1": a negative rank
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


def _split_prefix(line: str) -> Optional[Tuple[Optional[str], Tuple[Tuple[str, Any], ...], str]]:
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
    return time, _rank_items(extra), msg


# The prefix of releases that logged the time of day only (``datefmt="%H:%M:%S"``: sglang
# 0.2.14 to 0.3.x, srt/utils.py ``configure_logger``), with SGLang's rank tokens or
# without, and the ranks alone (a prefix whose time was cut away).
_RANK_NAME = r"[A-Z][A-Z_]*-?\d+"
_SHORT_PREFIX = re.compile(
    r"\[(?:(\d\d:\d\d:\d\d(?:\.\d\d\d)?)((?: %s)*)|(%s(?: %s)*))\](?: |$)" % (_RANK_NAME, _RANK_NAME, _RANK_NAME),
    re.ASCII,
)


def _split_short_prefix(line: str) -> Optional[Tuple[Optional[str], Tuple[Tuple[str, Any], ...], str]]:
    m = _SHORT_PREFIX.match(line)
    if m is None:
        return None
    ranks = m.group(2) or m.group(3)
    return m.group(1), _rank_items(ranks) if ranks else (), line[m.end():]


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


def _split_loose(line: str) -> Optional[Tuple[Optional[str], Tuple[Tuple[str, Any], ...], str]]:
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
        return b.group(1), _rank_items(ranks) if ranks else (), line[at:]
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
    mixed = None
    if c == "(":
        # sglang 0.2.14-0.3.x: "Prefill batch(mixed #running-req: 3). #new-seq: ..."
        # (managers/tp_worker.py, chunked prefill mixed with decoding)
        close = rest.find(")")
        if close < 0:
            return None
        mixed = rest[1:close]
        rest = rest[close + 1:]
        c = rest[:1]
        rank_text = None  # a shape the fast readers do not learn
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
    if mixed is not None:
        mixed_keys, mixed_values, _, _ = _pairs(mixed)
        keys = mixed_keys + keys
        values = mixed_values + values
    if lead:  # text before the first pair: keep it rather than drop it
        rec["text"] = lead
    names = [normalize_key(k) for k in keys]
    converted = [_cached_value(v) for v in values]
    rec.update(zip(names, converted))
    if "full_token_usage" in rec and "token_usage" not in rec:
        # Hybrid (SWA / mamba) models write the full-attention pool as "#full token" and
        # "full token usage" in place of "#token" and "token usage" (sglang 0.4.10
        # managers/scheduler_metrics_mixin.py:155-163, "token_msg"); "swa", "mamba" and
        # "pre-allocated" usages are other pools.
        rec["token_usage"] = rec["full_token_usage"]
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
# shape is learned: its rank text, anchor and keys literal, its values captured (booleans
# literal), and its record as a dict display in field order. The learned shapes and the
# SGLang lines of no interest (HTTP access lines, ...) are compiled into regexes (the
# timestamp once, then a branch per rank text, then a branch per shape) and into the
# generated code that builds records from their groups:
#
# * ``read_line(line)`` (parse_line): one ``fullmatch``; each branch ends in an empty
#   marker group, so that ``m.lastindex`` names the shape that matched.
# * ``read_chunk(...)`` (LogFeeder.feed_lines): the lines are joined, each after a
#   newline, and when the text holds no "\r" and no traceback it is *split* by the regex
#   of the shapes: each line of a shape gives its groups, in order, into one flat list,
#   with the text between (the lines of no interest) -- no match object and no tuple per
#   line, and nothing for the lines between but one check that they are all of no
#   interest. One list comprehension then builds every record. Each group costs every
#   matching line, so the shapes that capture are bounded (``_CAPTURED_GROUPS``).
#   A text that cannot go that way (a line of no known shape, a value not cached yet, a
#   loading line, a traceback) is read by ``findall`` with a regex that takes any line,
#   a tuple per line: a line of no shape goes to ``slow`` (LogFeeder.feed), which reads
#   it the ordinary way, and the generic reader learns its shape if it has one.
#
# Tests check that every way gives the records the generic reader gives.

_HIGH_CARDINALITY = re.compile(r"(?:throughput|token|tflops|bw)$|^est_")
_VALUE_RX = r"[-.0-9A-Za-z%]+"
# After the timestamp, a line the generic reader returns None for by how its message
# begins: none of the beginnings _parse_message reads (an R or S line only when it says
# "usually means"), with rank text without "]" (so that its "] " is the first one); {0}
# and {1} make the first character a group or not. Lines holding "\r" or "Traceback"
# are told apart in Python (``.`` is the fastest way for the regex to pass the rest of
# the line). A line this misses is read the ordinary way.
_SKIP_HEAD = (
    r"(?:\]| [^\]\r\n]*\]) "
    r"(?!Decode batch|Prefill batch|Load weight |The server is fired up|\[gpu(?:_id)?=|[RS][^\r\n]*usually means)"
    r"{0}[^\r\n]{1}"
)
_SKIP_RX = _SKIP_HEAD + ".*"
_MAX_SHAPES = 8  # per anchor, most recently learned first
_CHUNK_LINES = 256  # lines per read_chunk: what a traceback's start can cost twice
_CAPTURED_GROUPS = 40  # value groups the chunk regexes may hold: each costs every line


def _time_rx(ms: Optional[bool], loose: bool = False, group: bool = True) -> str:
    """The bracket and the timestamp (a group), with milliseconds, without, or either
    (``ms`` None); the record's ``time`` is the text as written. Strict: four digits, the
    punctuation at its fixed places and digits at the others (so that no "\\r" can hide
    there). ``loose``, for text known to hold no "\\r": digits only where _split_prefix
    wants them. (Compiled with ASCII ``\\d``: a line with other digits is left to the
    generic reader.)"""
    fraction = {True: r"\.\d\d\d", False: "", None: r"(?:\.\d\d\d)?"}[ms]
    stamp = r"\d{4}-..-.. ..:..:.." if loose else r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
    return (r"\[(%s%s)" if group else r"\[%s%s") % (stamp, fraction)


class _Shape:
    """One learned batch-line shape: the parts of its regex after the rank text, and the
    record's fields in order."""

    __slots__ = ("rank_text", "ms", "parts", "fields")

    def __init__(self, rank_text: str, ms: bool, parts: List[Tuple[str, str]], fields: List[Tuple[str, str, Any]]) -> None:
        self.rank_text = rank_text
        self.ms = ms  # whether the line it was learned from had milliseconds
        # ("text", regex) / ("value", regex of a value) / ("sep", the separator character
        # after the anchor) / ("end", regex of the line's end, before the line break).
        self.parts = parts
        # (field, how, constant): how is "const" (the constant), "time" (the timestamp
        # group), "same:" + one of the next three applied to the value group numbered by
        # the constant (a field that repeats another), or, applied to the next value
        # group, "int", "float" or "_VALUES" (the value cache).
        self.fields = fields

    @property
    def value_count(self) -> int:
        return sum(1 for what, _ in self.parts if what == "value")

    def regex(self, form: str) -> str:
        """``"line"``: values captured, for fullmatch; ``"hot"``: values captured (the
        separator too when there is no value, to name the branch), for split and
        findall; ``"cold"``: only the separator captured."""
        out = []
        for what, text in self.parts:
            if what == "value":
                out.append("(%s)" % text if form != "cold" else "(?:%s)" % text)
            elif what == "sep":
                tagged = form == "cold" or (form == "hot" and not self.value_count)
                out.append("(%s)" % re.escape(text) if tagged else re.escape(text))
            elif what == "end":
                out.append(text + (r"\n?" if form == "line" else ""))
            else:
                out.append(text)
        return "".join(out)

    def display(self, value: Any) -> str:
        """A dict display of the record; ``value(n)`` is the source of the n-th value
        group's text (the timestamp is n = 0)."""
        out = []
        n = 0
        for name, how, constant in self.fields:
            if how == "const":
                out.append("%r: %r" % (name, constant))
            elif how == "time":
                out.append("%r: %s" % (name, value(0)))
            elif how.startswith("same:"):  # the value of an earlier field's group
                how, text = how[5:], value(constant)
                out.append("%r: %s" % (name, "_VALUES[%s]" % text if how == "_VALUES" else "%s(%s)" % (how, text)))
            else:
                n += 1
                text = value(n)
                out.append("%r: %s" % (name, "_VALUES[%s]" % text if how == "_VALUES" else "%s(%s)" % (how, text)))
        return "{%s}" % ", ".join(out)


_SHAPES: Dict[str, List[_Shape]] = {"decode": [], "prefill": []}
_SEEN: Dict[str, None] = {}  # every shape learned (bounded): each is learned once


def _learn_shape(kind: str, time: str, rank_text: str, ranks: Tuple[Tuple[str, Any], ...], anchor: str, sep: str, has_iter: bool, keys: List[str], names: List[str], values: List[Any], trailing_comma: bool, formula: Optional[str]) -> None:
    if not keys or len(keys) > 64 or len(set(names)) != len(names):
        return
    if not keys[0].startswith(" ") or keys[0][1:2].isspace() or any(_TRACEBACK in key for key in keys):
        return
    if "]" in rank_text or "\r" in rank_text or "\n" in rank_text:
        return
    parts: List[Tuple[str, str]] = [("text", re.escape(anchor))]
    fields: List[Tuple[str, str, Any]] = [("kind", "const", kind), ("time", "time", None)]
    fields.extend((name, "const", value) for name, value in ranks)
    if has_iter:
        parts += [("text", r" \["), ("value", r"\d+"), ("text", r"\]")]
        fields.append(("iter", "int", None))
    parts += [("sep", sep), ("text", " ")]
    for n, (key, name, value) in enumerate(zip(keys, names, values)):
        parts.append(("text", (", " if n else "") + re.escape(key[1:] if n == 0 else key) + ": "))
        # Numbers that change on every line are converted where they are read; booleans
        # are part of the shape; other values go through the cache, which holds what the
        # generic reader made of them.
        if type(value) is bool:
            parts.append(("text", "True" if value else "False"))
            fields.append((name, "const", value))
        elif type(value) is int and _HIGH_CARDINALITY.search(name):
            parts.append(("value", r"\d+"))
            fields.append((name, "int", None))
        elif type(value) is float and _HIGH_CARDINALITY.search(name):
            parts.append(("value", r"\d+\.\d+"))
            fields.append((name, "float", None))
        else:
            parts.append(("value", _VALUE_RX))
            fields.append((name, "_VALUES", None))
    parts.append(("end", r", ?\r?" if trailing_comma else r" ?\r?"))
    if "full_token_usage" in names and "token_usage" not in names:  # as _batch does
        group = 0
        for name, how, _ in fields:
            if how not in ("const", "time"):
                group += 1
                if name == "full_token_usage":
                    fields.append(("token_usage", "same:" + how, group))
                    break
        else:
            fields.append(("token_usage", "const", values[names.index("full_token_usage")]))
    if formula is not None:
        fields.append(("accept_rate_formula", "const", formula))
    shape = _Shape(rank_text, len(time) > 19, parts, fields)
    seen = repr((rank_text, shape.ms, parts, fields))
    if seen in _SEEN or len(_SEEN) >= 256:
        return
    _SEEN[seen] = None
    shapes = _SHAPES[kind]
    shapes.insert(0, shape)
    del shapes[_MAX_SHAPES:]
    _set_readers(_SHAPES["decode"] + _SHAPES["prefill"])  # decode first: most lines are


_UNREAD = object()  # a line the fast readers leave to the generic reader


def _shapes_rx(shapes: List[_Shape], form: str, captured: Iterable[int] = ()) -> Tuple[str, Dict[int, Tuple[int, List[int]]], Optional[int]]:
    """The regex of ``shapes`` and of lines of no interest, after the timestamp group:
    ``(regex, {shape: (group naming its branch, value groups)}, group naming the
    no-interest branch)``, value groups in field order.

    * ``"line"``, for fullmatch: every shape, each branch closed by an empty group.
    * ``"known"``, for split: only the shapes in ``captured``, each named by its first
      value group (by its separator when it has none); no branch for lines of no
      interest.
    * ``"any"``, for findall: the shapes in ``captured`` as for ``"known"``, the others
      named by their separator, and the no-interest branch by its first letter."""
    ranks = list(dict.fromkeys(shape.rank_text for shape in shapes))
    order = sorted(range(len(shapes)), key=lambda n: ranks.index(shapes[n].rank_text))
    if form == "known":
        order = [n for n in order if n in captured]
    rx = ["(?:"]
    group = 1  # groups so far: the timestamp
    named: Dict[int, Tuple[int, List[int]]] = {}
    rank_text = None
    for n in order:  # shapes grouped by rank text, in order within a rank text
        shape = shapes[n]
        if shape.rank_text != rank_text:
            rx.append(("" if rank_text is None else ")|") + re.escape(shape.rank_text) + r"\] (?:")
            rank_text = shape.rank_text
        else:
            rx.append("|")
        count = shape.value_count
        if form == "line":
            rx.append(shape.regex("line") + "()")
            named[n] = (group + count + 1, list(range(group + 1, group + count + 1)))
            group += count + 1
        elif n in captured:
            rx.append(shape.regex("hot"))
            named[n] = (group + 1, list(range(group + 1, group + count + 1)) if count else [])
            group += max(count, 1)
        else:
            rx.append(shape.regex("cold"))
            named[n] = (group + 1, [])
            group += 1
    if rank_text is not None:
        rx.append(")|")
    if form == "line":
        rx.append(_SKIP_RX.format("", "") + r"\n?()")
        skip: Optional[int] = group + 1
    elif form == "known":
        if rank_text is None:
            rx.append("(?!)")  # no shape: matches nothing
        else:
            rx[-1] = ")"
        skip = None
    else:
        rx.append(_SKIP_RX.format("(", ")"))
        skip = group + 1
    rx.append(")")
    return "".join(rx), named, skip


def _set_readers(shapes: List[_Shape]) -> None:
    global _read_line, _read_chunk
    _read_line = _compile_line_reader(shapes)
    _read_chunk = _compile_chunk_reader(shapes, _read_line)


def _compile_line_reader(shapes: List[_Shape]) -> Any:
    """``read_line(line)``: the line's record if it is of one of ``shapes``, ``None`` for
    a line of no interest (holding neither ``"\\r"`` nor a traceback), else ``_UNREAD``."""
    namespace: Dict[str, Any] = {"_VALUES": _VALUES, "_UNREAD": _UNREAD}
    rx, named, _ = _shapes_rx(shapes, "line")
    namespace["_match"] = re.compile(_time_rx(None) + rx, re.ASCII).fullmatch
    code = ["def read_line(line):", "    m = _match(line)", "    if m is None:", "        return _UNREAD", "    i = m.lastindex"]
    for n, shape in enumerate(shapes):
        marker, groups = named[n]
        names = ["v%d" % g for g in [1] + groups]
        code += ["    %s i == %d:" % ("if" if n == 0 else "elif", marker), "        try:"]
        code += ["            %s = m.group(%s)" % (", ".join(names), ", ".join(name[1:] for name in names)) if groups else "            v1 = m.group(1)"]
        code += ["            return %s" % shape.display(lambda k, names=names: names[k])]
        code += ["        except KeyError:  # a value not cached yet", "            return _UNREAD"]
    code += ["    return None if '\\r' not in line and 'Traceback' not in line else _UNREAD"]
    exec(compile("\n".join(code) + "\n", "<spectui log line reader>", "exec"), namespace)
    return namespace["read_line"]


def _compile_chunk_reader(shapes: List[_Shape], read_line: Any) -> Any:
    """``read_chunk(lines, append, extend, slow)``: appends the records of the list
    ``lines`` (none holding ``"\\n"``) in order, giving each line it cannot read to
    ``slow(line)``, which reads it and returns whether what follows must be read that way
    too (a traceback began); returns the number of lines done, 0 when some line held
    ``"\\n"`` (none done).

    The lines are joined, each after a newline. A text holding no ``"\\r"`` and no
    traceback is split by the regex of the shapes whose values are captured (those seen
    last, within a budget of groups, with milliseconds as the last learned); when the
    text between their lines is all lines of no interest and every value is cached, one
    list comprehension over the split builds the records. Otherwise ``findall`` with the
    regex that takes any line gives a tuple per line, read one at a time: a line of
    another shape is read by ``read_line``, a line of none by ``slow``."""
    ms = shapes[0].ms if shapes else None
    captured: List[int] = []
    budget = _CAPTURED_GROUPS
    for n, shape in enumerate(shapes):  # in order: the shapes seen last, decode first
        if shape.ms == ms and shape.value_count + 1 <= budget:
            captured.append(n)
            budget -= shape.value_count + 1
    namespace: Dict[str, Any] = {"_VALUES": _VALUES, "_UNREAD": _UNREAD, "_read_line": read_line, "_TRACEBACK": _TRACEBACK}

    rx, named, _ = _shapes_rx(shapes, "known", captured)
    known = re.compile("(?m)\n" + _time_rx(ms, loose=True) + rx + "$", re.ASCII)
    namespace["_split_known"] = known.split
    namespace["_findall_skipped"] = re.compile("\n(?=%s%s)" % (_time_rx(ms, loose=True, group=False), _SKIP_HEAD.format("", "")), re.ASCII).findall
    step = known.groups + 1
    names = ["t%d" % g for g in range(1, step)]
    records = ""
    for n in reversed(captured):
        tag, groups = named[n]
        display = shapes[n].display(lambda k, groups=groups: "t%d" % ([1] + groups)[k])
        records = "%s if t%d else %s" % (display, tag, records) if records else display
    code = [
        "def read_chunk(lines, append, extend, slow):",
        "    text = '\\n' + '\\n'.join(lines)",
        "    if '\\r' not in text and text.count('\\n') == len(lines):  # no line holds a line break",
        "        parts = _split_known(text)",
        "        others = ''.join(parts[0::%d])  # the lines of no shape; a traceback can only be there" % step,
        "        if _TRACEBACK not in others and others.count('\\n') == len(_findall_skipped(others)):",
    ]
    if captured:
        code += [
            "            it = iter(parts)  # (text before, groups) per line of a shape, then the text after",
            "            try:",
            "                extend([%s for _, %s in zip(%s)])" % (records, ", ".join(names), ", ".join(["it"] * step)),
            "            except KeyError:  # a value not cached yet",
            "                pass",
            "            else:",
            "                return len(lines)",
        ]
    else:
        code += ["            return len(lines)"]

    rx, named, skip = _shapes_rx(shapes, "any", captured)
    namespace["_findall"] = re.compile("(?m)^(?:" + _time_rx(ms) + rx + "|.*)$", re.ASCII).findall
    code += [
        "    found = _findall(text, 1)",
        "    if len(found) != len(lines):",
        "        return 0",
        "    k = -1",
        "    for t in found:",
        "        k += 1",
    ]
    first = True
    for n in captured:
        tag, groups = named[n]
        display = shapes[n].display(lambda k, groups=groups: "t[%d]" % (([1] + groups)[k] - 1))
        code += [
            "        %s t[%d]:" % ("if" if first else "elif", tag - 1),
            "            try:",
            "                append(%s)" % display,
            "            except KeyError:",
            "                if slow(lines[k]):",
            "                    return k + 1",
        ]
        first = False
    code += [
        "        %s t[%d]:" % ("if" if first else "elif", skip - 1),
        "            if ('\\r' in lines[k] or 'Traceback' in lines[k]) and slow(lines[k]):",
        "                return k + 1",
    ]
    for n in range(len(shapes)):
        if n in captured:
            continue
        code += [
            "        elif t[%d]:" % (named[n][0] - 1),
            "            r = _read_line(lines[k])",
            "            if r is _UNREAD:",
            "                if slow(lines[k]):",
            "                    return k + 1",
            "            elif r is not None:",
            "                append(r)",
        ]
    code += [
        "        elif slow(lines[k]):",
        "            return k + 1",
        "    return k + 1",
    ]
    exec(compile("\n".join(code) + "\n", "<spectui log chunk reader>", "exec"), namespace)
    return namespace["read_chunk"]


_read_line = _read_chunk = None
_set_readers([])


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
    # The beginnings read here (Decode batch, Prefill batch, Load weight, The server is
    # fired up, [gpu=N] of 2024, R/S lines that say "usually means") are those _SKIP_HEAD
    # does not skip.
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
        # sglang 0.2.0-0.2.5 "[gpu_id=0] Decode batch. ..." (managers/controller/tp_worker.py),
        # 0.2.6-0.2.13 "[gpu=0] Decode batch. ..." (managers/tp_worker.py)
        if msg.startswith("[gpu=") or msg.startswith("[gpu_id="):
            start = msg.find("=") + 1
            close = msg.find("] ")
            if close > start:
                rec2 = _parse_message(time, ranks, msg[close + 2:])
                if rec2 is not None and msg[start:close].isdigit():
                    rec2["gpu"] = int(msg[start:close])
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
        prefix = _split_loose(line)
        if prefix is None:
            return parse_progress(line)
        return _parse_message(prefix[0], prefix[1], prefix[2])
    time, ranks, msg = prefix
    rank_text = None
    if line[:1] == "[" and time is not None and len(time) >= 19:  # the fast readers' prefix
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
        traceback is pending, lines are read a chunk at a time by the learned shapes'
        regex (see "Learned shapes" in the source), the lines it cannot read one by one."""
        out: List[dict] = []
        extend = out.extend
        feed = self.feed

        def slow(line: str) -> bool:
            extend(feed(line))
            return self._tb is not None

        if not isinstance(lines, list):
            lines = list(lines)
        pos, end = 0, len(lines)
        while pos < end:
            if self._tb is None:
                chunk = lines[pos:pos + _CHUNK_LINES]
                done = _read_chunk(chunk, out.append, extend, slow)
                if done:
                    pos += done
                    continue
                for line in chunk:  # a line holds "\n": this chunk line by line
                    extend(feed(line))
                pos += len(chunk)
                continue
            extend(feed(lines[pos]))
            pos += 1
        return out

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
        if prefix is None:
            prefix = _split_loose(line)  # a batch line, say, without SGLang's prefix
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
