"""The GPU telemetry rate (``+``, ``-``, ``--telemetry-hz``), and none at all with ``--telemetry-hz 0``."""

from __future__ import annotations

from spectui.core.errors import AgentCallError, Disconnected, SpectuiError
from spectui.ui.controllers.base import Controller, worker

TELEMETRY_RATES_HZ = (1.0, 2.0, 5.0, 10.0)  # + and - step through these


class TelemetryController(Controller):
    def __init__(self, app, hz: float) -> None:
        super().__init__(app)
        self.on = hz > 0   # 0: no telemetry at all (a CPU baseline, or a slow link)
        self.hz = hz       # + and - change it on the live link
        self.gpu_interval_s = max(0.1, 1.0 / hz) if self.on else 1.0

    def session_opened(self, session, reconnects: int) -> None:
        if not self.on:  # the link subscribes each new session; this one wants none
            self._off(session)

    @worker(group="telemetry")
    async def _off(self, session) -> None:
        for method in ("gpu.unsubscribe", "server.telemetry.unsubscribe"):
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
