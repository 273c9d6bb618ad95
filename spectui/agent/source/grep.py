"""Regex search over a source tree, fast enough to stand next to ``grep -rnE``.

How it keeps up in Python: files are read as bytes with one ``os.read``. The regex is parsed
once into a plan (``LiteralPlan``): literals every match must contain, checked with
``bytes.find`` to dismiss a file, and the most selective run of single-byte positions a match
needs (``speculative_num``, ``[0-9]{6}``, ``^@``, ``foo()$``), found in the file directly or in
its ``bytes.translate`` image when the run holds byte classes. The compiled bytes regex then
runs only on the lines where that run occurs (or over the whole file when it occurs too often,
or there is none), and line numbers are counted only up to the hits. Binary files (a NUL in the
first block) are skipped, and so are symlinks and special files, as ``grep -r`` does.

Semantics follow ``grep -n``: one hit per matching line; a match is never allowed to span
lines (a pattern such as ``\\s`` that would cross a newline is retried on the line alone).
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
import stat
import time

from ..protocol import AgentError
from .paths import BINARY_SNIFF_BYTES

try:  # Python 3.11+
    from re import _constants as _sre_c  # type: ignore
    from re import _parser as _sre_parse  # type: ignore
except ImportError:  # Python 3.8 - 3.10
    import sre_constants as _sre_c  # type: ignore
    import sre_parse as _sre_parse  # type: ignore

SKIP_DIRS = frozenset([".git", ".hg", ".svn", "__pycache__"])
# Files larger than this are not searched (they are data, not source).
GREP_FILE_CAP = 64 * 1024 * 1024
# A hit's line is cut to this many characters (around the match) for display.
HIT_TEXT_CHARS = 400
DEFAULT_MAX_HITS = 1000
MAX_HITS_LIMIT = 20000

_REPEATS = tuple(getattr(_sre_c, n) for n in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_sre_c, n))


class SearchDeadline(Exception):
    """The search ran past its deadline; ``path`` is the file it was searching (None between files)."""

    def __init__(self, path=None):
        Exception.__init__(self, path)
        self.path = path


def compile_pattern(pattern, ignore_case=False):
    if not isinstance(pattern, str) or pattern == "":
        raise AgentError("bad_pattern", "the search pattern is empty")
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    try:
        return re.compile(pattern.encode("utf-8"), flags)
    except re.error as exc:
        raise AgentError("bad_pattern", "%r is not a valid regular expression: %s" % (pattern, exc))


def _literal_runs(seq, out):
    """Append to ``out`` every run of literal bytes that a match of the parsed ``seq`` must contain."""
    run = bytearray()
    for op, av in seq:
        if op is _sre_c.LITERAL:
            run.append(av)
            continue
        if run:
            out.append(bytes(run))
            run = bytearray()
        if op is _sre_c.SUBPATTERN:
            add_flags, del_flags = av[1], av[2]
            if not (add_flags or del_flags):  # scoped flags change what a literal means
                _literal_runs(av[-1], out)
        elif op in _REPEATS and av[0] >= 1:
            _literal_runs(av[2], out)
        elif op is _sre_c.BRANCH:
            alts = _alternatives(av[1])
            if alts and len(set(alts)) == 1:  # every branch needs the same literal
                out.append(alts[0])
        # IN, ANY, AT, NOT_LITERAL, ...: no single required literal here; the run ends
    if run:
        out.append(bytes(run))
    return out


def _alternatives(branches):
    """The longest literal each branch of an alternation needs (None if one needs none)."""
    alts = []
    for branch in branches:
        runs = _literal_runs(branch, [])
        if not runs:
            return None
        alts.append(max(runs, key=len))
    return alts


def _branch_alternatives(seq):
    """For a pattern that is one alternation (``a|b|c``, anchors aside), the literal each branch needs."""
    items = [it for it in seq if it[0] is not _sre_c.AT]
    while len(items) == 1 and items[0][0] is _sre_c.SUBPATTERN and not (items[0][1][1] or items[0][1][2]):
        items = [it for it in items[0][1][-1] if it[0] is not _sre_c.AT]
    if len(items) != 1 or items[0][0] is not _sre_c.BRANCH:
        return None
    return _alternatives(items[0][1][1])


_ALL = frozenset(range(256))
_NL = 10
_DIGIT = frozenset(range(48, 58))
_WORD = frozenset(list(range(48, 58)) + list(range(65, 91)) + list(range(97, 123)) + [95])
_SPACE = frozenset([9, 10, 11, 12, 13, 32])
_CATEGORIES = {"CATEGORY_DIGIT": _DIGIT, "CATEGORY_NOT_DIGIT": _ALL - _DIGIT, "CATEGORY_WORD": _WORD,
               "CATEGORY_NOT_WORD": _ALL - _WORD, "CATEGORY_SPACE": _SPACE, "CATEGORY_NOT_SPACE": _ALL - _SPACE}
MAX_NEEDLE = 32
MIN_NEEDLE_BITS = 12.0


def _byte_set(op, av):
    """The bytes one pattern item matches, or None when it is not a single-byte item."""
    if op is _sre_c.LITERAL:
        return frozenset([av])
    if op is _sre_c.NOT_LITERAL:
        return _ALL - frozenset([av])
    if op is _sre_c.ANY:
        return _ALL - frozenset([_NL])
    if op is _sre_c.IN:
        out = set()
        negate = False
        for iop, iav in av:
            if iop is _sre_c.NEGATE:
                negate = True
            elif iop is _sre_c.LITERAL:
                out.add(iav)
            elif iop is _sre_c.RANGE:
                out.update(range(iav[0], iav[1] + 1))
            elif iop is _sre_c.CATEGORY and str(iav) in _CATEGORIES:
                out.update(_CATEGORIES[str(iav)])
            else:
                return None
        return _ALL - frozenset(out) if negate else frozenset(out)
    return None


def _set_runs(seq, runs, cur):
    """Split a parsed sequence into runs of consecutive single-byte positions (each a byte set).

    ``^`` and ``$`` (line anchors here) become a newline position at the run's start or end;
    the search checks those around each occurrence (a file's first and last line included).
    """
    for op, av in seq:
        if op is _sre_c.AT and str(av) in ("AT_BEGINNING", "AT_BEGINNING_LINE"):
            if cur:
                runs.append(cur)
            cur = [frozenset([_NL])]
            continue
        if op is _sre_c.AT and str(av) in ("AT_END", "AT_END_LINE"):
            cur.append(frozenset([_NL]))
            runs.append(cur)
            cur = []
            continue
        if op is _sre_c.SUBPATTERN and not (av[1] or av[2]):
            cur = _set_runs(av[-1], runs, cur)
            continue
        if op in _REPEATS and len(av[2]) == 1:
            lo, hi, item = av[0], av[1], av[2][0]
            bs = _byte_set(item[0], item[1])
            if bs is not None and lo >= 1:
                cur.extend([bs] * min(lo, MAX_NEEDLE))
            if bs is None or lo != hi:
                if cur:
                    runs.append(cur)
                cur = []
            continue
        bs = _byte_set(op, av)
        if bs is None:
            if cur:
                runs.append(cur)
            cur = []
        else:
            cur.append(bs)
    return cur


def _bits(s):
    if s == frozenset([_NL]):
        return 5.0  # a line is some 40 bytes long: a newline is not rare
    return math.log(256.0 / len(s), 2)


def _best_needle(runs):
    """The most selective stretch of a run whose sets are pairwise equal or disjoint (so each set
    can be one code of a translation table)."""
    best, best_bits = None, 0.0
    for run in runs:
        for i in range(len(run)):
            distinct = []
            bits = 0.0
            for j in range(i, min(len(run), i + MAX_NEEDLE)):
                s = run[j]
                if s not in distinct:
                    if any(s & d for d in distinct):
                        break
                    distinct.append(s)
                bits += _bits(s)
                if bits > best_bits:
                    best, best_bits = run[i:j + 1], bits
    return best, best_bits


class LiteralPlan(object):
    """What a file must contain before the regex is worth running, and where to look in it.

    ``all_of``: literals every match contains (longest first); ``any_of``: for an alternation,
    one literal per branch, at least one of which a match contains. Both are checked with
    ``bytes.find`` to dismiss files. ``needle``: the most selective run of single-byte positions
    a match needs (``[0-9]{6}``, ``^#``, ``foo()$``), searched in a haystack where each position's
    byte set is one code (``bytes.translate``) so that line-by-line search starts only at its
    occurrences. Nothing found: the regex runs over the whole file.
    """

    def __init__(self, rx):
        self.fold = bool(rx.flags & re.IGNORECASE)
        self.all_of = []
        self.any_of = []
        self.needle = None
        self.table = None           # translation for the needle's haystack (None: the bytes as they are)
        self.nl_before = False      # the needle must follow a newline or the file's start (``^...``)
        self.nl_after = False       # ... and precede a newline or the file's end (``...$``)
        self.nl_code = _NL          # what a newline is in the haystack
        try:
            parsed = _sre_parse.parse(rx.pattern, rx.flags)
        except Exception:
            return
        runs = sorted(dict.fromkeys(_literal_runs(parsed, [])), key=len, reverse=True)  # stable: ties in order
        self.all_of = [r.lower() if self.fold else r for r in runs if len(r) >= 2]
        if not self.all_of:
            alts = _branch_alternatives(parsed)
            if alts and all(len(a) >= 2 for a in alts):
                self.any_of = [a.lower() if self.fold else a for a in alts]
        set_runs = []
        tail = _set_runs(parsed, set_runs, [])
        if tail:
            set_runs.append(tail)
        if self.fold:
            set_runs = [[frozenset(s) | frozenset(b ^ 0x20 for b in s if 65 <= (b & 0xDF) <= 90) for s in run]
                        for run in set_runs]
        needle, bits = _best_needle(set_runs)
        if needle is None or bits < MIN_NEEDLE_BITS:
            return
        nl = frozenset([_NL])
        self.nl_before = needle[0] == nl
        self.nl_after = len(needle) > 1 and needle[-1] == nl
        core = needle[(1 if self.nl_before else 0):(len(needle) - 1 if self.nl_after else len(needle))]
        if not core:
            return
        if all(len(s) == 1 for s in core) and not self.fold and nl not in core:
            self.needle = bytes(next(iter(s)) for s in core)
            return
        codes = {}
        for s in needle:
            codes.setdefault(s, len(codes) + 1)
        table = bytearray(256)
        for s, code in codes.items():
            for b in s:
                table[b] = code
        self.table = bytes(table)
        self.nl_code = self.table[_NL]
        self.needle = bytes(codes[s] for s in core)

    @property
    def anchor(self):
        """The plain literal that line-by-line search looks for (it must not hold a newline)."""
        if self.all_of and b"\n" not in self.all_of[0]:
            return self.all_of[0]
        return None

    def admits(self, haystack):
        for lit in self.all_of:
            if lit not in haystack:
                return False
        if self.any_of:
            return any(lit in haystack for lit in self.any_of)
        return True

    def needle_hay(self, data):
        """Where to look for ``needle``: the bytes themselves, or their translation (same offsets)."""
        return data.translate(self.table) if self.table is not None else data


def _hit_text(line, col):
    if line.endswith(b"\r"):
        line = line[:-1]
    if len(line) > HIT_TEXT_CHARS:
        start = max(0, min(col - HIT_TEXT_CHARS // 4, len(line) - HIT_TEXT_CHARS))
        line = line[start:start + HIT_TEXT_CHARS]
    return line.decode("utf-8", "replace")


def search_bytes(rx, data, limit):
    """``[(line_no, col, line_bytes)]`` for up to ``limit`` matching lines of ``data`` (regex over the file)."""
    out = []
    n = len(data)
    pos = 0
    line_no = 1
    counted = 0
    search = rx.search
    while pos <= n:
        m = search(data, pos)
        if m is None:
            break
        s = m.start()
        ls = data.rfind(b"\n", 0, s) + 1
        if ls == n and n > 0:  # an empty match after the last newline is no line
            break
        le = data.find(b"\n", s)
        if le < 0:
            le = n
        if m.end() > le:  # the match crossed a newline: grep matches lines, so try this one alone
            m2 = search(data[ls:le])
            if m2 is None:
                pos = le + 1
                continue
            col = m2.start()
        else:
            col = s - ls
        line_no += data.count(b"\n", counted, ls)
        counted = ls
        out.append((line_no, col, data[ls:le]))
        if len(out) >= limit:
            break
        pos = le + 1
    return out


def search_anchored(rx, data, anchor, haystack, limit, nl_before=False, nl_after=False, nl_code=_NL):
    """Like ``search_bytes``, but the regex runs only on the lines where ``anchor`` occurs.

    ``haystack`` has ``data``'s offsets: ``data`` itself, ``data.lower()`` for a case-insensitive
    search, or its translation for a needle of byte classes. ``nl_before``/``nl_after``: an
    occurrence counts only at a line's start/end (``nl_code`` is a newline in the haystack).
    """
    out = []
    n = len(data)
    tail = [-1]
    if nl_after and len(anchor) > 1:  # look for the newline too (a lone byte is faster alone);
        # an unterminated last line is then checked on its own
        if haystack.endswith(anchor) and not data.endswith(b"\n"):
            tail[0] = n - len(anchor)
        anchor = anchor + bytes([nl_code])
        nl_after = False
    find = haystack.find

    def after(start):
        j = find(anchor, start)
        if j < 0 and tail[0] >= start:
            j, tail[0] = tail[0], -1
        return j

    search = rx.search
    line_no = 1
    counted = 0
    i = after(0)
    while i >= 0:
        if (nl_before and i > 0 and haystack[i - 1] != nl_code) or \
                (nl_after and i + 1 < n and haystack[i + 1] != nl_code):
            i = after(i + 1)
            continue
        ls = data.rfind(b"\n", 0, i) + 1 if i > 0 else 0
        le = data.find(b"\n", i)
        if le < 0:
            le = n
        m = search(data, ls, le)
        if m is not None:
            line_no += data.count(b"\n", counted, ls)
            counted = ls
            out.append((line_no, m.start() - ls, data[ls:le]))
            if len(out) >= limit:
                break
        if le >= n:
            break
        i = after(le + 1)
    return out


def search_file(rx, plan, data, limit):
    """Matching lines of one file's bytes, or [] (using the literal plan to skip work)."""
    hay = data.lower() if plan.fold and (plan.all_of or plan.any_of) else data
    if not plan.admits(hay):
        return []
    if plan.needle is not None:
        hay = plan.needle_hay(data)
        key = plan.needle + bytes([plan.nl_code]) if plan.nl_after and len(plan.needle) > 1 else plan.needle
        count = hay.count(key) + (1 if key != plan.needle and hay.endswith(plan.needle) else 0)
        if count == 0:
            return []
        if count <= max(64, len(data) // 64):
            return search_anchored(rx, data, plan.needle, hay, limit, plan.nl_before, plan.nl_after, plan.nl_code)
        return search_bytes(rx, data, limit)
    anchor = plan.anchor
    if anchor is not None and hay.count(anchor) <= max(64, len(data) // 256):
        return search_anchored(rx, data, anchor, hay, limit)
    return search_bytes(rx, data, limit)


class GrepStats(object):
    def __init__(self):
        self.files_scanned = 0
        self.files_matched = 0
        self.binary_skipped = 0
        self.large_skipped = 0
        self.unreadable = 0
        self.hits = 0
        self.truncated = False
        self.cancelled = False

    def to_dict(self):
        return dict(self.__dict__)


def iter_files(top, include=None):
    """Regular files under ``top`` in name order; symlinks and special files are not followed."""
    stack = [top]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for e in entries:
            try:
                if e.is_symlink():
                    continue
                if e.is_dir(follow_symlinks=False):
                    if e.name not in SKIP_DIRS:
                        subdirs.append(e.path)
                elif e.is_file(follow_symlinks=False):
                    if include is None or any(fnmatch.fnmatchcase(e.name, g) for g in include):
                        yield e.path
            except OSError:
                continue
        stack.extend(reversed(subdirs))


def _read_text(path, stats):
    """The file's bytes, or None for binary, oversized or unreadable files."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        stats.unreadable += 1
        return None
    try:
        head = os.read(fd, BINARY_SNIFF_BYTES)
        if b"\0" in head:
            stats.binary_skipped += 1
            return None
        if len(head) < BINARY_SNIFF_BYTES:
            return head
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size > GREP_FILE_CAP:
            stats.large_skipped += 1
            return None
        chunks = [head]
        while True:
            b = os.read(fd, max(st.st_size - BINARY_SNIFF_BYTES, 0) + 65536)
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    except OSError:
        stats.unreadable += 1
        return None
    finally:
        os.close(fd)


def grep_tree(top, rx, display, include=None, max_hits=DEFAULT_MAX_HITS, on_hits=None, cancelled=None,
              batch=200, flush_s=0.1):
    """Search the tree under ``top``; returns ``(hits, stats)``.

    ``display(path) -> str`` names a file in hits. ``on_hits(list)``, when given, receives hits
    as they are found, in batches of at most ``batch`` (or older than ``flush_s``), and they are
    then not kept in the returned list.
    ``include``: file name globs (``["*.py"]``); ``cancelled() -> bool`` is polled between files.
    A ``SearchDeadline`` raised inside (by a deadline alarm) leaves with the file it was searching.
    """
    plan = LiteralPlan(rx)
    stats = GrepStats()
    kept = []
    pending = []
    last_flush = time.monotonic()
    path = None
    try:
        for path in iter_files(top, include):
            if cancelled is not None and cancelled():
                stats.cancelled = True
                break
            stats.files_scanned += 1
            data = _read_text(path, stats)
            if not data:
                continue
            found = search_file(rx, plan, data, max_hits - stats.hits)
            if not found:
                continue
            stats.files_matched += 1
            name = display(path)
            hits = [{"path": name, "line": ln, "col": col, "text": _hit_text(line, col)} for ln, col, line in found]
            stats.hits += len(hits)
            if on_hits is None:
                kept.extend(hits)
            else:
                pending.extend(hits)
                while len(pending) >= batch:  # events stay small, whatever one file holds
                    on_hits(pending[:batch])
                    pending = pending[batch:]
                    last_flush = time.monotonic()
                if pending and time.monotonic() - last_flush >= flush_s:
                    on_hits(pending)
                    pending = []
                    last_flush = time.monotonic()
            if stats.hits >= max_hits:
                stats.truncated = True
                break
    except SearchDeadline as exc:  # raised by a deadline alarm: say which file took the time
        if exc.path is None and path is not None:
            exc.path = display(path)
        raise
    if on_hits is not None and pending:
        on_hits(pending)
    return kept, stats
