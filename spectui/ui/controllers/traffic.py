"""The demo's background load (``t``, ``c``): on, off, how many requests at once; restarted on each new session.

A real host's servers get no requests from spectui unless asked (benchmarks), so this is the demo's only. A
benchmark pauses the traffic while it measures (the bench API does, on the host) and gives it back when it ends.
"""

from __future__ import annotations

from spectui.core.errors import AgentCallError, Disconnected, SpectuiError
from spectui.ui.controllers.base import Controller, worker

TRAFFIC_CONCURRENCY = (1, 4, 16)  # c cycles; the first is the default (the story's figures are at 1)
NOT_HERE = "spectui sends no requests to a real host's servers unless asked (benchmarks)."


class TrafficController(Controller):
    def __init__(self, app, *, available: bool, wanted: bool, scenario: dict | None = None) -> None:
        super().__init__(app)
        self.scenario = dict(scenario or {})  # spectui demo --scenario shift: {"scenario": "shift", ...}
        self.available = available          # the demo only
        self.wanted = available and wanted  # what the operator asked for (t)
        self.on = False                      # what the host last confirmed
        self.concurrency = TRAFFIC_CONCURRENCY[0]

    def session_opened(self, session, reconnects: int) -> None:
        # a new agent sends nothing until asked; a benchmark gives the traffic back when it ends
        if self.wanted and not self.app.bench.measuring():
            self._set(True)

    def paused_by_bench(self) -> bool:
        return self.app.bench.measuring() and self.wanted

    def toggle(self) -> None:
        if not self.available:
            self.notify(NOT_HERE, severity="warning")
            return
        if self.app.bench.measuring():
            self.notify("The demo traffic stays paused while the benchmark measures; it comes back when it ends.",
                        severity="warning")
            return
        self.wanted = not self.wanted
        self._set(self.wanted)

    def cycle_concurrency(self) -> None:
        if not self.available:
            self.notify(NOT_HERE, severity="warning")
            return
        i = TRAFFIC_CONCURRENCY.index(self.concurrency) if self.concurrency in TRAFFIC_CONCURRENCY else -1
        self.concurrency = TRAFFIC_CONCURRENCY[(i + 1) % len(TRAFFIC_CONCURRENCY)]
        n = self.concurrency
        self.notify(f"Demo traffic: {n} concurrent request{'s' if n > 1 else ''}"
                    + ("" if self.wanted else " (press t to turn it on)"))
        if self.wanted and not self.app.bench.measuring():
            self._set(True)

    def resume(self) -> None:
        """After a benchmark: the traffic the operator wants, on the current session."""
        link = self.link
        if self.available and self.wanted and link is not None and link.connected:
            self._set(True)

    @worker(group="traffic", exclusive=True)
    async def _set(self, on: bool) -> None:
        link = self.link
        if link is None or not link.connected:
            return
        try:
            if on:
                await link.session.client.call("traffic.start", {**self.scenario, "concurrency": self.concurrency})
            else:
                await link.session.client.call("traffic.stop")
            self.on = on
        except AgentCallError as exc:
            self.on = False
            self.notify(f"Demo traffic: {exc}", severity="warning")
        except (Disconnected, SpectuiError):
            self.on = False
        self.refresh()

    async def stop_for_quit(self) -> None:
        """The demo's quit: no more requests while its servers stop."""
        try:
            await self.link.session.client.call("traffic.stop")
        except (AgentCallError, Disconnected):
            pass
