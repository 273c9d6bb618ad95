"""Asking the operator before spectui signals processes it did not start.

The rule: ``--yes`` confirms; on a terminal the question is asked and only ``y``/``yes`` confirms;
without a terminal and without ``--yes`` nothing is asked and the command refuses (a script must
say ``--yes`` to stop a server it did not start).
"""

from __future__ import annotations

import sys

CONFIRMED = "confirmed"
DECLINED = "declined"
NO_TERMINAL = "no_terminal"


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def ask(question: str, *, yes: bool, stdin=None, out=None) -> str:
    """:data:`CONFIRMED`, :data:`DECLINED` (the operator answered anything but y/yes, or closed the input)
    or :data:`NO_TERMINAL` (no ``--yes`` and stdin is not a terminal: nothing was asked)."""
    if yes:
        return CONFIRMED
    stdin = stdin if stdin is not None else sys.stdin
    out = out if out is not None else sys.stderr
    if not _is_tty(stdin):
        return NO_TERMINAL
    out.write(question + " ")
    out.flush()
    answer = stdin.readline()
    if not answer.endswith("\n"):
        out.write("\n")
    return CONFIRMED if answer.strip().lower() in ("y", "yes") else DECLINED


def count(n: int, noun: str) -> str:
    """``1 process``, ``3 processes``."""
    plural = noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")
    return f"{n} {noun if n == 1 else plural}"
