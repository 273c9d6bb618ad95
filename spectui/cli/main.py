"""The ``spectui`` command line: one module per command group, each exposing ``register``.

A command's module is imported only when that command is chosen: ``spectui --help`` lists every command
from :data:`COMMANDS` without loading any of them (nor SSH, the console or the schema library), and
``spectui CMD --help`` shows the options its module registers.
"""

from __future__ import annotations

import argparse
import sys

from spectui.cli.output import closed_stdout_status, guarded_output
from spectui.core.paths import log_file

# Each command: the module under spectui.cli whose ``register(subparsers)`` adds it, and its line in
# ``spectui --help`` (the same words the module registers). The registered parser sets ``func`` (called
# with the parsed args, returns an exit status).
COMMANDS = {
    "status": ("status", "show a host's facts and one GPU sample, or one line for each of several hosts"),
    "profiles": ("profiles", "list and check server profiles"),
    "servers": ("servers", "list, describe, start, stop, adopt and switch SGLang servers on a host"),
    "source": ("source", "browse and search SGLang's source on a host"),
    "logs": ("logs", "read SGLang server logs"),
    "probe": ("probe", "measure the all-reduce cost of decode and verify steps, and predict the break-even L*"),
    "connect": ("console", "open the console on GPU hosts over SSH"),
    "demo": ("console", "open the console on the built-in simulated 8-GPU host"),
    "replay": ("console", "play a recorded session in the console (read-only)"),
    "bench": ("bench", "benchmark a server, or compare profiles against a baseline"),
    "tune": ("tune", "find the best speculative setting of a profile: predict, measure the best few, recommend"),
    "history": ("history", "benchmark runs and comparisons kept by spectui"),
    "recording": ("recording", "look into a recorded session, or export its series"),
    "exporter": ("exporter", "serve live Prometheus metrics of GPU hosts and their SGLang servers"),
    "config": ("config", "show the settings in force and where each came from"),
    "completion": ("completion", "print the shell completion script (bash, zsh or fish)"),
}
# Commands not listed in ``spectui --help``: the command and its module.
HIDDEN_COMMANDS = {"__complete": "completion"}  # called by the completion scripts
COMMAND_MODULES = list(dict.fromkeys(module for module, _ in COMMANDS.values()))


class _Commands(argparse._SubParsersAction):
    """The commands, each listed with its help line; a command's parser is built (its module imported)
    when the command is chosen, or by :meth:`load`."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for name, (_, help_line) in COMMANDS.items():
            self._choices_actions.append(self._ChoicesPseudoAction(name, (), help_line))
            self._name_parser_map[name] = None  # a valid choice; its parser comes with its module
        self._name_parser_map.update(dict.fromkeys(HIDDEN_COMMANDS))

    def load(self, name: str) -> argparse.ArgumentParser:
        """The parser of command ``name``, its module's commands registered on first use."""
        if self._name_parser_map[name] is None:
            scratch = argparse._SubParsersAction(option_strings=[], prog=self._prog_prefix,
                                                 parser_class=self._parser_class)
            # the import statement's machinery (not importlib's), so ``python -X importtime`` lists the module
            module_name = COMMANDS[name][0] if name in COMMANDS else HIDDEN_COMMANDS[name]
            module = __import__("spectui.cli." + module_name, fromlist=["register"])
            module.register(scratch)
            for registered, parser in scratch._name_parser_map.items():
                _add_log_options_below(parser)
                self._name_parser_map[registered] = parser
        return self._name_parser_map[name]

    def __call__(self, parser, namespace, values, option_string=None):
        self.load(values[0])
        super().__call__(parser, namespace, values, option_string)


class _Version(argparse._VersionAction):
    """``--version``: the installed version, read only when asked for, and the folder of the shipped data
    (profiles, presets, prompts, the Grafana dashboard)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from spectui import __version__
        from spectui.core.paths import shipped_data_dir

        data = shipped_data_dir("")
        kinds = ", ".join(sorted(p.name for p in data.iterdir() if p.is_dir() and not p.name.startswith("_")))
        sys.stdout.write(f"spectui {__version__}\nshipped data: {data} ({kinds})\n")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spectui",
        description="Terminal operator console for SGLang speculative decoding.",
    )
    parser.add_argument("--version", action=_Version)
    add_log_options(parser, None)
    parser.add_subparsers(dest="command", metavar="COMMAND", action=_Commands)
    return parser


def add_log_options(parser: argparse.ArgumentParser, default) -> None:
    """``--debug`` and ``--log-file``: global, and accepted after any command too (``spectui connect h --debug``)."""
    group = parser.add_argument_group("logging (see docs/debugging.md)")
    group.add_argument("--debug", action="store_true", default=default if default is not None else False,
                       help="log spectui's and the host agent's debug records (also: SPECTUI_LOG=debug)")
    group.add_argument("--log-file", metavar="PATH", default=default,
                       help=f"write the log to PATH (default: {log_file()}; also: SPECTUI_LOG=PATH)")


def _add_log_options_below(parser: argparse.ArgumentParser) -> None:
    """A command's parser and each of its sub-commands' take the log options too."""
    # SUPPRESS: a command's parser sets them only when given there, not over the global ones
    add_log_options(parser, argparse.SUPPRESS)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):
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
    import logging

    from spectui.core import logsetup

    try:
        config = logsetup.configure(debug=args.debug, log_file_path=args.log_file)
    except logsetup.LogSettingError as exc:
        print(f"spectui: {exc}", file=sys.stderr)
        return 2
    log = logging.getLogger(__name__)
    if log.isEnabledFor(logging.INFO):  # the version is read from the installed metadata only for the log
        from spectui import __version__
        from spectui.core.profiles.secret_flags import redact_argv

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
