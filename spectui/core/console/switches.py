"""What a host's switches and restarts answered, kept per profile for the server panel."""

from __future__ import annotations

import time

#: The stages a switch ends in.
SWITCH_FINAL = ("ready", "failed", "crashed", "stopped", "unresponsive", "timeout")



class SwitchBook:
    def __init__(self) -> None:
        self.results: dict[str, dict] = {}   # profile -> the host's answer to its last switch or restart
        self.errors: dict[str, str] = {}     # a switch the host refused (port in use, GPUs busy, ...)
        self.started: float | None = None    # time.monotonic() the last switch began (the panel's clock)
        self.stopping: str | None = None     # what the switch stops, as the server panel says it

    def begin(self, name: str, stopping: list[str] = ()) -> None:
        self.started = time.monotonic()
        self.stopping = ", ".join(stopping) or None
        self.results.pop(name, None)
        self.errors.pop(name, None)

    def forget(self, known: set[str]) -> None:
        """Drop what is kept of servers no longer in ``known`` (the link forgot them)."""
        for table in (self.results, self.errors):
            for name in [n for n in table if n not in known]:
                del table[name]

    def switching_to(self, link) -> str | None:
        """The profile a switch under way is starting (not one the host refused)."""
        sw = link.switch if link is not None else None
        return (sw.target if sw and sw.stage not in SWITCH_FINAL and sw.target not in self.errors else None)
