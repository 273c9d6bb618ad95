"""A host's one action seat: a benchmark, a tune, a probe, a switch, a stop... one at a time.

Whatever holds it says what it is doing ("switching to alpha"); whatever else asks is refused in one
sentence naming it. A replay's seat refuses every action, with one sentence.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

READ_ONLY = "This is a replay: nothing on the host can be started, stopped, benchmarked or probed from it."


class ActionSeat:
    def __init__(self, on_change: Callable[[str | None], None] | None = None, *, read_only: bool = False) -> None:
        self.holder: str | None = None  # what holds the seat ("benchmarking alpha"); None: free
        self.starting: str | None = None  # the server the holder starts (a switch, a restart), if it starts one
        self.read_only = read_only
        self._on_change = on_change

    def refusal(self) -> str | None:
        """Why an action may not start now (one sentence), or None when it may."""
        if self.read_only:
            return READ_ONLY
        if self.holder is not None:
            return f"Wait: {self.holder}."
        return None

    def take(self, doing: str, *, starting: str | None = None) -> bool:
        """Hold the seat for ``doing`` (``starting``: the server it starts); False (nothing changes) when it is
        refused."""
        if self.refusal() is not None:
            return False
        self.starting = starting
        self._set(doing)
        return True

    def hand_over(self, doing: str) -> None:
        """What holds the seat now does ``doing`` (a tune's comparison is the benchmark under way)."""
        if self.holder is not None:
            self._set(doing)

    def release(self) -> None:
        self.starting = None
        if self.holder is not None:
            self._set(None)

    async def run(self, doing: str, act: Callable[[], Awaitable[object]], *, starting: str | None = None) -> bool:
        """Run ``act`` holding the seat; False, and ``act`` not run, when the seat is refused."""
        if not self.take(doing, starting=starting):
            return False
        try:
            await act()
        finally:
            self.release()
        return True

    async def wait_free(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the seat to be free; whether it is."""
        deadline = time.monotonic() + timeout
        while self.holder is not None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return self.holder is None

    def _set(self, holder: str | None) -> None:
        self.holder = holder
        if self._on_change is not None:
            self._on_change(holder)
