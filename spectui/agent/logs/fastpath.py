r"""Learned shapes: the fast path of a :class:`~.parser.LogParser`.

A server writes the same few batch-line shapes (the same prefix, keys and value forms)
for hours. After the generic reader (:mod:`.messages`) has read a batch line by its keys, the line's
shape is learned: its rank text, anchor and keys literal, its values captured (booleans
literal), and its record as a dict display in field order. The learned shapes and the
SGLang lines of no interest (HTTP access lines, ...) are compiled into regexes (the
timestamp once, then a branch per rank text, then a branch per shape) and into the
generated code that builds records from their groups:

* ``read_line(line)`` (parse_line): one ``fullmatch``; each branch ends in an empty
  marker group, so that ``m.lastindex`` names the shape that matched.
* ``read_chunk(...)`` (LogFeeder.feed_lines): the lines are joined, each after a
  newline, and when the text holds no "\r" and no traceback it is *split* by the regex
  of the shapes: each line of a shape gives its groups, in order, into one flat list,
  with the text between (the lines of no interest) -- no match object and no tuple per
  line, and nothing for the lines between but one check that they are all of no
  interest. One list comprehension then builds every record. Each group costs every
  matching line, so the shapes that capture are bounded (``_CAPTURED_GROUPS``).
  A text that cannot go that way (a line of no known shape, a value not cached yet, a
  loading line, a traceback) is read by ``findall`` with a regex that takes any line,
  a tuple per line: a line of no shape goes to ``slow`` (LogFeeder.feed), which reads
  it the ordinary way, and the generic reader learns its shape if it has one.

Tests check that every way gives the records the generic reader gives.
"""

from __future__ import annotations

import operator
import re
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from .prefix import Ranks
from .tracebacks import TRACEBACK

_HIGH_CARDINALITY = re.compile(r"(?:throughput|token|tflops|bw)$|^est_")
_VALUE_RX = r"[-.0-9A-Za-z%]+"
# After the timestamp, a line the generic reader returns None for by how its message
# begins: none of the beginnings messages.parse_message reads (an R or S line only when it says
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
MAX_SHAPES = 8  # per anchor, most recently learned first
CHUNK_LINES = 256  # lines per read_chunk: what a traceback's start can cost twice
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


def shape_of(kind: str, time: str, rank_text: str, ranks: Ranks, anchor: str, sep: str, has_iter: bool, keys: List[str], names: List[str], values: List[Any], trailing_comma: bool, formula: Optional[str]) -> Optional[_Shape]:
    """The shape of a batch line the generic reader has read, ``None`` for a line whose
    shape is not learned."""
    if not keys or len(keys) > 64 or len(set(names)) != len(names):
        return None
    if not keys[0].startswith(" ") or keys[0][1:2].isspace() or any(TRACEBACK in key for key in keys):
        return None
    if "]" in rank_text or "\r" in rank_text or "\n" in rank_text:
        return None
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
    return _Shape(rank_text, len(time) > 19, parts, fields)


UNREAD = object()  # a line the fast readers leave to the generic reader


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


def _captured(shapes: List[_Shape]) -> Tuple[Optional[bool], List[int]]:
    """Whether the chunk readers' timestamp has milliseconds (as the shape learned last),
    and the shapes whose values they capture: those seen last, decode first, with that
    timestamp, within a budget of groups."""
    ms = shapes[0].ms if shapes else None
    captured: List[int] = []
    budget = _CAPTURED_GROUPS
    for n, shape in enumerate(shapes):
        if shape.ms == ms and shape.value_count + 1 <= budget:
            captured.append(n)
            budget -= shape.value_count + 1
    return ms, captured


def define(code: List[str], namespace: Dict[str, Any]) -> Any:
    """The function that the source lines ``code`` define (``def NAME(...)`` first),
    its globals ``namespace``: the one place generated code runs. It only indexes the
    value cache, converts with ``int``/``float`` and builds dicts whose keys are the
    learned field names written with ``repr``.

    Measured to matter: ``LogFeeder.feed_lines`` with the generated readers (a dict
    display per shape in one list comprehension) reads ``bench/parse_speed.py``'s log
    about 1.8 times as fast as with the plain-Python readers below (template dicts filled
    by C-level ``map``/``zip``; ``LogParser(generated=False)``): 556k-711k against
    319k-337k lines/s on CPython 3.11, 501k against 273k on 3.8."""
    name = code[0][4:code[0].index("(")]
    exec(compile("\n".join(code) + "\n", "<spectui log %s>" % name, "exec"), namespace)
    return namespace[name]


def _generated_line_reader(shapes: List[_Shape], values: Dict[str, Any]) -> Any:
    """``read_line(line)``: the line's record if it is of one of ``shapes``, ``None`` for
    a line of no interest (holding neither ``"\\r"`` nor a traceback), else ``_UNREAD``."""
    namespace: Dict[str, Any] = {"_VALUES": values, "_UNREAD": UNREAD}
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
    return define(code, namespace)


def _generated_chunk_reader(shapes: List[_Shape], values: Dict[str, Any], read_line: Any) -> Any:
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
    ms, captured = _captured(shapes)
    namespace: Dict[str, Any] = {"_VALUES": values, "_UNREAD": UNREAD, "_read_line": read_line, "_TRACEBACK": TRACEBACK}

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
    return define(code, namespace)


def _tuple_getter(indices: List[int]) -> Callable[[Any], tuple]:
    if len(indices) == 1:
        index = indices[0]
        return lambda t: (t[index],)
    return operator.itemgetter(*indices)


def _plain_builder(shape: _Shape, index: Callable[[int], int], values: Dict[str, Any]) -> Callable[[Any], dict]:
    """``build(t)``: the record of a line of ``shape`` whose value groups' texts are in the
    sequence ``t``, the n-th at ``t[index(n)]`` (the timestamp is n = 0); a value that the
    cache ``values`` lacks raises KeyError. The record starts as a copy of a template
    holding the constants in field order, and each kind of conversion fills its fields
    at once."""
    template: Dict[str, Any] = {}
    by_how: Dict[str, Tuple[List[str], List[int]]] = {}
    n = 0
    for name, how, constant in shape.fields:
        template[name] = constant if how == "const" else None
        if how == "const":
            continue
        if how == "time":
            group = 0
        elif how.startswith("same:"):
            how, group = how[5:], constant
        else:
            n += 1
            group = n
        names, groups = by_how.setdefault(how, ([], []))
        names.append(name)
        groups.append(index(group))
    steps = []
    for how, (names, groups) in by_how.items():
        convert = {"time": None, "int": int, "float": float, "_VALUES": values.__getitem__}[how]
        steps.append((tuple(names), _tuple_getter(groups), convert))

    def build(t: Any) -> dict:
        rec = template.copy()
        for names, get, convert in steps:
            rec.update(zip(names, get(t) if convert is None else map(convert, get(t))))
        return rec

    return build


def _plain_line_reader(shapes: List[_Shape], values: Dict[str, Any]) -> Callable[[str], Any]:
    """As :func:`_generated_line_reader`, in plain Python."""
    rx, named, _ = _shapes_rx(shapes, "line")
    match = re.compile(_time_rx(None) + rx, re.ASCII).fullmatch
    builders: Dict[int, Tuple[Tuple[int, ...], Callable[[Any], dict]]] = {}
    for n, shape in enumerate(shapes):
        marker, groups = named[n]
        builders[marker] = (tuple([1] + groups), _plain_builder(shape, lambda k: k, values))

    def read_line(line: str) -> Any:
        m = match(line)
        if m is None:
            return UNREAD
        found = builders.get(m.lastindex)
        if found is None:
            return None if "\r" not in line and "Traceback" not in line else UNREAD
        groups, build = found
        try:
            return build(m.group(*groups) if len(groups) > 1 else (m.group(1),))
        except KeyError:  # a value not cached yet
            return UNREAD

    return read_line


def _plain_chunk_reader(shapes: List[_Shape], values: Dict[str, Any], read_line: Callable[[str], Any]) -> Callable[..., int]:
    """As :func:`_generated_chunk_reader`, in plain Python."""
    ms, captured = _captured(shapes)
    rx, named, _ = _shapes_rx(shapes, "known", captured)
    known = re.compile("(?m)\n" + _time_rx(ms, loose=True) + rx + "$", re.ASCII)
    split_known = known.split
    findall_skipped = re.compile("\n(?=%s%s)" % (_time_rx(ms, loose=True, group=False), _SKIP_HEAD.format("", "")), re.ASCII).findall
    step = known.groups + 1
    hot = []
    for n in captured:
        tag, groups = named[n]
        hot.append((tag, _plain_builder(shapes[n], lambda k, groups=groups: ([1] + groups)[k], values)))
    rx, named, skip = _shapes_rx(shapes, "any", captured)
    findall = re.compile("(?m)^(?:" + _time_rx(ms) + rx + "|.*)$", re.ASCII).findall
    one_by_one = []
    for n in captured:
        tag, groups = named[n]
        one_by_one.append((tag - 1, _plain_builder(shapes[n], lambda k, groups=groups: ([1] + groups)[k] - 1, values)))
    cold = [named[n][0] - 1 for n in range(len(shapes)) if n not in captured]

    def read_chunk(lines: List[str], append: Callable[[dict], None], extend: Callable[[List[dict]], None], slow: Callable[[str], bool]) -> int:
        text = "\n" + "\n".join(lines)
        if "\r" not in text and text.count("\n") == len(lines):  # no line holds a line break
            parts = split_known(text)
            others = "".join(parts[0::step])  # the lines of no shape; a traceback can only be there
            if TRACEBACK not in others and others.count("\n") == len(findall_skipped(others)):
                rows = zip(*[iter(parts)] * step)  # (text before, groups) per line of a shape
                try:
                    if len(hot) == 1:
                        records = list(map(hot[0][1], rows))
                    else:
                        records = []
                        add = records.append
                        for row in rows:
                            for tag, build in hot:
                                if row[tag]:
                                    add(build(row))
                                    break
                except KeyError:  # a value not cached yet
                    pass
                else:
                    extend(records)
                    return len(lines)
        found = findall(text, 1)
        if len(found) != len(lines):
            return 0
        for k, t in enumerate(found):
            for tag, build in one_by_one:
                if t[tag]:
                    try:
                        append(build(t))
                    except KeyError:
                        if slow(lines[k]):
                            return k + 1
                    break
            else:
                if t[skip - 1]:
                    if ("\r" in lines[k] or "Traceback" in lines[k]) and slow(lines[k]):
                        return k + 1
                elif any(t[tag] for tag in cold):
                    r = read_line(lines[k])
                    if r is UNREAD:
                        if slow(lines[k]):
                            return k + 1
                    elif r is not None:
                        append(r)
                elif slow(lines[k]):
                    return k + 1
        return len(lines)

    return read_chunk


class LearnedShapes:
    """A parser's learned shapes and the fast readers made of them (see above).

    ``read_line(line)``: the record of a line of a learned shape, ``None`` for a line of
    no interest, :data:`UNREAD` for any other. ``read_chunk(lines, append, extend,
    slow)``: see :func:`_generated_chunk_reader`. ``values`` is the parser's value cache,
    which the generic reader fills and the fast readers index. ``generated``: the fast
    readers are generated code (see :func:`define`), else plain Python."""

    def __init__(self, values: Dict[str, Any], generated: bool = True) -> None:
        self.values = values
        self.generated = generated
        self.shapes: Dict[str, List[_Shape]] = {"decode": [], "prefill": []}
        self._seen: Dict[str, None] = {}  # every shape learned (bounded): each is learned once
        self.read_line: Callable[[str], Any] = lambda line: UNREAD
        self.read_chunk: Callable[..., int] = lambda lines, append, extend, slow: 0
        self._compile()

    def learn(self, kind: str, *line: Any) -> None:
        """Told by the generic reader of a batch line it read (see :func:`shape_of`)."""
        shape = shape_of(kind, *line)
        if shape is None:
            return
        seen = repr((shape.rank_text, shape.ms, shape.parts, shape.fields))
        if seen in self._seen or len(self._seen) >= 256:
            return
        self._seen[seen] = None
        shapes = self.shapes[kind]
        shapes.insert(0, shape)
        del shapes[MAX_SHAPES:]
        self._compile()

    def _compile(self) -> None:
        shapes = self.shapes["decode"] + self.shapes["prefill"]  # decode first: most lines are
        if self.generated:
            self.read_line = _generated_line_reader(shapes, self.values)
            self.read_chunk = _generated_chunk_reader(shapes, self.values, self.read_line)
        else:
            self.read_line = _plain_line_reader(shapes, self.values)
            self.read_chunk = _plain_chunk_reader(shapes, self.values, self.read_line)
