"""A host's server logs as the console read them: each server's lines, fetched from the host by offset, bounded.

Lines are made visible as they arrive (``spectui.core.textsafe.visible``): a control character a
client put in the log (``--log-requests`` logs request text) is shown, never sent to the terminal,
and search, wrap and widths all work on what is shown.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from spectui.agent.protocol import POLLED_PATHS
from spectui.core.textsafe import visible

FOUND_ORIGINS = ("external", "adopted")  # servers spectui found running (the agent's ``origin``)

MAX_LINES = 20000

# uvicorn's access line for a GET (or HEAD) of a path the agent polls, with or without a query string:
# '%(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s' (uvicorn/config.py, the access
# formatter SGLang's server runs with: sglang 0.5.23 wheel, sglang/srt/entrypoints/http_server.py:3014).
# A colour code uvicorn may put around the request line arrives made visible, so anything but a space
# may stand between the quote and the method.
_POLL = re.compile(r' - "[^"\s]*(?:GET|HEAD) (?:%s)(?:\?[^"\s]*)? HTTP/'
                   % "|".join(re.escape(p) for p in POLLED_PATHS))


def is_poll_line(line: str) -> bool:
    """Whether ``line`` is the server's access line for one of spectui's own polls (``GET /metrics``, ...)."""
    return '"' in line and _POLL.search(line) is not None


@dataclass
class LogOptions:
    """How a host's logs are shown: with spectui's own poll lines, or without (the default)."""

    polls_shown: bool = False


class LogBuffer:
    def __init__(self, name: str, max_lines: int = MAX_LINES, options: LogOptions | None = None) -> None:
        self.name = name
        self.lines: deque[str] = deque(maxlen=max_lines)
        self._poll: deque[bool] = deque(maxlen=max_lines)   # whether each line is a poll line
        self.poll_lines = 0                                  # how many of the lines held are
        self.options = options or LogOptions()
        self.offset: int | None = None
        self.resets = 0
        self.error: str | None = None

    def feed(self, reply: dict) -> bool:
        """Take a ``server.logs`` reply; returns whether anything changed."""
        return self.take(reply) != ((), False)

    def take(self, reply: dict) -> tuple[tuple[str, ...], bool]:
        """Take a ``server.logs`` reply: the lines it added (as shown) and whether the log started again."""
        reset = bool(reply.get("reset"))
        if reset:
            self.lines.clear()
            self._poll.clear()
            self.poll_lines = 0
            self.resets += 1
        added = tuple(visible(str(line)) for line in reply.get("lines") or [])
        for line in added:
            if len(self._poll) == self._poll.maxlen:
                self.poll_lines -= self._poll[0]   # the oldest line leaves as this one comes
            poll = is_poll_line(line)
            self.lines.append(line)
            self._poll.append(poll)
            self.poll_lines += poll
        self.offset = reply.get("offset", self.offset)
        self.error = None
        return added, reset

    def shown(self, polls: bool | None = None) -> list[str]:
        """The lines to show: every line with ``polls``, else all but the poll lines (``None``: as the
        host's options say)."""
        if polls is None:
            polls = self.options.polls_shown
        if polls or not self.poll_lines:
            return list(self.lines)
        return [line for line, poll in zip(self.lines, self._poll) if not poll]

    def tail(self, n: int) -> tuple[str, ...]:
        """The newest ``n`` lines shown (poll lines left out unless the host's options show them)."""
        if self.options.polls_shown or not self.poll_lines:
            return tuple(self.lines) if n >= len(self.lines) else tuple(list(self.lines)[-n:])
        out: list[str] = []
        for line, poll in zip(reversed(self.lines), reversed(self._poll)):
            if len(out) >= n:
                break
            if not poll:
                out.append(line)
        return tuple(reversed(out))


def unreadable(record: dict | None) -> bool:
    """A found server whose output spectui cannot read (the host says where it goes instead)."""
    log = (record or {}).get("log_source")
    return (record or {}).get("origin") in FOUND_ORIGINS and isinstance(log, dict) and log.get("readable") is False


class HostLogs:
    """Every server's log buffer of one host, kept while its host is not shown, and a replay's recorded reads."""

    def __init__(self) -> None:
        self.buffers: dict[str, LogBuffer] = {}
        self.options = LogOptions()            # shared by every log of the host
        self._replayed: dict[str, int] = {}   # a replay: how many of each log's recorded reads were fed
        self._generation: int | None = None

    def buffer(self, name: str) -> LogBuffer:
        buf = self.buffers.get(name)
        if buf is None:
            buf = self.buffers[name] = LogBuffer(name, options=self.options)
        return buf

    def tail(self, name: str | None) -> LogBuffer | None:
        return self.buffers.get(name) if name else None

    def forget(self, known: set[str], keep: set[str] = frozenset()) -> None:
        """Drop the logs of servers no longer in ``known`` (the link forgot them), except those in ``keep``."""
        for name in [n for n in self.buffers if n not in known and n not in keep]:
            del self.buffers[name]

    def replay(self, recorded: dict[str, list[dict]], generation: int) -> dict[str, tuple[tuple[str, ...], bool]]:
        """A replay: feed every log's reads recorded up to the play head, as they were received. Returns, by the
        name of each log that changed, the lines added and whether it started again (after a seek backwards,
        ``generation`` changed, every log starts again)."""
        read: dict[str, tuple[tuple[str, ...], bool]] = {}
        if generation != self._generation:   # sought backwards: start the logs again
            self._generation = generation
            self._replayed = {}
            for name in list(self.buffers):
                self.buffers[name] = LogBuffer(name, options=self.options)
                read[name] = ((), True)
        for name, replies in recorded.items():
            done = self._replayed.get(name, 0)
            if done < len(replies):
                buf = self.buffer(name)
                added, reset = read.get(name, ((), False))
                for reply in replies[done:]:
                    more, again = buf.take(reply)
                    added, reset = (more, True) if again else (added + more, reset)
                self._replayed[name] = len(replies)
                read[name] = (added, reset)
        return read
