"""Alerts in the console say what is true now: a firing alert shows the value of the last evaluation and when it
started; it ends when its server stops and another serves, and the list keeps what it said, its values, and when
and why it ended. With several hosts every host's alerts are judged, each naming its host, and they stay with
their host when the dashboard shows another. A fixed host (tests/ui/fixed_host.py) sends exactly the frames each
test gives, at the real time."""

from __future__ import annotations

import time

import pytest

from spectui.core.alerts import AlertConfig, RuleConfig
from spectui.core.settings import Settings
from spectui.ui.screens.alerts import AlertsScreen
from tests.ui.fixed_host import server_frame, server_record, speculative_of
from tests.ui.support import panel_text, wait_for
from tests.ui.test_selection_by_name import SIZE, console_maker, ready, send_server


@pytest.fixture
def fixed_console(tmp_path, monkeypatch):
    return console_maker(tmp_path, monkeypatch)


RULES = Settings(path="/nonexistent/config.yaml", alerts=AlertConfig(rules={
    "below_break_even": RuleConfig(for_s=0.0, clear_s=3.0), "server_down": RuleConfig(for_s=0.0)}))
NGRAM = {"algorithm": "NGRAM", "num_steps": 1, "topk": None, "draft_tokens": 8}
STEP = 31.0   # tok/s per unit of accept length: each verify step takes 1/31 s, against 1/80 s for a plain step


class Serving:
    """Sends a server's record and frames as the agent does, numbering the frames."""

    def __init__(self, host):
        self.host, self.seq = host, 0

    def start(self, name: str, pid: int) -> None:
        now = time.time()
        send_server(self.host, server_record(self.host.profiles[name], "ready", pid=pid, started_at=now,
                                             ready_at=now))

    def stop(self, name: str) -> None:
        now = time.time()
        send_server(self.host, server_record(self.host.profiles[name], "stopped", pid=0, started_at=now - 60,
                                             ready_at=now - 59, ended_at=now))

    def frames(self, name: str, n: int, *, accept: float | None, speculative: dict | None) -> None:
        for _ in range(n):
            self.seq += 1
            now = time.time()
            tok_s = STEP * accept if accept else 80.0
            self.host.client.emit("server_frame", server_frame(name, self.seq, now, speculative=speculative,
                                                               accept=accept, tok_s=tok_s), now)


def alert_of(app, subject):
    return next((a for a in app.alerts.active() if a["subject"] == subject), None)


async def test_an_alert_shows_the_live_value_and_ends_when_its_server_stops_and_another_serves(fixed_console):
    app, (host,) = fixed_console(settings=RULES)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        srv = Serving(host)
        srv.start("kimi-baseline", 3900)                      # a baseline at one request: L* is measured
        srv.frames("kimi-baseline", 14, accept=None, speculative=None)
        srv.stop("kimi-baseline")
        srv.start("kimi-eagle3", 4000)
        srv.frames("kimi-eagle3", 14, accept=2.06, speculative=speculative_of(host.profiles["kimi-eagle3"]))
        await wait_for(pilot, lambda: alert_of(app, "kimi-eagle3"), 15, "kimi-eagle3's alert")
        banner = lambda: panel_text(app, "banner")  # noqa: E731
        await wait_for(pilot, lambda: "accept length 2.06" in banner() and "since" in banner(), 10, "the banner")
        # its value follows the server's while it fires
        srv.frames("kimi-eagle3", 3, accept=2.31, speculative=speculative_of(host.profiles["kimi-eagle3"]))
        await wait_for(pilot, lambda: "accept length 2.31" in banner(), 10, "the banner's live value")
        assert alert_of(app, "kimi-eagle3")["first_value"] == 2.06
        # kimi-eagle3 stops, kimi-ngram serves: eagle3's alert ends; ngram's fires, and follows its value
        srv.stop("kimi-eagle3")
        srv.start("kimi-ngram", 4100)
        srv.frames("kimi-ngram", 14, accept=1.14, speculative=NGRAM)
        await wait_for(pilot, lambda: alert_of(app, "kimi-eagle3") is None, 10, "eagle3's alert to end")
        await wait_for(pilot, lambda: alert_of(app, "kimi-ngram"), 10, "kimi-ngram's alert")
        srv.frames("kimi-ngram", 3, accept=1.40, speculative=NGRAM)
        await wait_for(pilot, lambda: "accept length 1.40" in banner(), 10, "ngram's live value in the banner")
        assert "kimi-eagle3" not in banner() and "2.31" not in banner()
        (ended,) = [c for c in app.alerts.history() if c["kind"] == "cleared"]
        assert ended["subject"] == "kimi-eagle3" and ended["reason"] == "kimi-eagle3 is stopped"
        assert ended["first_value"] == 2.06 and ended["value"] == 2.31 and ended["ended_at"] >= ended["fired_at"]
        await pilot.press("exclamation_mark")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, AlertsScreen) and app.screen, 5, "the list")
        lines = screen.lines()
        assert lines[0] == "Firing now: 1"
        assert "kimi-ngram" in lines[1] and "accept length 1.40" in lines[1] and "since" in lines[1]
        text = "\n".join(lines)
        assert "ended" in text and "kimi-eagle3 is stopped" in text and "2.06" in text


async def test_every_host_s_alerts_are_judged_each_naming_its_host_and_stay_with_it(fixed_console):
    app, (first, second) = fixed_console(hosts=2, settings=RULES)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: all(h.link is not None and h.link.connected for h in app.hosts), 30,
                       "both hosts")
        assert app.current_host == 0
        send_server(second, server_record(second.profiles["kimi-eagle3"], "crashed", pid=0, started_at=time.time()))
        alert = await wait_for(pilot, lambda: next((a for a in app.alerts.active() if a.get("host") == "demo-2"),
                                                   None), 15, "demo-2's alert")
        assert alert["rule"] == "server_down" and alert["subject"] == "kimi-eagle3"
        assert app.alerts.text(alert).startswith("demo-2: ")
        assert not any(a.get("host") == "demo-1" for a in app.alerts.active())
        since = alert["since"]
        app.enter_host(1)
        app.enter_host(0)
        await pilot.pause(1.5)
        (still,) = [a for a in app.alerts.active() if a.get("host") == "demo-2"]
        assert still["since"] == since                        # kept with its host, not judged again from scratch
