"""The headless core: what the console and the command line share, with no Textual.

A package here that gathers its modules' names (``bench``, ``tune``, ``probe``, ``source``) loads each module when
one of its names is first asked for (:func:`lazy_exports`): importing one module of the package, or one name, does
not load the others, so a command, or the console's first frame, loads only what it uses.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, list[str]]) -> tuple[Callable[[str], object],
                                                                          Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` (PEP 562) of ``package`` whose ``exports`` are each of its modules (by
    short name) and the names it gives: a name is imported from its module when first asked for, then kept on the
    package. A module of the package is imported when asked for by name, as though the package had loaded it."""
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            if not name.startswith("__"):
                try:
                    return importlib.import_module(f"{package}.{name}")
                except ModuleNotFoundError as exc:
                    if exc.name != f"{package}.{name}":
                        raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__
