"""The demo's background load (``t``, ``c``): on, off, how many requests at once; restarted on each new session.

A real host's servers get no requests from spectui unless asked (benchmarks), so this is the demo's only. A
benchmark pauses the traffic while it measures (the bench API does, on the host) and gives it back when it ends.

The traffic goes to the server the dashboard watches and follows it (a switch, another row): the console names
it in ``traffic.start``, and names it again when the watched server changes. The host sends only to a server
spectui started, or to a server found running that the operator chose: its row selected when ``t`` turned the
traffic on (t on that row while the traffic is on chooses it too). The header says what the host reports: ``traffic on ×N`` while requests go out, else why none do
(``traffic paused: kimi-eagle3 stopped``).
"""

from __future__ import annotations

from spectui.agent.protocol import Method
from spectui.core.errors import AgentCallError, Disconnected, SpectuiError
from spectui.core.servers import is_external
from spectui.ui.controllers.base import Controller, worker

TRAFFIC_CONCURRENCY = (1, 4, 16)  # c cycles; the first is the default (the story's figures are at 1)
NOT_HERE = "spectui sends no requests to a real host's servers unless asked (benchmarks)."
SYNC_S = 0.5     # how often the watched server is checked against the traffic's target
STATUS_S = 1.0   # how often the host is asked what the traffic does


class TrafficController(Controller):
    def __init__(self, app, *, available: bool, wanted: bool, scenario: dict | None = None) -> None:
        super().__init__(app)
        self.scenario = dict(scenario or {})  # spectui demo --scenario shift: {"scenario": "shift", ...}
        self.available = available          # the demo only
        self.wanted = available and wanted  # what the operator asked for (t)
        self.on = False                      # what the host last confirmed
        self.concurrency = TRAFFIC_CONCURRENCY[0]
        self.chosen: str | None = None       # a found server the operator chose for the traffic (t on its row)
        self.aimed: tuple | None = None      # (server, explicit) last named to the host
        self.aiming: tuple | None = None     # (server, explicit) named in a traffic.start not answered yet
        self.status: dict = {}               # the host's traffic.status, lately
        self._timer = None
        self._polls = 0

    # --- what it aims at ----------------------------------------------------------------------------------------
    def target(self) -> tuple[str | None, bool]:
        """(the server the dashboard watches, whether the operator chose it though spectui did not start it)."""
        name = self.app.focus()
        return name, bool(name is not None and name == self.chosen)

    def _found(self, name: str | None) -> bool:
        link = self.link
        rec = link.servers.get(name) if link is not None and name else None
        return bool(rec is not None and is_external(rec))

    def line(self) -> str | None:
        """What the header says instead of ``traffic on ×N`` while the host sends nothing (None: it sends, or
        it has not said yet)."""
        st = self.status
        if not self.on or not st.get("running") or st.get("sending") or not st.get("why"):
            return None
        return f"traffic {st['why']}"

    # --- the link's news -------------------------------------------------------------------------------------------
    def session_opened(self, session, reconnects: int) -> None:
        # a new agent sends nothing until asked; a benchmark gives the traffic back when it ends
        self.aimed, self.status, self.on = None, {}, False
        if self.available and self._timer is None:
            self._timer = self.app.set_interval(SYNC_S, self.sync)
        if self.wanted and not self.console.measuring:
            self._set(True)

    def host_changed(self) -> None:
        self.aimed, self.status, self.chosen = None, {}, None

    def sync(self) -> None:
        """Aim the traffic at the server the dashboard watches now, and hear what the host does with it."""
        link = self.link
        if not (self.available and self.on and self.wanted) or link is None or not link.connected:
            return
        if self.console.measuring or self.aiming is not None:
            return  # an answer still on its way is compared when it comes
        if self.target() != self.aimed:
            self._set(True)
            return
        self._polls += 1
        if self._polls * SYNC_S >= STATUS_S:
            self._polls = 0
            self._poll()

    def paused_by_bench(self) -> bool:
        return self.console.measuring and self.wanted

    # --- keys --------------------------------------------------------------------------------------------------------
    def toggle(self) -> None:
        if not self.available:
            self.notify(NOT_HERE, severity="warning")
            return
        if self.console.measuring:
            self.notify("The demo traffic stays paused while the benchmark measures; it comes back when it ends.",
                        severity="warning")
            return
        name = self.app.focus()
        # t on a found server's row: the operator chooses it for the traffic (while it is on already, t on such
        # a row chooses it rather than turning the traffic off); off forgets the choice
        choosing = self._found(name) and name == self.app.highlighted_name() and name != self.chosen
        self.wanted = True if (choosing and self.wanted) else not self.wanted
        self.chosen = name if self.wanted and choosing else (self.chosen if self.wanted else None)
        if self.wanted and choosing:
            self.notify(f"Demo traffic goes to {name}, a server spectui did not start, as you chose it.")
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
        if self.wanted and not self.console.measuring:
            self._set(True)

    def resume(self) -> None:
        """After a benchmark: the traffic the operator wants, on the current session."""
        link = self.link
        if self.available and self.wanted and link is not None and link.connected:
            self._set(True)

    # --- the host -------------------------------------------------------------------------------------------------
    @worker(group="traffic", exclusive=True)
    async def _set(self, on: bool) -> None:
        link = self.link
        if link is None or not link.connected:
            return
        aiming = None
        try:
            if on:
                aiming = self.aiming = self.target()
                server, explicit = aiming
                params = {**self.scenario, "concurrency": self.concurrency, "server": server}
                if explicit:
                    params["explicit"] = True
                self.status = await link.session.client.call(Method.TRAFFIC_START, params)
                self.aimed = (server, explicit)
            else:
                self.status = await link.session.client.call(Method.TRAFFIC_STOP)
                self.aimed = None
            self.on = on
        except AgentCallError as exc:
            self.on = False
            self.notify(f"Demo traffic: {exc}", severity="warning")
        except (Disconnected, SpectuiError):
            self.on = False
        finally:
            if self.aiming is aiming:  # not a newer start's, which replaced this one (the group is exclusive)
                self.aiming = None
        self.refresh()

    @worker(group="traffic-status", exclusive=True)
    async def _poll(self) -> None:
        link = self.link
        if link is None or not link.connected:
            return
        try:
            st = await link.session.client.call(Method.TRAFFIC_STATUS, timeout=10)
        except (AgentCallError, Disconnected, SpectuiError):
            return
        if st != self.status:
            self.status = st
            self.refresh()

    async def stop_for_quit(self) -> None:
        """The demo's quit: no more requests while its servers stop."""
        try:
            await self.link.session.client.call(Method.TRAFFIC_STOP)
        except (AgentCallError, Disconnected):
            pass
