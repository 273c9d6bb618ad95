"""The ``spectui`` command line: one module per command group, each exposing ``register``."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from spectui import __version__
from spectui.cli.output import closed_stdout_status, guarded_output
from spectui.core import logsetup
from spectui.core.logsetup import LogSettingError
from spectui.core.paths import log_file
from spectui.core.profiles.secret_flags import redact_argv

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
    add_log_options(parser, None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module("spectui.cli." + name).register(sub)
    _add_log_options_below(parser)
    return parser


def add_log_options(parser: argparse.ArgumentParser, default) -> None:
    """``--debug`` and ``--log-file``: global, and accepted after any command too (``spectui connect h --debug``)."""
    group = parser.add_argument_group("logging (see docs/debugging.md)")
    group.add_argument("--debug", action="store_true", default=default if default is not None else False,
                       help="log spectui's and the host agent's debug records (also: SPECTUI_LOG=debug)")
    group.add_argument("--log-file", metavar="PATH", default=default,
                       help=f"write the log to PATH (default: {log_file()}; also: SPECTUI_LOG=PATH)")


def _add_log_options_below(parser: argparse.ArgumentParser) -> None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):
                # SUPPRESS: a command's parser sets them only when given there, not over the global ones
                add_log_options(child, argparse.SUPPRESS)
                _add_log_options_below(child)


def main(argv: list[str] | None = None) -> int:
    """Run one command; its exit status. A reader that goes away (``spectui status --json | head``)
    ends the command quietly with 141, as SIGPIPE ends shell tools."""
    try:
        try:
            with guarded_output():  # host text on a terminal: shown, never obeyed
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
        config = logsetup.configure(debug=args.debug, log_file_path=args.log_file)
    except LogSettingError as exc:
        print(f"spectui: {exc}", file=sys.stderr)
        return 2
    log = logging.getLogger(__name__)
    log.info("spectui %s: %s (log level %s)", __version__, " ".join(redact_argv(argv)), config.level_name)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        raise
    except Exception:
        log.exception("spectui %s ended by an error", args.command)
        raise
    finally:
        logsetup.reset()


if __name__ == "__main__":
    sys.exit(main())
