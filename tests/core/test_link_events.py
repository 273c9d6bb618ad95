"""The host link's event publisher: subscribers hear events in order; one that fails does not silence the rest."""

import logging

from spectui.core.link_events import LinkEvents, LinkStateChanged, ServerChanged, SwitchStage


def test_subscribers_hear_every_event_in_order_until_they_unsubscribe():
    events = LinkEvents()
    a, b = [], []
    stop_a = events.subscribe(a.append)
    events.subscribe(b.append)
    first = [LinkStateChanged("connecting", "connecting to demo"), ServerChanged("alpha", {"name": "alpha"}),
             SwitchStage("alpha", "loading", {"progress": 0.5}, 1.5)]
    for ev in first:
        events.publish(ev)
    stop_a()
    stop_a()  # a second call changes nothing
    last = SwitchStage("alpha", "ready", None, 3.0)
    events.publish(last)
    assert a == first
    assert b == first + [last]


def test_a_failing_subscriber_is_logged_and_the_others_still_hear(caplog):
    events = LinkEvents()
    heard = []

    def broken(ev):
        raise RuntimeError("subscriber bug")

    events.subscribe(broken)
    events.subscribe(heard.append)
    ev = ServerChanged("alpha", {"name": "alpha", "state": "ready"})
    with caplog.at_level(logging.ERROR, logger="spectui.core.link_events"):
        events.publish(ev)
    assert heard == [ev]
    assert any("ServerChanged" in r.getMessage() and r.exc_info for r in caplog.records)
