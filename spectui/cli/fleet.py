"""Commands that ask several hosts at once (``status``, ``servers list`` with ``-H`` repeated).

Every host is asked concurrently and within a time limit, so a host that is down or slow never holds
up the others' answers; a host that fails keeps its one-sentence error, and the others still print.
A host key that is not known is that host's error, never a question. An encrypted identity file asks
for its passphrase once, on a terminal, and the hosts that needed it are asked again.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import sys
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from spectui.cli.hostopts import host_option_words, host_settings, ssh_options, trust_hint
from spectui.core.aio import within
from spectui.core.errors import HostKeyChanged, HostKeyError, HostUnreachable, KeyPassphraseNeeded, SpectuiError
from spectui.core.session import HostTarget
from spectui.core.textsafe import visible

#: each host's whole question (connect, agent, answers) may take this many times the connect timeout
HOST_LIMIT_FACTOR = 2.0


@dataclass
class HostAnswer:
    """One host's answer to a question: its ``result``, or the ``error`` that ended it."""

    dest: str
    target: HostTarget
    result: Any = None
    error: SpectuiError | None = None


def error_json(exc: SpectuiError, schema: str) -> dict:
    """The JSON object of a failed command: ``{"schema", "error": {"kind", "message", ...}}``, with the key's
    fields for a host-key error."""
    d = {"schema": schema, "error": {"kind": type(exc).__name__, "message": str(exc)}}
    if isinstance(exc, HostKeyError):
        d["error"].update(fingerprint=exc.fingerprint, key_type=exc.key_type, host=exc.host, port=exc.port,
                          changed=isinstance(exc, HostKeyChanged))
    return d


def host_limit_s(args: argparse.Namespace) -> float:
    """How long one host may take to answer: :data:`HOST_LIMIT_FACTOR` times the connect timeout."""
    return HOST_LIMIT_FACTOR * ssh_options(args, host_settings(args)).connect_timeout


async def _ask(dest: str, target: HostTarget, fn: Callable[[HostTarget], Awaitable], limit_s: float) -> HostAnswer:
    try:
        return HostAnswer(dest, target, result=await within(fn(target), limit_s))
    except asyncio.TimeoutError:
        return HostAnswer(dest, target, error=HostUnreachable(
            f"{dest} did not answer within {limit_s:g} s ({HOST_LIMIT_FACTOR:g} times the connect timeout); "
            "give a slow host more time with --connect-timeout."))
    except SpectuiError as exc:
        return HostAnswer(dest, target, error=exc)


def ask_hosts(dests: list[str], targets: list[HostTarget], fn: Callable[[HostTarget], Awaitable],
              limit_s: float) -> list[HostAnswer]:
    """``fn(target)`` on every host at once; one answer per host, in the order given."""

    async def ask_all(pairs):
        return list(await asyncio.gather(*(_ask(d, t, fn, limit_s) for d, t in pairs)))

    answers = asyncio.run(ask_all(list(zip(dests, targets))))
    locked = [i for i, a in enumerate(answers) if isinstance(a.error, KeyPassphraseNeeded) and a.target.kind == "ssh"]
    if locked and sys.stdin.isatty():
        passphrase = getpass.getpass("Passphrase for your SSH key: ")
        for i in locked:
            answers[i].target.ssh.passphrase = passphrase
        for i, again in zip(locked, asyncio.run(ask_all([(answers[i].dest, answers[i].target) for i in locked]))):
            answers[i] = again
    return answers


def report_errors(answers: list[HostAnswer], args: argparse.Namespace, command: list[str], *,
                  sentences: bool) -> None:
    """On stderr, for each host that failed: its sentence (with ``sentences``), and for an unknown host key
    the command that trusts it, for that host alone."""
    for a in answers:
        if a.error is None:
            continue
        hint = trust_hint(a.error, [*command, "--host", a.dest, *host_option_words(args)])
        text = "\n".join(t for t in (str(a.error) if sentences else None, hint) if t)
        if text:
            print(f"spectui: {a.dest}: {text}", file=sys.stderr)


def print_answers(args: argparse.Namespace, answers: list[HostAnswer], *, schema: str, hosts_schema: str,
                  render: Callable[[list[HostAnswer]], str], command: list[str]) -> int:
    """Print every host's answer as one table (``render``) or, with ``--json``, one object
    ``{"schema": hosts_schema, "hosts": [...]}`` (each host's own object, or its error object, with ``dest``);
    0 when every host answered, else 1."""
    if args.json:
        hosts = [{"dest": a.dest, **(a.result if a.error is None else error_json(a.error, schema))} for a in answers]
        print(json.dumps({"schema": hosts_schema, "hosts": hosts}, indent=2))
    else:
        print(render(answers))
    sys.stdout.flush()
    report_errors(answers, args, command, sentences=args.json)
    return 1 if any(a.error is not None for a in answers) else 0


def table(header: list[str], rows: list[list[str]], *, right: tuple[int, ...] = ()) -> str:
    """Columns aligned to their widest cell (those in ``right`` to the right); a row shorter than the header
    ends in a cell that runs on past the remaining columns (an error's sentence). A cell's control characters
    are shown (:func:`~spectui.core.textsafe.visible`) before it is measured."""
    rows = [[visible(c) for c in r] for r in rows]
    widths = [len(h) for h in header]
    for r in rows:
        for i, c in enumerate(r if len(r) == len(header) else r[:-1]):
            widths[i] = max(widths[i], len(c))

    def line(cells: list[str]) -> str:
        last = len(cells) - 1
        out = [c if i == last and len(cells) < len(header) else
               (c.rjust(widths[i]) if i in right else c.ljust(widths[i])) for i, c in enumerate(cells)]
        return "  ".join(out).rstrip()

    return "\n".join(line(r) for r in [header, *rows])
