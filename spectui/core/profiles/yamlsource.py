"""Reading a YAML file while keeping where every key and value came from.

PyYAML's ``safe_load`` throws the node marks away; profiles need them so that an error can say
``kimi-eagle3.yaml:7:5``. ``load_yaml`` composes the node tree with ``SafeLoader`` and builds the
Python value itself, recording the 1-based line and column of each key and value by their path
(``("args", "tp-size")``). It also rejects duplicate keys, which PyYAML would silently merge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from spectui.core.profiles.errors import ProfileError

FieldPath = tuple  # of str (mapping keys) and int (sequence indexes)


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
    loader = yaml.SafeLoader(text)
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


def load_yaml(path: str | Path) -> YamlDocument:
    """Read and parse a YAML file; unreadable files become a ``ProfileError`` too."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ProfileError(f"cannot read the file as UTF-8 text ({exc.reason})", path=str(path)) from None
    except OSError as exc:
        raise ProfileError(f"cannot read the file: {exc.strerror or exc}", path=str(path)) from None
    return parse_yaml(text, path)
