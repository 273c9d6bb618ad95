"""One reconnect backoff: waits that grow by a factor up to a cap, back to the start after a success."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from spectui.core import session as session_mod
from spectui.core.backoff import Backoff
from spectui.core.errors import AuthFailed, HostUnreachable


def test_waits_grow_to_the_cap_and_reset():
    b = Backoff(1.0, factor=2.0, cap_s=15.0)
    assert [b.next() for _ in range(6)] == [1.0, 2.0, 4.0, 8.0, 15.0, 15.0]
    b.reset()
    assert b.next() == 1.0
    slow = Backoff(5.0, factor=3.0, cap_s=60.0)
    assert [slow.next() for _ in range(4)] == [5.0, 15.0, 45.0, 60.0]


def test_the_start_can_change_between_tries():
    b = Backoff(1.0, cap_s=30.0)
    b.next()
    b.start_s = 0.1  # takes effect at the next reset
    assert b.next() == 2.0
    b.reset()
    assert [b.next(), b.next()] == [0.1, 0.2]


@pytest.mark.parametrize("start,factor,cap", [(0.0, 2.0, 1.0), (1.0, 0.5, 10.0), (2.0, 2.0, 1.0)])
def test_a_policy_that_does_not_back_off_is_refused(start, factor, cap):
    with pytest.raises(ValueError):
        Backoff(start, factor=factor, cap_s=cap)


def test_reopen_session_waits_by_the_policy(monkeypatch):
    tries, pauses, slept = [], [], []

    async def failing(target):
        tries.append(target)
        raise HostUnreachable("the host did not answer")

    async def no_sleep(seconds):
        slept.append(seconds)

    monkeypatch.setattr(session_mod, "open_session", failing)
    monkeypatch.setattr(session_mod.asyncio, "sleep", no_sleep)
    clock = iter(range(0, 10_000, 1))
    monkeypatch.setattr(session_mod.time, "monotonic", lambda: float(next(clock)))
    target = SimpleNamespace(label="gpu-box")
    with pytest.raises(HostUnreachable):
        asyncio.run(session_mod.reopen_session(target, within_s=100, on_retry=lambda why, s: pauses.append(s)))
    first, cap = session_mod.RECONNECT_FIRST_WAIT_S, session_mod.RECONNECT_MAX_WAIT_S
    assert pauses == slept and len(tries) == len(pauses) + 1 and len(pauses) > 6
    assert pauses[:3] == [first, 2 * first, 4 * first] and pauses[4:6] == [cap, cap] and max(pauses) == cap


def test_reopen_session_raises_what_needs_the_user_at_once(monkeypatch):
    async def refused(target):
        raise AuthFailed("the server refused every key")

    monkeypatch.setattr(session_mod, "open_session", refused)
    with pytest.raises(AuthFailed):
        asyncio.run(session_mod.reopen_session(SimpleNamespace(label="gpu-box"), within_s=100))
