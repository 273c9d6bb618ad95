"""The selection and the watched server are kept by name: a server that appears above the selected one moves its
row, never the selection; the panels and ``x`` stay on the selected server; when it leaves the host the console
says so and ``x`` stops nothing else. A fixed host (tests/ui/fixed_host.py) answers the console, so the servers
on screen are exactly the ones each test sends."""

from __future__ import annotations

import time

import pytest

from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.confirm import ConfirmScreen
from tests.ui.fixed_host import STATE, FixedHost
from tests.ui.support import panel_text, wait_for
from tests.ui.test_found_server_views import found_record
from tests.ui.test_snapshots import SHIPPED, STORY

SIZE = (140, 44)


def console_maker(tmp_path, monkeypatch):
    """``make(hosts=1, settings=None, **host)``: the console and the :class:`FixedHost` of each of its hosts (the
    story's three shipped profiles; ``host``: ``serving=``, ``served_before=``), on the real clock."""
    monkeypatch.delenv("SPECTUI_PROFILES_PATH", raising=False)
    for var, sub in (("SPECTUI_CONFIG_DIR", "config"), ("SPECTUI_DATA_DIR", "data"), ("XDG_CACHE_HOME", "cache")):
        (tmp_path / sub).mkdir()
        monkeypatch.setenv(var, str(tmp_path / sub))
    library = load_profiles([SHIPPED / f"{n}.yaml" for n in STORY], layers=[])

    def make(hosts: int = 1, settings=None, **host_args):
        fixed = {f"demo-{i + 1}": FixedHost(library.profiles, **host_args) for i in range(hosts)}
        for host in fixed.values():
            host.answers["server.plan_stop"] = lambda c, p: plan_for(p["name"])

        async def open_session(target, **_kw):
            return fixed[target.name].session(target)

        monkeypatch.setattr("spectui.core.live.open_session", open_session)
        targets = [(HostTarget.demo(f"{STATE}-{i + 1}", name=name), library) for i, name in enumerate(fixed)]
        app = SpectuiApp(targets[0][0], library=library, traffic=False, settings=settings,
                         hosts=targets if hosts > 1 else None)
        return app, list(fixed.values())

    return make


@pytest.fixture
def fixed_console(tmp_path, monkeypatch):
    return console_maker(tmp_path, monkeypatch)


def plan_for(name: str) -> dict:
    """The host's plan to stop a found server: its one process."""
    return {"name": name, "origin": "external", "pid": 51000, "argv": ["python3", "-m", "sglang.launch_server"],
            "user": "op", "signal": "processes", "pgid": 51000, "allowed": True, "why_not": None, "gpus": [0],
            "processes": [{"pid": 51000, "start_ticks": 7, "user": "op", "command": "python3 -m sglang.launch_server"}]}


def send_server(host: FixedHost, record: dict) -> None:
    """The host reports a server's record, as the agent does when one appears or changes."""
    host.client.emit("server", record, time.time())


def found(port: int, **over) -> dict:
    return found_record(**{"name": f"ext-{port}", "port": port, "pid": port, "user": "op", **over})


async def ready(pilot, app) -> None:
    await wait_for(pilot, lambda: app.link is not None and app.link.connected and app.screen is app.dashboard
                   and app.refreshes, 30, "the console to connect")


async def test_a_server_appearing_above_the_selected_one_moves_nothing_and_x_stops_the_selected_one(fixed_console):
    app, (host,) = fixed_console()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        send_server(host, found(43121))
        await wait_for(pilot, lambda: "ext-43121" in app.row_names(), 10, "ext-43121's row")
        app.highlight_row("ext-43121")
        await wait_for(pilot, lambda: "Server · ext-43121" in (app.dashboard.query_one("#server").title_text or ""),
                       10, "the server panel on ext-43121")
        send_server(host, found(43100))   # sorts above it
        await wait_for(pilot, lambda: "ext-43100" in app.row_names(), 10, "ext-43100's row")
        app.refresh_now()
        assert app.row_names().index("ext-43100") < app.row_names().index("ext-43121")
        assert app.highlighted_name() == "ext-43121" and app.focus() == "ext-43121"
        await pilot.pause(0.3)
        assert "Server · ext-43121" in app.dashboard.query_one("#server").title_text
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the stop confirmation")
        assert app.screen.title_text == "Stop ext-43121?"
        await pilot.press("n")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), 10, "the dashboard")


async def test_when_the_selected_server_leaves_the_host_the_console_says_so_and_x_stops_nothing(fixed_console):
    app, (host,) = fixed_console()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        send_server(host, found(43100))
        send_server(host, found(43121))
        await wait_for(pilot, lambda: "ext-43121" in app.row_names(), 10, "ext-43121's row")
        app.highlight_row("ext-43121")
        send_server(host, found(43121, state="stopped", pid=None))
        await wait_for(pilot, lambda: (app.link.servers.get("ext-43121") or {}).get("state") == "stopped", 10,
                       "ext-43121 stopped")
        app.link.found_grace_s = 0.0
        app.link.prune()
        assert "ext-43121" not in app.link.servers
        app.refresh_now()
        await pilot.pause(0.3)
        assert app.highlighted_name() == "ext-43121"       # still the selection: nothing else took its place
        assert "ext-43121" in panel_text(app, "profiles") and "no longer on the host" in panel_text(app, "profiles")
        assert "ext-43121" in app.dashboard.query_one("#server").title_text
        assert "no longer on the host" in panel_text(app, "server")
        await pilot.press("x")
        await pilot.pause(0.5)
        assert not isinstance(app.screen, ConfirmScreen)
        assert any("ext-43121" in n.message and "no longer on the host" in n.message for n in app.notification_log)
        await pilot.press("j")   # the keys select again from where it was
        assert app.highlighted_name() in app.row_names()
