"""The GPU telemetry rate (``+``, ``-``, ``--telemetry-hz``), and none at all with ``--telemetry-hz 0``; which
servers found running (not started by spectui) the host reads server telemetry of.

The host reads the ``/metrics`` and ``/server_info`` of the servers spectui started; a server it only found
running (another user's, say) is read while the console shows it: the server the dashboard watches, the one a
host's row of the overview shows (``server.telemetry.watch``).
"""

from __future__ import annotations

from spectui.agent.protocol import Method
from spectui.core.errors import AgentCallError, Disconnected, SpectuiError
from spectui.core.servers import is_external
from spectui.ui.controllers.base import Controller, worker
from spectui.ui.fleet import _serving

TELEMETRY_RATES_HZ = (1.0, 2.0, 5.0, 10.0)  # + and - step through these
WATCH_SYNC_S = 0.5  # how often what the console shows is checked against what the hosts read


class TelemetryController(Controller):
    def __init__(self, app, hz: float) -> None:
        super().__init__(app)
        self.on = hz > 0   # 0: no telemetry at all (a CPU baseline, or a slow link)
        self.hz = hz       # + and - change it on the live link
        self.gpu_interval_s = max(0.1, 1.0 / hz) if self.on else 1.0
        self._watching: dict[int, tuple] = {}  # id(link) -> (id(session), the found servers it reads)
        self._timer = None

    def session_opened(self, session, reconnects: int) -> None:
        if not self.on:  # the link subscribes each new session; this one wants none
            self._off(session)
        elif self._timer is None:
            self._timer = self.app.set_interval(WATCH_SYNC_S, self.sync_watched)

    # --- which found servers the hosts read ------------------------------------------------------------------
    def _links(self) -> list:
        links = [self.link] + [h.link for h in getattr(self.app, "hosts", [])]
        seen: dict[int, object] = {}
        for link in links:
            if link is not None and link.connected and id(link) not in seen:
                seen[id(link)] = link
        return list(seen.values())

    def shown(self, link) -> tuple[str, ...]:
        """The servers found running (not spectui's) the console shows of ``link``'s host."""
        names = set()
        if link is self.link:
            names.add(self.app.focus())
        serving = _serving(link)
        if serving is not None:
            names.add(serving[0])
        return tuple(sorted(n for n in names if n and is_external(link.servers.get(n) or {})))

    def sync_watched(self) -> None:
        """Tell each host which found servers the console shows now (when that changed, or after a reconnection)."""
        if getattr(self.app, "replay", None) is not None:
            return
        for link in self._links():
            want = (id(link.session), self.shown(link))
            if self._watching.get(id(link)) != want:
                self._watching[id(link)] = want
                self._watch(link, want)

    @worker(group="telemetry-watch")
    async def _watch(self, link, want: tuple) -> None:
        try:
            await link.session.client.call(Method.SERVER_TELEMETRY_WATCH, {"servers": list(want[1])})
        except AgentCallError as exc:
            if exc.code not in ("unknown_method", "not_subscribed"):  # an older agent reads every server
                self._watching.pop(id(link), None)
        except (Disconnected, SpectuiError):
            self._watching.pop(id(link), None)  # asked again on the next session

    @worker(group="telemetry")
    async def _off(self, session) -> None:
        for method in (Method.GPU_UNSUBSCRIBE, Method.SERVER_TELEMETRY_UNSUBSCRIBE):
            try:
                await session.client.call(method)
            except (AgentCallError, Disconnected):
                pass

    def step(self, step: int) -> None:
        """+ and -: the next GPU telemetry rate of TELEMETRY_RATES_HZ, applied to the live link."""
        if not self.on:
            self.notify("GPU telemetry is off (--telemetry-hz 0); start spectui with a rate to change it.",
                        severity="warning")
            return
        hz = self.hz
        choices = [r for r in TELEMETRY_RATES_HZ if (r > hz if step > 0 else r < hz)]
        if not choices:
            end = "fastest" if step > 0 else "slowest"
            self.notify(f"GPU telemetry is at {hz:g} Hz, the {end} offered here.", severity="warning")
            return
        self.hz = choices[0] if step > 0 else choices[-1]
        self.gpu_interval_s = 1.0 / self.hz
        self._apply(self.gpu_interval_s)
        self.refresh()

    @worker(group="telemetry-rate", exclusive=True)
    async def _apply(self, interval_s: float) -> None:
        link = self.link
        if link is None:
            return
        try:
            got = await link.set_gpu_interval(interval_s)
            self.notify(f"GPU telemetry: {1.0 / got:g} Hz.")
        except (SpectuiError, OSError) as exc:
            self.notify(f"GPU telemetry stays at the old rate until the connection is back ({exc}); "
                        f"it then runs at {1.0 / interval_s:g} Hz.", severity="warning")
        self.refresh()
