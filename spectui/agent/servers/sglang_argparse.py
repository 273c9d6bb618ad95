"""Parsing launch commands with the host's own SGLang argument parser, launching nothing.

Standalone on purpose: the agent runs this file's source with the profile's interpreter
(``python -c``), the request as JSON on stdin and the answer as JSON on stdout. The parser is
built the way SGLang's launcher builds it (sglang 0.5.23 wheel,
sglang/srt/server_args.py:668 ``prepare_server_args``: ``argparse.ArgumentParser()``, then
``ServerArgs.add_cli_args(parser)``, then ``parser.parse_args(argv)``; 0.4.x and 0.3.x have the
same ``ServerArgs.add_cli_args``), so abbreviations (``--tp``), ambiguous prefixes and values
outside a flag's choices get exactly the verdict the server would give. ``error`` and ``exit``
are overridden to raise instead of exiting.

Request: ``{"parser": {"kind": "add_cli_args" | "parse_function", "target": "module:attr"},
"commands": [{"items": [[word, ...], ...]}, ...]}``; each item is one flag with its values.
Each command is parsed whole (the verdict) and item by item (to say which flag is wrong).
Deprecations are read as SGLang 0.5.23 marks them: ``Deprecated*Action`` classes that log a
warning (sglang/srt/arg_groups/argparse_actions.py:52), help text starting "Deprecated" or
"(Deprecated" (sglang/srt/server_args.py:441), and Python 3.13's ``deprecated=True``.
"""

import argparse
import contextlib
import difflib
import io
import json
import logging
import os
import re
import sys

log = logging.getLogger(__name__)

DEFAULT_PARSER = {"kind": "add_cli_args", "target": "sglang.srt.server_args:ServerArgs.add_cli_args"}
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_DEPRECATED_HELP_RE = re.compile(r"^\W*deprecated\b", re.IGNORECASE)


class ParseRefused(Exception):
    """argparse's ``error`` (or ``exit``) was called: the command would not start."""

    def __init__(self, message):
        Exception.__init__(self, message)
        self.message = message


def _raise_error(self, message):
    raise ParseRefused(message)


def _raise_exit(self, status=0, message=None):
    raise ParseRefused((message or "").strip() or "the parser exited with status %s" % status)


def _resolve(target):
    module_name, _, attr = target.partition(":")
    obj = __import__(module_name, fromlist=["_"])
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class _CapturedLog(logging.Handler):
    def __init__(self):
        logging.Handler.__init__(self, logging.WARNING)
        self.messages = []

    def emit(self, record):
        try:
            self.messages.append(_ANSI_RE.sub("", record.getMessage()).strip())
        except Exception:  # a record that cannot be formatted is dropped: logging it would come back here
            pass


class _Quiet(object):
    """Capture what a parse prints (help, warnings) and logs, so stdout stays the answer's."""

    def __enter__(self):
        self.out, self.err, self.log = io.StringIO(), io.StringIO(), _CapturedLog()
        self._redirects = [contextlib.redirect_stdout(self.out), contextlib.redirect_stderr(self.err)]
        for r in self._redirects:
            r.__enter__()
        logging.getLogger().addHandler(self.log)
        return self

    def __exit__(self, *exc):
        logging.getLogger().removeHandler(self.log)
        for r in reversed(self._redirects):
            r.__exit__(*exc)
        return False

    def warnings(self):
        lines = [_ANSI_RE.sub("", line).strip() for line in self.err.getvalue().splitlines()]
        return self.log.messages + [line for line in lines if "deprecat" in line.lower()]


def build_parser(spec, argv):
    """The host's parser. ``add_cli_args``: a fresh ArgumentParser given to that function (as
    SGLang's launcher does); ``parse_function``: the largest parser that function builds when
    asked to parse ``argv`` (for launchers that pick their flags from the command itself)."""
    fn = _resolve(spec["target"])
    if spec.get("kind", "add_cli_args") == "add_cli_args":
        parser = argparse.ArgumentParser()
        fn(parser)
        return parser
    seen = []
    original = argparse.ArgumentParser.parse_known_args

    def recording(self, args=None, namespace=None):
        seen.append(self)
        return original(self, args, namespace)

    argparse.ArgumentParser.parse_known_args = recording
    try:
        with _Quiet():
            try:
                fn(list(argv))
            except ParseRefused:
                pass
    finally:
        argparse.ArgumentParser.parse_known_args = original
    if not seen:
        raise RuntimeError("%s built no argument parser" % spec["target"])
    return max(seen, key=lambda p: len(p._actions))


def _long_options(parser):
    return sorted(s for s in parser._option_string_actions if s.startswith("--"))


def _canonical(action):
    longs = [s for s in action.option_strings if s.startswith("--")]
    return (longs or list(action.option_strings) or [action.dest])[0]


def _action_of(parser, word):
    """The action argparse would give ``word`` (None: not an option it knows); raises
    ParseRefused for an ambiguous abbreviation, as argparse does."""
    found = parser._parse_optional(word)
    if not found:
        return None, None
    if isinstance(found, list):  # Python 3.12.7+/3.13: a list of candidate tuples
        found = found[0]
    action, option_string = found[0], found[1]
    return action, option_string


def _plain(value):
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        if isinstance(value, (list, tuple, set, frozenset)):
            return [_plain(v) for v in value]
        return repr(value)


def _deprecation(action, option_string, warnings):
    for message in warnings:
        if "deprecat" in message.lower():
            return message
    if getattr(action, "deprecated", False) is True:
        return "option '%s' is deprecated" % option_string
    if "deprecated" in type(action).__name__.lower():
        new_flag = getattr(action, "new_flag", None)
        return "'%s' is deprecated%s" % (option_string, "; use '%s' instead" % new_flag if new_flag else "")
    help_text = action.help if isinstance(action.help, str) else ""
    if _DEPRECATED_HELP_RE.match(help_text):
        return "'%s': %s" % (option_string, " ".join(help_text.split()))
    return None


@contextlib.contextmanager
def _nothing_required(parser):
    """Parse one flag without argparse asking for the others (``--model-path`` is required)."""
    actions = [a for a in parser._actions if a.required]
    groups = [g for g in parser._mutually_exclusive_groups if g.required]
    for thing in actions + groups:
        thing.required = False
    try:
        yield
    finally:
        for thing in actions + groups:
            thing.required = True


def parse_item(parser, words):
    """One flag with its values, parsed alone: its error (missing required flags aside), the
    full option it resolves to, its value and any deprecation SGLang reports."""
    out = {"argv": list(words), "error": None, "option": None, "flag": None, "dest": None, "value": None,
           "deprecated": None, "help": None, "choices": None, "close": []}
    word = words[0] if words else ""
    try:
        action, option_string = _action_of(parser, word)
    except ParseRefused as exc:
        action, option_string = None, None
        out["error"] = exc.message
    if action is not None:
        out.update(option=option_string, flag=_canonical(action), dest=action.dest,
                   help=action.help if isinstance(action.help, str) else None,
                   choices=sorted(str(c) for c in action.choices) if action.choices is not None else None)
    elif word.startswith("--"):
        out["close"] = difflib.get_close_matches(word.split("=", 1)[0], _long_options(parser), n=3, cutoff=0.6)
    if out["error"] is not None:
        return out
    with _Quiet() as quiet, _nothing_required(parser):
        try:
            namespace = parser.parse_args(list(words))
        except ParseRefused as exc:
            namespace = None
            out["error"] = exc.message
    if action is not None:
        if namespace is not None and hasattr(namespace, action.dest):
            out["value"] = _plain(getattr(namespace, action.dest))
        out["deprecated"] = _deprecation(action, option_string, quiet.warnings())
    return out


def parse_command(parser, items):
    argv = [w for item in items for w in item]
    result = {"argv": argv, "error": None, "items": [parse_item(parser, item) for item in items]}
    with _Quiet():
        try:
            parser.parse_args(argv)
        except ParseRefused as exc:
            result["error"] = exc.message
    return result


def _sglang_version():
    try:
        from importlib import metadata
        return metadata.version("sglang")
    except Exception:
        log.debug('no installed distribution named sglang; reading its version elsewhere', exc_info=True)
    module = sys.modules.get("sglang")
    return getattr(module, "__version__", None)


def answer(request):
    spec = request.get("parser") or DEFAULT_PARSER
    commands = request.get("commands") or []
    argparse.ArgumentParser.error = _raise_error
    argparse.ArgumentParser.exit = _raise_exit
    out = {"imported": True, "reason": None, "python": sys.version.split()[0], "version": None,
           "parser": spec, "commands": []}
    parsers = {}
    for command in commands:
        items = [list(map(str, item)) for item in command.get("items") or []]
        argv = [w for item in items for w in item]
        key = spec.get("kind") == "add_cli_args" or tuple(argv)
        if key not in parsers:
            try:
                with _Quiet():
                    parsers[key] = build_parser(spec, argv)
            except BaseException as exc:  # an import or build failure is the answer, not a crash
                if isinstance(exc, KeyboardInterrupt):
                    raise
                module = spec["target"].partition(":")[0]
                text = " ".join(str(exc).split()) or type(exc).__name__
                return {"imported": False, "python": sys.version.split()[0], "parser": spec,
                        "reason": "could not import %s: %s: %s" % (module, type(exc).__name__, text)}
        out["commands"].append(parse_command(parsers[key], items))
    if spec.get("kind", "add_cli_args") == "add_cli_args":
        out["version"] = _sglang_version()
    return out


def main():
    request = json.loads(sys.stdin.read() or "{}")
    # What SGLang's imports print must not mix with the answer: fd 1 goes to stderr meanwhile.
    answer_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        result = answer(request)
    finally:
        sys.stdout.flush()
        os.dup2(answer_fd, 1)
    with os.fdopen(answer_fd, "w") as fh:
        fh.write(json.dumps(result))


if __name__ == "__main__":
    main()
