"""Alerts in the console: the rules of :mod:`spectui.core.alerts` judged about once a second by every host's own
console (:mod:`spectui.core.console.alerts`), beside its link, so showing another host's dashboard changes none
of them; this says what they are.

A fired alert shows in the banner (the newest of every host's, with the value of the last evaluation and when it
started, and how many more) and as a notification; ``!`` lists the alerts firing now and every change. With
several hosts each alert names its host. Where the settings file's ``alerts:`` section asks, it also rings the
terminal bell, sends a desktop notification and posts to a webhook. Each change is written to the recording of
its host's link when one is being made, and a replay shows the recorded alerts instead of judging again: what
the operator saw then.

The break-even L* each rule compares with is the one the speculative panel shows: measured on the host (a
baseline and the server at one request), else predicted by the host's latest probe.
"""

from __future__ import annotations


from spectui.core.alerts import AlertChange, AlertConfig, notify_desktop, notify_webhook
from spectui.core.server_frames import timed_l_star
from spectui.ui import derive, snapshots
from spectui.ui.controllers.base import Controller
from spectui.core.console import HostConsole

HISTORY = 200


class AlertsController(Controller):
    def __init__(self, app, config: AlertConfig | None = None) -> None:
        super().__init__(app)
        self.config = config or AlertConfig()
        self.changes: list[dict] = []     # every host's, newest last: {"kind", "at", "rule", "subject", "host", ...}

    # --- what the screens read ------------------------------------------------------------------------------
    def _replaying(self) -> bool:
        return self.console.read_only

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
        alerts = [a for host in self.app.hosts for a in host.alerts.active.values()]
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
        from spectui.ui.screens.alerts import clock  # the alerts screen's (! opens it): loaded with the first alert
        newest = active[-1]
        more = f" (+{len(active) - 1} more)" if len(active) > 1 else ""
        # the banner draws its own ⚠
        return f"{self.text(newest)} · since {clock(newest.get('since'))}{more} · ! lists alerts"

    # --- judging ----------------------------------------------------------------------------------------------
    def l_stars(self, host: HostConsole) -> dict[str, tuple[float, str]]:
        """The break-even L* per server of ``host``, as the speculative panel shows it (``derive.headline_l_star``):
        from the servers' timers, else measured, else predicted (the host's latest probes)."""
        link, probes = host.link, host.probes
        out: dict[str, tuple[float, str]] = {}
        algorithms = {n: snapshots.profile_algorithm(link.servers.get(n), host.library.profiles.get(n), s.latest)
                      for n, s in link.series.items()}
        steps = host.step_times.steps(link, algorithms)
        for name, algo in algorithms.items():
            if not algo:
                continue
            be, _ = snapshots.l_star_of(steps, name)
            headline = derive.headline_l_star(timed_l_star(link.series, name), be,
                                              snapshots.predicted_view(probes.get(name)))
            if headline is not None:
                out[name] = headline
        return out

    def tell(self, host: HostConsole, change: AlertChange) -> None:
        """An alert of ``host`` fired or ended (its console judged it, and recorded it): tell the operator."""
        record = change.to_dict()
        self.changes.append(record)
        del self.changes[:-HISTORY]
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
        self.changed()
