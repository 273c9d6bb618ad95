"""The console's copy of one server's log: lines fetched from the host by offset, bounded.

Lines are made visible as they arrive (``spectui.core.textsafe.visible``): a control character a
client put in the log (``--log-requests`` logs request text) is shown, never sent to the terminal,
and search, wrap and widths all work on what is shown.
"""

from __future__ import annotations

from collections import deque

from spectui.core.textsafe import visible

MAX_LINES = 20000


class LogBuffer:
    def __init__(self, name: str, max_lines: int = MAX_LINES) -> None:
        self.name = name
        self.lines: deque[str] = deque(maxlen=max_lines)
        self.offset: int | None = None
        self.version = 0          # bumped whenever lines change
        self.resets = 0
        self.error: str | None = None

    def feed(self, reply: dict) -> bool:
        """Take a ``server.logs`` reply; returns whether anything changed."""
        changed = False
        if reply.get("reset"):
            self.lines.clear()
            self.resets += 1
            changed = True
        new = reply.get("lines") or []
        if new:
            self.lines.extend(visible(str(line)) for line in new)
            changed = True
        self.offset = reply.get("offset", self.offset)
        self.error = None
        if changed:
            self.version += 1
        return changed

    def tail(self, n: int) -> tuple[str, ...]:
        if n >= len(self.lines):
            return tuple(self.lines)
        return tuple(list(self.lines)[-n:])
