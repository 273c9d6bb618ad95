"""The console on the simulated host, driven by Pilot: switching, confirming, stopping, failures,
help, palette, logs and reconnection."""

import os
import signal

from spectui.core.link_events import FrameReceived
from spectui.core.profiles import load_profiles
from spectui.core.servers import launch_command
from spectui.core.session import HostTarget
from spectui.ui import keys
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.confirm import ConfirmScreen
from spectui.ui.screens.help import HelpScreen
from spectui.ui.screens.logs import LogScreen
from tests.support.procs import pid_alive
from tests.ui.support import connected, panel_text, server_state, wait_for

SIZE = (120, 40)


def make_app(env, **kw):
    kw.setdefault("traffic", False)
    return SpectuiApp(HostTarget.demo(str(env.state)), library=load_profiles(), **kw)


def names(app):
    return [p.name for p in app.profiles]


async def switch_and_wait(pilot, app, key, name, *, confirm=False, timeout=60):
    await pilot.press(key)
    if confirm:
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the confirmation")
        await pilot.press("y")
    await wait_for(pilot, lambda: server_state(app, name) == "ready" and app.busy is None, timeout, f"{name} ready")


async def test_switch_with_enter_shows_stages_and_ready_badge(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        assert names(app) == ["alpha", "beta", "broken"]
        await pilot.press("down")
        assert app.highlight == 1
        await pilot.press("enter")  # nothing runs: no confirmation needed
        await wait_for(pilot, lambda: app.busy is not None, 5, "the switch to begin")
        assert not isinstance(app.screen, ConfirmScreen)
        await wait_for(pilot, lambda: server_state(app, "beta") == "ready" and app.busy is None, 60, "beta ready")
        await pilot.pause(0.5)
        profiles = panel_text(app, "profiles")
        beta_row = [line for line in profiles.splitlines() if "beta" in line][0]
        assert "● ready" in beta_row and "EAGLE3" in beta_row
        server = panel_text(app, "server")
        assert "● ready" in server and f"port {ui_env.ports['beta']}" in server
        for stage in ("starting", "loading", "ready", "total"):
            assert stage in server, server
        await pilot.press("q")
        await wait_for(pilot, lambda: app.exit_note is not None, 60, "quit")
    assert "stopped the simulated servers (beta)" in app.exit_note


async def test_digit_switch_asks_first_shows_the_command_and_cancel_keeps_the_server(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await switch_and_wait(pilot, app, "1", "alpha")
        alpha_pid = app.link.servers["alpha"]["pid"]
        await pilot.press("2")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.query("#confirm-command"),
                       10, "the confirmation")
        confirm = app.screen
        expected = launch_command(app.library.get("beta"), app.link.session)
        assert confirm.query_one("#confirm-command").render().plain == expected
        assert "--speculative-algorithm EAGLE3" in expected
        assert any("stops alpha" in line for line in confirm.lines)
        # the list is the host's own dry run of the switch: the servers it stops, with what each holds
        plan = await app.link.control().plan_switch(app.library.get("beta"))
        assert [s["name"] for s in plan["stops"]] == ["alpha"]
        assert any(f"holds {plan['stops'][0]['holds']}" in line for line in confirm.lines), confirm.lines
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is app.dashboard, 5, "the dashboard")
        await pilot.pause(1.0)
        assert server_state(app, "alpha") == "ready" and app.link.servers["alpha"]["pid"] == alpha_pid
        assert "beta" not in app.link.servers
        # now for real
        await switch_and_wait(pilot, app, "2", "beta", confirm=True)
        assert server_state(app, "alpha") == "stopped" and not pid_alive(alpha_pid)
        await pilot.pause(0.5)
        server = panel_text(app, "server")
        assert "stopping" in server and "waiting for GPU memory" in server, server
        assert app.highlight == 1


async def test_palette_switch_and_stop(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await pilot.press("ctrl+p")
        await pilot.pause(0.3)
        await pilot.press(*"Switch to alpha")
        await pilot.pause(0.8)
        await pilot.press("enter")
        await wait_for(pilot, lambda: server_state(app, "alpha") == "ready" and app.busy is None, 60, "alpha ready")
        await pilot.press("ctrl+p")
        await pilot.pause(0.3)
        await pilot.press(*"Stop alpha")
        await pilot.pause(0.8)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: server_state(app, "alpha") == "stopped" and app.busy is None, 60, "alpha stopped")


async def test_stop_asks_and_cancel_keeps_running(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await switch_and_wait(pilot, app, "1", "alpha")
        pid = app.link.servers["alpha"]["pid"]
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the confirmation")
        assert app.screen.title_text == "Stop alpha?"
        await pilot.press("escape")
        await pilot.pause(1.0)
        assert server_state(app, "alpha") == "ready" and pid_alive(pid)
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the confirmation")
        await pilot.press("y")
        await wait_for(pilot, lambda: server_state(app, "alpha") == "stopped" and app.busy is None, 60, "stopped")
        assert not pid_alive(pid)
        await pilot.pause(0.5)
        assert "○ stopped" in [l for l in panel_text(app, "profiles").splitlines() if "alpha" in l][0]


async def test_failed_load_shows_its_reason(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await pilot.press("3")
        await wait_for(pilot, lambda: server_state(app, "broken") == "failed" and app.busy is None, 60, "failure")
        await pilot.pause(0.5)
        server = panel_text(app, "server")
        assert "✗ failed" in server and "reason" in server
        assert "out of memory" in server.lower(), server
        assert "last log lines" in server
        row = [l for l in panel_text(app, "profiles").splitlines() if "broken" in l][0]
        assert "✗ failed" in row
        assert any("broken failed" in n.message for n in app.notification_log)


async def test_help_lists_every_declared_key_and_the_palette_offers_them(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 5, "help")
        from rich.console import Console

        console = Console(width=160, record=True, file=open(os.devnull, "w"))
        console.print(app.screen.table)
        help_text = console.export_text()
        for _group, bindings in keys.HELP_GROUPS:
            for b in bindings:
                if b.key in keys.DIGITS:
                    assert "1-9" in help_text
                    continue
                for k in keys.key_names(b):
                    shown = app.get_key_display(type(b)(k, b.action, b.description))
                    assert shown in help_text, (k, shown)
                assert (b.tooltip or b.description) in help_text
        assert app.get_key_display(type(b)("ctrl+p", "x", "")) in help_text
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.dashboard, 5, "the dashboard")
        titles = [c.title for c in app.get_system_commands(app.dashboard)]
        for b in keys.DASHBOARD:
            if b.action.split("(")[0] in keys.PALETTE_ACTIONS:
                assert keys.palette_title(b) in titles, b.description


async def test_hidden_panels_do_no_work(ui_env):
    app = make_app(ui_env, telemetry_hz=5)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        gpus = app.dashboard.query_one("#gpus")
        before = gpus.draw_count
        await pilot.pause(1.2)
        assert gpus.draw_count > before  # telemetry moves the panel while it is visible
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 5, "help")
        counts = {p.id: p.draw_count for p in app.dashboard.query("LinePanel")}
        refreshes = app.refreshes
        frames = []
        stop = app.link.events.subscribe(lambda ev: frames.append(ev) if isinstance(ev, FrameReceived) else None)
        await pilot.pause(1.5)
        stop()
        assert frames  # telemetry still arrives...
        assert app.refreshes == refreshes  # ...but nothing is built or drawn for a hidden dashboard
        assert {p.id: p.draw_count for p in app.dashboard.query("LinePanel")} == counts


async def open_alpha_log(pilot, app) -> LogScreen:
    """Connect, start alpha, wait for its log, and open the log screen."""
    await connected(pilot, app)
    await switch_and_wait(pilot, app, "1", "alpha")
    await wait_for(pilot, lambda: "ready to roll" in panel_text(app, "logtail"), 20, "the log tail")
    await pilot.press("l")
    await wait_for(pilot, lambda: isinstance(app.screen, LogScreen), 5, "the log screen")
    return app.screen


async def test_log_screen_search_wrap_follow_and_save(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_alpha_log(pilot, app)
        view = screen.view
        await wait_for(pilot, lambda: len(view.lines) > 5, 10, "log lines")
        assert view.follow
        await pilot.press("slash")
        await pilot.press(*"fired up")
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert view.matches and "fired up" in view.lines[view.matches[view.match_index]]
        assert not view.follow  # jumping to a match stops following
        await pilot.press("f")
        assert view.follow
        await pilot.press("w")
        assert view.wrap
        target = ui_env.tmp / "saved" / "alpha.log"
        await pilot.press("ctrl+s")
        await pilot.pause(0.3)
        box = app.screen.query_one("#save-input")
        box.value = str(target)
        await pilot.press("enter")
        await wait_for(pilot, lambda: target.exists(), 5, "the saved file")
        saved = target.read_text().splitlines()
        assert "The server is fired up and ready to roll!" in "\n".join(saved)
        assert len(saved) >= len(view.lines) - 5
        await pilot.press("escape")  # ends the search first
        await pilot.pause(0.2)
        assert isinstance(app.screen, LogScreen) and not view.needle
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.dashboard, 5, "the dashboard")


async def test_reconnects_after_the_agent_dies_without_restarting_servers(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await switch_and_wait(pilot, app, "1", "alpha")
        server_pid = app.link.servers["alpha"]["pid"]
        agent_pid = app.link.session.hello["pid"]
        os.kill(agent_pid, signal.SIGKILL)
        banner = app.dashboard.query_one("#banner")
        await wait_for(pilot, lambda: banner.display and "reconnecting" in banner.text.lower(), 10, "the banner")
        assert "stale" in banner.text
        await wait_for(pilot, lambda: "stale" in app.dashboard.query_one("#gpus").border_title, 5, "stale marks")
        assert "alpha" in panel_text(app, "server")  # the last values stay on screen
        await wait_for(pilot, lambda: app.link.connected and app.link.session.hello["pid"] != agent_pid, 30,
                       "the reconnection")
        await wait_for(pilot, lambda: not banner.display, 5, "the banner to go")
        assert app.link.reconnects == 1
        assert server_state(app, "alpha") == "ready" and app.link.servers["alpha"]["pid"] == server_pid
        assert pid_alive(server_pid)
        await wait_for(pilot, lambda: "stale" not in app.dashboard.query_one("#gpus").border_title, 10, "fresh GPUs")


async def test_a_refused_switch_says_why_and_stops_counting(ui_env):
    import socket

    from tests.ui.support import write_profile

    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen(1)
    port = squatter.getsockname()[1]
    write_profile(ui_env.profiles, "delta", port=port, gpus=(4, 5))
    try:
        app = make_app(ui_env)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            await pilot.press("4")  # delta: alpha, beta, broken, delta
            await wait_for(pilot, lambda: app.busy is None and "delta" in app.host.switches.errors, 30, "the refusal")
            await pilot.pause(0.5)
            server = panel_text(app, "server")
            assert "✗ refused" in server and f"port {port}" in server and "in use" in server, server
            first = panel_text(app, "server")
            await pilot.pause(1.5)
            assert panel_text(app, "server") == first  # no clock running on a switch that ended
            assert app.link.servers.get("delta") is None
    finally:
        squatter.close()


async def test_theme_change_redraws_with_the_new_colours_and_small_terminals_drop_the_log_tail(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        gpus = app.dashboard.query_one("#gpus")
        before_styles, before_count = app.draw_styles, gpus.draw_count
        app.theme = "textual-light"
        await pilot.pause(0.3)
        assert app.draw_styles != before_styles and gpus.draw_count > before_count
        assert app.draw_styles.text.color != before_styles.text.color
        assert not app.dashboard.has_class("compact")
        await pilot.resize_terminal(100, 28)
        await pilot.pause(0.5)
        assert app.dashboard.has_class("compact")
        assert not app.dashboard.query_one("#bottom").display or app.dashboard.query_one("#bottom").region.height == 0
        tail = app.dashboard.query_one("#logtail").draw_count
        await pilot.pause(1.5)
        assert app.dashboard.query_one("#logtail").draw_count == tail
