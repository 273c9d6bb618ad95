"""No exception is swallowed without a word: outside the agent, a handler that catches everything
(``except:``, ``except Exception``, ``except BaseException``) must do more than ``pass``/``continue``:
log the reason, or catch something narrower."""

from __future__ import annotations

import ast
from pathlib import Path

import spectui

PACKAGE = Path(spectui.__file__).resolve().parent
BROAD = {"Exception", "BaseException"}


def _names(node: ast.expr | None) -> set[str]:
    if node is None:
        return {"<bare>"}
    if isinstance(node, ast.Tuple):
        return set().union(*(_names(e) for e in node.elts))
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):  # builtins.Exception
        return {node.attr}
    return set()


def _does_nothing(body: list[ast.stmt]) -> bool:
    return all(isinstance(s, (ast.Pass, ast.Continue))
               or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))  # a docstring or ``...``
               for s in body)


def silent_handlers(source: str, filename: str = "<source>") -> list[str]:
    """``file:line: except X`` for each handler that catches everything and does nothing."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.ExceptHandler) and _does_nothing(node.body):
            caught = _names(node.type)
            if caught & (BROAD | {"<bare>"}):
                found.append(f"{filename}:{node.lineno}: except {', '.join(sorted(caught))}")
    return found


def test_the_scan_finds_what_it_should():
    assert silent_handlers("try:\n    f()\nexcept Exception:\n    pass\n")
    assert silent_handlers("try:\n    f()\nexcept:\n    pass\n")
    assert silent_handlers("for x in y:\n    try:\n        f()\n    except (ValueError, BaseException):\n"
                           "        continue\n")
    assert silent_handlers("try:\n    f()\nexcept builtins.Exception:\n    ...\n")
    assert not silent_handlers("try:\n    f()\nexcept OSError:\n    pass\n")  # narrow: allowed
    assert not silent_handlers("try:\n    f()\nexcept Exception:\n    log.debug('why', exc_info=True)\n")


def test_no_silent_broad_except_outside_the_agent():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "agent":
            continue
        found += silent_handlers(path.read_text(encoding="utf-8"), str(rel))
    assert not found, "exceptions swallowed without a logged reason:\n" + "\n".join(found)
