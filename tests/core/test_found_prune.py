"""A long session with servers coming and going does not grow: the link forgets a server spectui only found
(origin external) a grace period after it stopped, with its frames; the operator's own servers stay."""

from __future__ import annotations

import time

from spectui.core.live import FOUND_GRACE_S, HostLink, LinkState
from spectui.core.rpc import Event
from spectui.core.session import HostTarget


def record(name: str, state: str, origin: str = "external", port: int | None = None) -> dict:
    return {"name": name, "state": state, "origin": origin, "pid": 4242 if state == "ready" else None,
            "port": port, "reason": None}


def frame(name: str, seq: int) -> dict:
    return {"name": name, "seq": seq, "t": time.time(), "state": "ready",
            "accept_length": {"value": 2.0, "source": "metrics-counters"}, "speculative": {"algorithm": "EAGLE3"}}


def connected_link() -> HostLink:
    link = HostLink(HostTarget.demo("/nonexistent-state"))
    link.state = LinkState.CONNECTED
    return link


def test_a_found_server_is_forgotten_a_grace_period_after_it_stopped_and_not_before():
    link = connected_link()
    assert link.found_grace_s == FOUND_GRACE_S >= 60
    link._on_event(Event("server", record("ext-43100", "ready", port=43100), time.time()))
    link._on_event(Event("server_frame", frame("ext-43100", 1), time.time()))
    link._on_event(Event("server", record("alpha", "ready", origin="spectui"), time.time()))
    assert link.prune(1000.0) == []
    link._on_event(Event("server", record("ext-43100", "stopped", port=43100), time.time()))
    link._on_event(Event("server", record("alpha", "stopped", origin="spectui"), time.time()))
    assert link.prune(2000.0) == []          # it stopped now: kept for the grace period
    assert link.prune(2000.0 + FOUND_GRACE_S - 1) == []
    assert "ext-43100" in link.servers and "ext-43100" in link.series
    assert link.prune(2000.0 + FOUND_GRACE_S) == ["ext-43100"]
    assert "ext-43100" not in link.servers and "ext-43100" not in link.series
    assert "alpha" in link.servers           # the operator's own server: its last run stays shown


def test_a_found_server_that_comes_back_before_the_grace_period_ends_is_kept():
    link = connected_link()
    link._on_event(Event("server", record("ext-43100", "stopped"), time.time()))
    link.prune(0.0)
    link._on_event(Event("server", record("ext-43100", "ready"), time.time()))
    assert link.prune(FOUND_GRACE_S + 1) == []
    link._on_event(Event("server", record("ext-43100", "stopped"), time.time()))
    assert link.prune(FOUND_GRACE_S + 2) == []
    assert link.prune(2 * FOUND_GRACE_S + 2) == ["ext-43100"]


def test_a_thousand_found_servers_coming_and_going_leave_nothing_behind():
    link = connected_link()
    link.found_grace_s = 5.0
    for i in range(1000):
        name = f"ext-{40000 + i}"
        link._on_event(Event("server", record(name, "ready"), time.time()))
        link._on_event(Event("server_frame", frame(name, 1), time.time()))
        link._on_event(Event("server", record(name, "stopped"), time.time()))
        link.prune(float(i))
    link.prune(10_000.0)
    assert link.servers == {} and link.series == {} and link.gone_since == {}


def test_frames_of_a_server_no_longer_listed_are_forgotten_too():
    link = connected_link()
    link._on_event(Event("server_frame", frame("ext-43100", 1), time.time()))
    link.prune(0.0)
    assert link.prune(FOUND_GRACE_S) == ["ext-43100"] and link.series == {}
