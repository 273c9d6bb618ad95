"""How commands write to a terminal, a file or a pipe.

- :func:`guarded_output`: while a command runs, its stdout and stderr, when they are a terminal,
  show every control character the command writes and obey none
  (:func:`spectui.core.textsafe.for_terminal`): a host's GPU name, a file's name or contents, a
  profile's key, a server's log, the stderr an error quotes cannot set the window title, clear the
  screen or write the clipboard. A pipe or a file gets the text as it was (``grep``, ``less -R``, a
  saved log), and ``--json`` is exact either way (JSON escapes control characters). A line on
  stderr longer than a screenful is cut to its start and end, with a note of what was cut.
- :class:`ProgressLine`: progress of a long wait. On a terminal one line rewritten in place
  (``\\r``); in a file or a pipe one line per state change, so a log of a run stays a few lines long
  however long the run takes.
- :func:`closed_stdout_status`: what the entry does when stdout's reader went away
  (``spectui status --json | head``): no traceback, exit status 128 + SIGPIPE like shell tools
  (https://docs.python.org/3/library/signal.html#note-on-sigpipe).
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time
from contextlib import contextmanager
from typing import Callable, Hashable, Iterator, TextIO

from spectui.core.textsafe import for_terminal, shortened_lines

# 141 on Linux and macOS: what a shell reports for a tool killed by SIGPIPE.
SIGPIPE_EXIT_STATUS = 128 + int(getattr(signal, "SIGPIPE", 13))
#: carriage return, then erase the line: a progress line rewritten in place. The one control sequence a
#: command's own writes may start with on a terminal; what follows it is shown like any other text.
LINE_REWRITE = "\r\033[K"


class TerminalStream:
    """A command's stdout or stderr (``stream``): on a ``terminal`` every control character written is
    shown, not obeyed; with ``cut``, each line over a screenful is cut to its start and end. Everything
    else (``flush``, ``fileno``, ``isatty``) is the stream's own."""

    def __init__(self, stream: TextIO, *, terminal: bool, cut: bool = False):
        self.stream = stream
        self.terminal = terminal
        self.cut = cut

    def write(self, text: str) -> int:
        n = len(text)
        if self.cut:
            text = shortened_lines(text)
        if self.terminal:
            lead = LINE_REWRITE if text.startswith(LINE_REWRITE) else ""
            text = lead + for_terminal(text[len(lead):])
        self.stream.write(text)
        return n

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


@contextmanager
def guarded_output() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` as :class:`TerminalStream` while the block runs: shown, not
    obeyed, where they are a terminal; stderr's lines cut to a readable length everywhere."""
    saved = sys.stdout, sys.stderr
    if _isatty(sys.stdout):
        sys.stdout = TerminalStream(sys.stdout, terminal=True)
    sys.stderr = TerminalStream(sys.stderr, terminal=_isatty(sys.stderr), cut=True)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


class ProgressLine:
    """Progress of a long wait, on ``stream`` (stderr by default, so stdout stays the result).

    ``show(text, stage)``: ``text`` is the whole line; ``stage`` names the state it belongs to (for a
    benchmark run: the run and its host state). A terminal gets every new ``text``, in place; a file or
    a pipe gets a line only when ``stage`` changes. Without ``stage`` the text itself is the state, so
    each different line is printed (for steps such as "switching to eagle").

    A stream that cannot be written any more (its reader went away) silences the progress; the
    command goes on, and its result decides how it ends.
    """

    def __init__(self, stream: TextIO | None = None, *, tty: bool | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.stream = stream if stream is not None else sys.stderr
        self.tty = _isatty(self.stream) if tty is None else tty
        self.clock = clock
        self.t0 = clock()
        self.last_text: str | None = None
        self.last_stage: Hashable = None
        self.open_line = False  # a terminal line without its newline yet
        self.closed = False

    def show(self, text: str, stage: Hashable = None) -> None:
        key = text if stage is None else stage
        if self.tty:
            if text == self.last_text:
                return
        elif self.last_text is not None and key == self.last_stage:
            return
        self.last_text, self.last_stage = text, key
        stamp = f"[{self.clock() - self.t0:6.1f}s] "
        if self.tty:
            self._write(LINE_REWRITE + stamp + text)
            self.open_line = True
        else:
            self._write(stamp + text + "\n")

    def done(self) -> None:
        """End the terminal line, so what follows starts on a line of its own."""
        if self.open_line:
            self._write("\n")
            self.open_line = False

    def _write(self, text: str) -> None:
        if self.closed:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except (BrokenPipeError, ValueError):  # reader gone, or the stream closed
            self.closed = True


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def reader_gone(stream) -> bool:
    """True when ``stream`` is a pipe or socket whose reading end is closed (Linux and macOS report
    POLLERR or POLLHUP on its writing end)."""
    try:
        fd = stream.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        events = poller.poll(0)
    except (AttributeError, OSError, ValueError):
        return False
    return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in events)


def closed_stdout_status() -> int | None:
    """After a :class:`BrokenPipeError`: if stdout (or stderr) lost its reader, point it at
    /dev/null, so the interpreter's last flush cannot fail again, and return the exit status;
    ``None`` when the broken pipe was something else."""
    gone = [s for s in (sys.stdout, sys.stderr) if reader_gone(s)]
    if not gone:
        return None
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for s in gone:
            os.dup2(devnull, s.fileno())
    finally:
        os.close(devnull)
    return SIGPIPE_EXIT_STATUS
