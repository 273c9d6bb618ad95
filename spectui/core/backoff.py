"""Waits between reconnect attempts: the first after a failure, multiplied by a factor after each
further failure, never above a cap, and back to the first after a success. No jitter: the same
failures wait the same times."""

from __future__ import annotations

__all__ = ["Backoff"]


class Backoff:
    """``next()`` is the wait before the coming attempt (start, start*factor, ... at most ``cap_s``);
    ``reset()`` after a good connection. ``start_s`` may change between attempts: it applies from the
    next reset."""

    def __init__(self, start_s: float, *, factor: float = 2.0, cap_s: float) -> None:
        if not start_s > 0 or not factor >= 1 or not cap_s >= start_s:
            raise ValueError(f"a backoff starts above 0 s, grows by a factor of 1 or more and is capped at "
                             f"its start or above, not start {start_s} s, factor {factor}, cap {cap_s} s")
        self.start_s, self.factor, self.cap_s = start_s, factor, cap_s
        self._next: float | None = None

    def next(self) -> float:
        """The wait before the coming attempt; the one after grows by the factor up to the cap."""
        wait = self.start_s if self._next is None else self._next
        self._next = min(self.cap_s, wait * self.factor)
        return wait

    def reset(self) -> None:
        """A good connection: the next failure waits ``start_s`` again."""
        self._next = None
