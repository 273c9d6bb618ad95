"""Where a host's state lives: one :class:`HostConsole` per host of the console.

A host's console owns its :class:`~spectui.core.live.HostLink` and profile library, and everything the
console knows of that host: the one action under way (:mod:`.seat`), what its switches answered
(:mod:`.switches`), its servers' logs (:mod:`.logs`), its alerts (:mod:`.alerts`), its probes, and the
recording its link writes to; it runs the host's benchmark, comparison or tune (:mod:`.jobs`). Starting and
stopping a multi-node server on every node's host is :mod:`.nodes` (the command line uses it too). It hears its
link's events and publishes typed console events (:mod:`.events`) that carry their data. Nothing here imports
Textual: the App only shows.
"""

from spectui.core.console.events import (
    AlertChanged,
    ConsoleEvent,
    JobNews,
    LinkNews,
    LogRead,
    Notice,
    SeatChanged,
    SwitchOutcome,
)
from spectui.core.console.host import HostConsole
from spectui.core.console.seat import READ_ONLY, ActionSeat

__all__ = ["READ_ONLY", "ActionSeat", "AlertChanged", "ConsoleEvent", "HostConsole", "JobNews", "LinkNews", "LogRead",
           "Notice", "SeatChanged", "SwitchOutcome"]
