"""Alerts in the console: a crash fires server_down, the banner says so, ! lists it, and the settings'
alerts: section decides the rules (a dashboard whose rules are all off stays quiet)."""

from __future__ import annotations

from spectui.core.alerts import AlertConfig, RuleConfig
from spectui.core.settings import Settings
from spectui.ui.screens.alerts import AlertsScreen
from tests.ui.support import connected, panel_text, wait_for, write_profile
from tests.ui.test_console_pilot import SIZE, make_app


def settings(**rules) -> Settings:
    return Settings(path="/nonexistent/config.yaml", alerts=AlertConfig(rules=rules))


async def test_a_crash_fires_an_alert_shown_in_the_banner_and_the_list(ui_env):
    write_profile(ui_env.profiles, "crashes", sim={"crash-after": 2})
    app = make_app(ui_env, settings=settings(server_down=RuleConfig(for_s=0.0)))
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        names = [p.name for p in app.profiles]
        await pilot.press(str(names.index("crashes") + 1))
        await wait_for(pilot, lambda: app.alerts.active(), 60, "the alert")
        (alert,) = app.alerts.active()
        assert alert["rule"] == "server_down" and alert["message"] == "crashes is crashed."
        await wait_for(pilot, lambda: "crashes is crashed." in panel_text(app, "banner"), 10, "the banner")
        assert "! lists alerts" in panel_text(app, "banner")
        await pilot.press("exclamation_mark")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, AlertsScreen) and app.screen, 5, "the list")
        assert screen.lines()[0] == "Firing now: 1"
        assert any("fired" in line and "crashes is crashed." in line for line in screen.lines())
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, AlertsScreen), 5, "back")


async def test_rules_turned_off_fire_nothing(ui_env):
    write_profile(ui_env.profiles, "crashes", sim={"crash-after": 1})
    off = {k: RuleConfig(enabled=False) for k in ("server_down", "gpu_memory", "below_break_even",
                                                   "accept_collapse", "throughput_collapse")}
    app = make_app(ui_env, settings=settings(**off))
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        names = [p.name for p in app.profiles]
        await pilot.press(str(names.index("crashes") + 1))
        await wait_for(pilot, lambda: (app.link.servers.get("crashes") or {}).get("state") == "crashed", 60,
                       "the crash")
        await pilot.pause(2.0)
        assert app.alerts.active() == [] and app.alerts.history() == []
