"""The ``spectui`` command line: one module per command group, each exposing ``register``."""

from __future__ import annotations

import argparse
import importlib
import sys

from spectui import __version__

# Each entry is a module under spectui.cli with ``register(subparsers)``; the registered
# parser sets ``func`` (called with the parsed args, returns an exit status).
COMMAND_MODULES = [
    "status",
    "profiles",
    "servers",
    "source",
    "logs",
    "probe",
    "console",
    "bench",
    "history",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spectui",
        description="Terminal operator console for SGLang speculative decoding.",
    )
    parser.add_argument("--version", action="version", version="spectui " + __version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module("spectui.cli." + name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    args.argv = argv  # for messages that give the exact command to run next
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
