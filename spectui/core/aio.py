"""Awaiting with a deadline without losing a cancel.

Python 3.11's ``asyncio.wait_for`` returns the awaited result and drops the cancellation when the
awaited future is already done as the cancel lands (CPython gh-86296, fixed in 3.12): a task cancelled
in that step goes on as if nothing happened. :func:`within` is the deadline every loop and call of
spectui's core uses instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(aw: Awaitable[T], timeout: float | None) -> T:
    """``aw``'s result, or :class:`asyncio.TimeoutError` after ``timeout`` seconds (``aw`` is then
    cancelled); a cancel of the caller always raises :class:`asyncio.CancelledError`."""
    fut = asyncio.ensure_future(aw)
    try:
        done, _ = await asyncio.wait({fut}, timeout=timeout)
    except BaseException:
        if fut.done() and not fut.cancelled():
            fut.exception()  # retrieved: a failure that came as the caller was cancelled is not logged as lost
        fut.cancel()
        raise
    if not done:
        fut.cancel()
        raise asyncio.TimeoutError
    return fut.result()
