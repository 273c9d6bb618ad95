"""Reading a YAML file while keeping where every key and value came from.

PyYAML's ``safe_load`` throws the node marks away; profiles need them so that an error can say
``kimi-eagle3.yaml:7:5``. ``load_yaml`` composes the node tree with ``SafeLoader`` and builds the
Python value itself, recording the 1-based line and column of each key and value by their path
(``("args", "tp-size")``). It also rejects duplicate keys, which PyYAML would silently merge.

Before any value is built, the file is held to limits that no profile comes near, so a hostile
file (an alias "billion laughs", brackets nested a thousand deep, a log file opened by mistake)
is refused in one sentence naming the file and line instead of eating seconds and gigabytes:
``MAX_FILE_BYTES``, ``MAX_NODES`` (nodes once every alias is expanded), ``MAX_DEPTH``
(nesting, aliases expanded), and no alias inside the node it names. A character YAML does not allow
in a file (NUL, a raw ESC, other control characters: YAML 1.1's printable set) is refused the same
way, at its line and column.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from spectui.core.profiles.errors import ProfileError

FieldPath = tuple  # of str (mapping keys) and int (sequence indexes)

# A profile is a few KiB with some tens of keys; these bounds are far above any real one.
MAX_FILE_BYTES = 256 * 1024
MAX_NODES = 20_000
MAX_DEPTH = 64


@dataclass
class YamlDocument:
    """A parsed YAML file: its value and the marks of its keys and values."""

    path: str
    data: Any
    value_marks: dict[FieldPath, tuple[int, int]] = field(default_factory=dict)
    key_marks: dict[FieldPath, tuple[int, int]] = field(default_factory=dict)

    def where(self, fpath: FieldPath, *, key: bool = False) -> tuple[int | None, int | None]:
        """Line and column of the value (or key) at ``fpath``, falling back to its nearest parent."""
        marks = self.key_marks if key else self.value_marks
        probe = tuple(fpath)
        while True:
            if probe in marks:
                return marks[probe]
            if key and probe in self.value_marks:
                return self.value_marks[probe]
            if not probe:
                return (None, None)
            probe = probe[:-1]


def _mark(node: yaml.Node) -> tuple[int, int]:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


def yaml_problem(exc: yaml.YAMLError, path: str) -> ProfileError:
    """One-sentence ``ProfileError`` for a YAML syntax error (no source snippet: it may hold secrets)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    text = f"invalid YAML: {problem}"
    if context:
        text += f" ({context}"
        if context_mark is not None and mark is not None and context_mark.line != mark.line:
            text += f" at line {context_mark.line + 1}"
        text += ")"
    text += "; fix the YAML syntax there"
    return ProfileError(
        text,
        path=path,
        line=mark.line + 1 if mark is not None else None,
        column=mark.column + 1 if mark is not None else None,
    )


def _unprintable(exc: yaml.reader.ReaderError, text: str, path: str) -> ProfileError:
    """One sentence for a character YAML does not allow, located by its position in ``text``; the character
    itself is named by its code (never written: it may be an escape sequence)."""
    position = min(max(exc.position, 0), len(text))
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return ProfileError(f"the file holds the control character U+{exc.character:04X}, which YAML does not allow; "
                        "remove it (inside double quotes, write it as an escape such as \\x1b)",
                        path=path, line=line, column=column)


def _refusal(message: str, path: str, mark: yaml.Mark | None) -> ProfileError:
    return ProfileError(message, path=path, line=mark.line + 1 if mark is not None else None,
                        column=mark.column + 1 if mark is not None else None)


class _BoundedLoader(yaml.SafeLoader):
    """``SafeLoader`` that measures the node graph as it is composed, aliases expanded.

    Composing shares an anchored node between its aliases, so it stays cheap; what grows
    without bound is the value built from it. Each node's expanded size and depth are known
    when it is complete, and each alias adds its target's, so a bomb is refused at the alias
    that crosses a limit, before anything is built.
    """

    def __init__(self, text: str, path: str) -> None:
        super().__init__(text)
        self.path = path
        self._sizes: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded nodes, expanded depth)
        self._open = [[0, 0]]  # per collection being composed: [nodes below it, depth below it]

    def _add(self, size: int, depth: int, mark: yaml.Mark, alias: str | None) -> None:
        top = self._open[-1]
        top[0] += size
        top[1] = max(top[1], depth)
        total = sum(level[0] for level in self._open)
        if total > MAX_NODES:
            if alias is not None:
                raise _refusal(f"the alias *{alias} makes the YAML expand to more than {MAX_NODES} values "
                               "(aliases repeated inside aliases); write the values out or drop the anchors",
                               self.path, mark)
            raise _refusal(f"the YAML holds more than {MAX_NODES} values by this point, where a profile or "
                           "preset holds tens; check that this is the right file", self.path, mark)
        if depth + len(self._open) - 1 > MAX_DEPTH:
            what = f"the alias *{alias}" if alias is not None else "this value"
            raise _refusal(f"{what} nests the YAML more than {MAX_DEPTH} levels deep, where a profile or "
                           "preset needs a few; flatten it", self.path, mark)

    def compose_node(self, parent, index):  # noqa: ANN001 - PyYAML's signature
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            node = super().compose_node(parent, index)
            measured = self._sizes.get(id(node))
            if measured is None:  # its node is still being composed: it would hold itself
                raise _refusal(f"the alias *{event.anchor} refers to a node that contains it, "
                               "which has no end; point it at a complete node", self.path, event.start_mark)
            self._add(measured[0], measured[1], event.start_mark, event.anchor)
            return node
        if len(self._open) > MAX_DEPTH:
            raise _refusal(f"the YAML nests more than {MAX_DEPTH} levels deep here, where a profile or "
                           "preset needs a few; flatten it", self.path, event.start_mark)
        self._open.append([0, 0])
        try:
            node = super().compose_node(parent, index)
        finally:
            below, deepest = self._open.pop()
        measured = (1 + below, 1 + deepest)
        self._sizes[id(node)] = measured
        self._add(measured[0], measured[1], event.start_mark, None)
        return node


class _Builder:
    def __init__(self, loader: yaml.SafeLoader, doc: YamlDocument) -> None:
        self.loader = loader
        self.doc = doc

    def build(self, node: yaml.Node, fpath: FieldPath) -> Any:
        self.doc.value_marks[fpath] = _mark(node)
        if isinstance(node, yaml.MappingNode):
            self.loader.flatten_mapping(node)  # resolves YAML merge keys (<<)
            result: dict = {}
            for key_node, value_node in node.value:
                key = self.loader.construct_object(key_node, deep=True)
                if isinstance(key, (list, dict)):
                    line, col = _mark(key_node)
                    raise ProfileError(
                        "a mapping key must be a plain word, not a list or map",
                        path=self.doc.path, line=line, column=col,
                    )
                kpath = fpath + (key,)
                if key in result:
                    first_line, _ = self.doc.key_marks[kpath]
                    line, col = _mark(key_node)
                    raise ProfileError(
                        f"key {key!r} appears twice in the same map (first at line {first_line}); "
                        "keep only one",
                        path=self.doc.path, line=line, column=col,
                        field=".".join(str(p) for p in kpath),
                    )
                self.doc.key_marks[kpath] = _mark(key_node)
                result[key] = self.build(value_node, kpath)
            return result
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, fpath + (i,)) for i, item in enumerate(node.value)]
        return self.loader.construct_object(node, deep=True)


def parse_yaml(text: str, path: str | Path) -> YamlDocument:
    """Parse YAML ``text`` (one document) from ``path``; raise ``ProfileError`` on bad syntax."""
    spath = str(path)
    if len(text) > MAX_FILE_BYTES:
        raise _file_too_large(len(text.encode("utf-8", "replace")), spath)
    try:
        loader = _BoundedLoader(text, spath)   # checks every character first
    except yaml.reader.ReaderError as exc:
        raise _unprintable(exc, text, spath) from None
    try:
        try:
            node = loader.get_single_node()
            doc = YamlDocument(path=spath, data=None)
            if node is not None:
                doc.data = _Builder(loader, doc).build(node, ())
            return doc
        except yaml.YAMLError as exc:
            if isinstance(exc, yaml.composer.ComposerError) and "single document" in str(exc):
                mark = exc.problem_mark
                raise ProfileError(
                    "a profile file holds one YAML document, but this one starts a second; "
                    "put each profile in its own file",
                    path=spath,
                    line=mark.line + 1 if mark else None,
                    column=mark.column + 1 if mark else None,
                ) from None
            raise yaml_problem(exc, spath) from None
    finally:
        loader.dispose()


def _file_too_large(size: int, path: str) -> ProfileError:
    return ProfileError(f"the file holds {size} bytes, more than the {MAX_FILE_BYTES} a profile or preset "
                        "may have; check that it is the right file", path=path)


def load_yaml(path: str | Path) -> YamlDocument:
    """Read and parse a YAML file; unreadable and oversized files become a ``ProfileError`` too."""
    try:
        # opened without blocking, then checked: a FIFO or a device would block or never end
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ProfileError("this is not a regular file; point at a YAML file", path=str(path))
            raw = fh.read(MAX_FILE_BYTES + 1)
            if len(raw) > MAX_FILE_BYTES:
                raise _file_too_large(max(st.st_size, len(raw)), str(path))
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProfileError(f"cannot read the file as UTF-8 text ({exc.reason})", path=str(path)) from None
    except OSError as exc:
        raise ProfileError(f"cannot read the file: {exc.strerror or exc}", path=str(path)) from None
    return parse_yaml(text, path)
