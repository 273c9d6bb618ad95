"""The ``spectui`` command line: one module per command group, each exposing ``register``."""

from __future__ import annotations

import argparse
import importlib
import sys

from spectui import __version__
from spectui.cli.output import closed_stdout_status

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
    "tune",
    "history",
    "recording",
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
    """Run one command; its exit status. A reader that goes away (``spectui status --json | head``)
    ends the command quietly with 141, as SIGPIPE ends shell tools."""
    try:
        try:
            return _run(argv)
        finally:  # --help and --version end in SystemExit: they are flushed here too
            sys.stdout.flush()  # a pipe's buffered output fails here, not at the interpreter's exit
    except BrokenPipeError as exc:
        status = closed_stdout_status()
        if status is None:  # not stdout's reader: some other pipe this command wrote to
            print(f"spectui: a pipe this command wrote to was closed ({exc.strerror or exc})", file=sys.stderr)
            return 1
        return status


def _run(argv: list[str] | None) -> int:
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
