"""Alerts in the console: the rules of :mod:`spectui.core.alerts` evaluated once a second for every host of the
console, each host's alerts held by that host's own engine (``FleetHost.alerts``), beside its link, so showing
another host's dashboard changes none of them.

A fired alert shows in the banner (the newest of every host's, with the value of the last evaluation and when it
started, and how many more) and as a notification; ``!`` lists the alerts firing now and every change. With
several hosts each alert names its host. Where the settings file's ``alerts:`` section asks, it also rings the
terminal bell, sends a desktop notification and posts to a webhook. Each change is written to the recording of
its host's link when one is being made, and a replay shows the recorded alerts instead of judging again: what
the operator saw then.

The break-even L* each rule compares with is the one the speculative panel shows: measured on the host (a
baseline and the server at one request), else predicted by the probe (the host the dashboard shows).
"""

from __future__ import annotations

import time

from spectui.core.alerts import AlertChange, AlertConfig, AlertEngine, inputs_from_link, notify_desktop, notify_webhook
from spectui.ui import snapshots
from spectui.ui.controllers.base import Controller
from spectui.ui.fleet import FleetHost
from spectui.ui.screens.alerts import clock

EVALUATE_EVERY_S = 1.0
HISTORY = 200


class AlertsController(Controller):
    def __init__(self, app, config: AlertConfig | None = None) -> None:
        super().__init__(app)
        self.config = config or AlertConfig()
        self.changes: list[dict] = []     # every host's, newest last: {"kind", "at", "rule", "subject", "host", ...}
        self._last = 0.0
        self._breakeven: dict[int, snapshots.BreakEvenCache] = {}  # per host (id of its FleetHost)

    def engine(self, host: FleetHost) -> AlertEngine:
        """``host``'s alerts: its own engine, made on first use and kept with the host."""
        if host.alerts is None:
            host.alerts = AlertEngine(self.config, host=host.label)
        return host.alerts

    # --- what the screens read ------------------------------------------------------------------------------
    def _replaying(self) -> bool:
        link = self.link
        return link is not None and getattr(link, "read_only", False)

    def active(self) -> list[dict]:
        """The alerts firing now on every host, oldest first, each with the figures of the last evaluation (in a
        replay: as recorded up to the play head)."""
        if self._replaying():
            on: dict[tuple, dict] = {}
            for c in getattr(self.link, "alerts", []):
                key = (c.get("host"), c.get("rule"), c.get("subject"))
                if c.get("kind") == "fired":
                    on[key] = c
                else:
                    on.pop(key, None)
            return list(on.values())
        alerts = [a for host in self.app.hosts for a in self.engine(host).active.values()]
        return [a.to_dict() for a in sorted(alerts, key=lambda a: a.fired_at)]

    def history(self) -> list[dict]:
        if self._replaying():
            return list(getattr(self.link, "alerts", []))
        return list(self.changes)

    def text(self, alert: dict) -> str:
        """An alert's sentence, naming its host when the console has several."""
        host = alert.get("host")
        return f"{host}: {alert.get('message')}" if host and len(self.app.hosts) > 1 else str(alert.get("message"))

    def banner(self) -> str | None:
        active = self.active()
        if not active:
            return None
        newest = active[-1]
        more = f" (+{len(active) - 1} more)" if len(active) > 1 else ""
        # the banner draws its own ⚠
        return f"{self.text(newest)} · since {clock(newest.get('since'))}{more} · ! lists alerts"

    # --- judging ----------------------------------------------------------------------------------------------
    def l_stars(self, host: FleetHost) -> dict[str, tuple[float, str]]:
        """The break-even L* per server of ``host``, as the speculative panel shows it: measured, else predicted
        (the probes of the host the dashboard shows)."""
        app, link = self.app, host.link
        cache = self._breakeven.setdefault(id(host), snapshots.BreakEvenCache())
        probes = app.probe.probes if host is app.hosts[app.current_host] else {}
        out: dict[str, tuple[float, str]] = {}
        algorithms = {n: snapshots.profile_algorithm(link.servers.get(n), host.library.profiles.get(n), s.latest)
                      for n, s in link.series.items()}
        for name, algo in algorithms.items():
            if not algo:
                continue
            be, _ = cache.explain(link, name, algorithms)
            if be is not None:
                out[name] = (be.l_star, "measured")
                continue
            predicted = snapshots.predicted_view(probes.get(name))
            value = predicted.value if predicted is not None else None
            if isinstance(value, (int, float)):
                out[name] = (float(value), "predicted")
        return out

    def evaluate(self, now: float | None = None) -> list[AlertChange]:
        """Judge the rules for every connected host (at most once a second); tell the operator of each change."""
        now = time.monotonic() if now is None else now
        if self.app.replay is not None or now - self._last < EVALUATE_EVERY_S:
            return []
        self._last = now
        wall = time.time()
        out = []
        for host in self.app.hosts:
            link = host.link
            if link is None or not link.connected:
                continue  # its alerts hold as they were until it is back
            changes = self.engine(host).evaluate(wall, inputs_from_link(link, self.l_stars(host), now=wall))
            for change in changes:
                self._tell(host, change)
            out += changes
        return out

    def _tell(self, host: FleetHost, change: AlertChange) -> None:
        record = change.to_dict()
        self.changes.append(record)
        del self.changes[:-HISTORY]
        recorder = getattr(host.link, "recorder", None)
        if recorder is not None:
            recorder.write("alert", record)
        alert = change.alert
        if change.kind == "fired":
            self.notify(self.text(record), title="alert", severity="error", timeout=15)
            if self.config.bell:
                self.app.bell()
            if self.config.desktop:
                notify_desktop(alert)
        else:
            self.notify(f"ended ({alert.reason}): {self.text(record)}", title="alert", timeout=6)
        if self.config.webhook:
            notify_webhook(self.config.webhook, change)
        self.app.changed()
