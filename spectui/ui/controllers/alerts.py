"""Alerts in the console: the rules of :mod:`spectui.core.alerts` evaluated on what the link holds, once a second.

A fired alert shows in the banner (the newest, and how many more) and as a notification; ``!`` lists every
active alert and the ones that cleared. Where the settings file's ``alerts:`` section asks, it also rings
the terminal bell, sends a desktop notification and posts to a webhook. Each change is written to the
recording when one is being made, and a replay shows the recorded alerts instead of judging again: what
the operator saw then.

The break-even L* each rule compares with is the one the speculative panel shows: measured on this host
(a baseline and the server at one request), else predicted by the probe.
"""

from __future__ import annotations

import time

from spectui.core.alerts import AlertChange, AlertConfig, AlertEngine, inputs_from_link, notify_desktop, notify_webhook
from spectui.ui import snapshots
from spectui.ui.controllers.base import Controller

EVALUATE_EVERY_S = 1.0
HISTORY = 200


class AlertsController(Controller):
    def __init__(self, app, config: AlertConfig | None = None) -> None:
        super().__init__(app)
        self.config = config or AlertConfig()
        self.engine = AlertEngine(self.config)
        self.changes: list[dict] = []     # newest last: {"kind", "at", "rule", "subject", "message", ...}
        self._last = 0.0

    def host_changed(self) -> None:
        self.engine = AlertEngine(self.config)   # its rules judge the new host from its own frames

    # --- what the screens read ------------------------------------------------------------------------------
    def active(self) -> list[dict]:
        """The alerts firing now, oldest first (in a replay: as recorded up to the play head)."""
        link = self.link
        if link is not None and getattr(link, "read_only", False):
            changes = getattr(link, "alerts", [])
        else:
            changes = self.changes
        on: dict[tuple, dict] = {}
        for c in changes:
            key = (c.get("rule"), c.get("subject"))
            if c.get("kind") == "fired":
                on[key] = c
            else:
                on.pop(key, None)
        return list(on.values())

    def history(self) -> list[dict]:
        link = self.link
        if link is not None and getattr(link, "read_only", False):
            return list(getattr(link, "alerts", []))
        return list(self.changes)

    def banner(self) -> str | None:
        active = self.active()
        if not active:
            return None
        newest = active[-1]
        more = f" (+{len(active) - 1} more)" if len(active) > 1 else ""
        return f"{newest['message']}{more} · ! lists alerts"  # the banner draws its own ⚠

    # --- judging ----------------------------------------------------------------------------------------------
    def l_stars(self) -> dict[str, tuple[float, str]]:
        """The break-even L* per server, as the speculative panel shows it: measured, else predicted."""
        app, link = self.app, self.link
        out: dict[str, tuple[float, str]] = {}
        algorithms = {n: snapshots.profile_algorithm(link.servers.get(n), app.library.profiles.get(n), s.latest)
                      for n, s in link.series.items()}
        for name, algo in algorithms.items():
            if not algo:
                continue
            be, _ = app.breakeven.explain(link, name, algorithms)
            if be is not None:
                out[name] = (be.l_star, "measured")
                continue
            predicted = snapshots.predicted_view(app.probe.probes.get(name))
            value = predicted.value if predicted is not None else None
            if isinstance(value, (int, float)):
                out[name] = (float(value), "predicted")
        return out

    def evaluate(self, now: float | None = None) -> list[AlertChange]:
        """Judge the rules (at most once a second); tell the operator of each change."""
        link = self.link
        now = time.monotonic() if now is None else now
        if link is None or not link.connected or getattr(link, "read_only", False) or now - self._last < EVALUATE_EVERY_S:
            return []
        self._last = now
        changes = self.engine.evaluate(time.time(), inputs_from_link(link, self.l_stars()))
        for change in changes:
            self._tell(change)
        return changes

    def _tell(self, change: AlertChange) -> None:
        record = change.to_dict()
        self.changes.append(record)
        del self.changes[:-HISTORY]
        recorder = getattr(self.link, "recorder", None)
        if recorder is not None:
            recorder.write("alert", record)
        alert = change.alert
        if change.kind == "fired":
            self.notify(alert.message, title="alert", severity="error", timeout=15)
            if self.config.bell:
                self.app.bell()
            if self.config.desktop:
                notify_desktop(alert)
        else:
            self.notify(f"cleared: {alert.message}", title="alert", timeout=6)
        if self.config.webhook:
            notify_webhook(self.config.webhook, change)
        self.app.changed()
