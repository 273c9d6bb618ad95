"""Parsing source files with ``ast`` for the source browser (cached, and forgiving of new syntax)."""

from __future__ import annotations

import ast
import os
import threading
from collections import OrderedDict

from .paths import is_binary, read_regular

# Parsed files kept in memory (the flag finder asks about the same server_args file many times).
CACHE_FILES = 16
PARSE_CAP_BYTES = 8 * 1024 * 1024


class ParsedFile(object):
    def __init__(self, path, text, tree):
        self.path = path
        self.text = text
        self.tree = tree
        self._lines = None

    @property
    def lines(self):
        if self._lines is None:
            self._lines = self.text.splitlines()
        return self._lines

    def segment(self, node, limit=2000):
        """The source text of ``node`` (or None), cut to ``limit`` characters."""
        try:
            seg = ast.get_source_segment(self.text, node)
        except Exception:
            seg = None
        if seg is not None and len(seg) > limit:
            seg = seg[:limit] + "..."
        return seg

    def line(self, n):
        return self.lines[n - 1] if 0 < n <= len(self.lines) else ""


class AstCache(object):
    def __init__(self, size=CACHE_FILES):
        self.size = size
        self._items = OrderedDict()
        self._lock = threading.Lock()

    def parse(self, real):
        """A ParsedFile, or None when the file cannot be read or parsed by this Python."""
        try:
            st = os.stat(real)
        except OSError:
            return None
        key = (real, st.st_mtime_ns, st.st_size)
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
                return hit
        try:
            data, _ = read_regular(real, real, PARSE_CAP_BYTES)
        except Exception:
            return None
        if is_binary(data):
            return None
        text = data.decode("utf-8", "replace")
        try:
            tree = ast.parse(text, filename=real)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        parsed = ParsedFile(real, text, tree)
        with self._lock:
            self._items[key] = parsed
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return parsed


def const_str(node):
    """The value of a string constant (implicit concatenation is already folded by the parser)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def call_name(node):
    """``f`` for ``f(...)`` and ``obj.f(...)``; None for other calls."""
    if not isinstance(node, ast.Call):
        return None
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def keyword(call, name):
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def walk_with_parents(tree):
    """``(node, parents)`` for every node, parents outermost first."""
    stack = [(tree, ())]
    while stack:
        node, parents = stack.pop()
        yield node, parents
        chain = parents + (node,)
        for child in reversed(list(ast.iter_child_nodes(node))):
            stack.append((child, chain))
