"""A host's alerts: its own :class:`~spectui.core.alerts.AlertEngine`, judged from its own link about once a
second whichever host the console shows; each change is written to the host's recording when one is made."""

from __future__ import annotations

import time
from collections.abc import Callable

from spectui.core.alerts import AlertChange, AlertConfig, AlertEngine, inputs_from_link

EVALUATE_EVERY_S = 1.0
LStars = Callable[[], dict[str, tuple[float, str]]]


class HostAlerts:
    def __init__(self, config: AlertConfig | None, *, host: str) -> None:
        self.engine = AlertEngine(config, host=host)
        self.l_stars: LStars | None = None   # the break-even L* per server the rules compare with, as shown
        self._last = float("-inf")

    @property
    def active(self):
        return self.engine.active

    def judge(self, link, now: float | None = None) -> list[AlertChange]:
        """Judge the rules on ``link`` (at most once each :data:`EVALUATE_EVERY_S`); the changes, each written to
        the link's recording. A link that is not connected holds its alerts as they were;
        a replay's are the recorded ones, never judged again."""
        now = time.monotonic() if now is None else now
        if link is None or link.read_only or not link.connected or now - self._last < EVALUATE_EVERY_S:
            return []
        self._last = now
        wall = time.time()
        changes = self.engine.evaluate(wall, inputs_from_link(link, self.l_stars() if self.l_stars else None,
                                                              now=wall))
        if link.recorder is not None:
            for change in changes:
                link.recorder.write("alert", change.to_dict())
        return changes
