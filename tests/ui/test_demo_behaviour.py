"""Demo traffic, and what quitting does to the servers on the demo and on a real host."""

import asyncio
import sys

from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.ui.app import SpectuiApp
from tests.support.procs import pid_alive
from tests.ui.support import connected, panel_text, server_state, wait_for


async def test_demo_traffic_moves_the_panels_and_t_toggles_it(ui_env):
    app = SpectuiApp(HostTarget.demo(str(ui_env.state)), library=load_profiles(), traffic=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(pilot, app)
        await wait_for(pilot, lambda: app.traffic.on, 10, "traffic to start")
        # no server runs yet: the header says the traffic waits, not that it is on
        await wait_for(pilot, lambda: "traffic waiting" in panel_text(app, "header"), 5, "the header to say so")
        await pilot.press("2")
        await wait_for(pilot, lambda: server_state(app, "beta") == "ready" and app.busy is None, 60, "beta ready")
        await wait_for(pilot, lambda: "traffic on" in panel_text(app, "header"), 10, "the header to say it is on")

        def moving():
            s = app.link.series.get("beta")
            return s is not None and any(v and v > 0 for v in s.gen_throughput.values())

        await wait_for(pilot, moving, 30, "throughput from the demo traffic")
        # the server decodes before the first request ends: the traffic counts requests once they have ended
        deadline = asyncio.get_running_loop().time() + 30
        while True:
            status = await app.link.session.client.call("traffic.status")
            if status["requests"] > 0 or asyncio.get_running_loop().time() > deadline:
                break
            await pilot.pause(0.5)
        assert status["running"] and status["server"] == "beta" and status["requests"] > 0, status
        await wait_for(pilot, lambda: "accept length 1" in panel_text(app, "spec") or
                       "accept length 2" in panel_text(app, "spec") or "accept length 3" in panel_text(app, "spec"),
                       20, "an accept length on screen")
        await pilot.press("t")
        await wait_for(pilot, lambda: not app.traffic.on and "traffic off" in panel_text(app, "header"), 10, "off")
        status = await app.link.session.client.call("traffic.status")
        assert not status["running"]


async def test_quitting_the_demo_with_keep_leaves_servers_running(ui_env):
    app = SpectuiApp(HostTarget.demo(str(ui_env.state)), library=load_profiles(), traffic=False, keep=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(pilot, app)
        await pilot.press("1")
        await wait_for(pilot, lambda: server_state(app, "alpha") == "ready" and app.busy is None, 60, "alpha ready")
        pid = app.link.servers["alpha"]["pid"]
        await pilot.press("q")
        await wait_for(pilot, lambda: app.exit_note is not None, 30, "quit")
    assert pid_alive(pid)
    assert "keep running on the simulated host: alpha (ready" in app.exit_note
    assert "spectui servers stop --demo" in app.exit_note


async def test_quitting_a_real_host_leaves_servers_running_and_says_so(ui_env):
    # "local" is a real host as far as the console is concerned: it never stops servers on quit.
    target = HostTarget(kind="local", python=sys.executable, simulated=True, state_dir=str(ui_env.state))
    app = SpectuiApp(target, library=load_profiles(), traffic=True)
    assert not app.traffic.available  # no demo load on a real host, even if asked
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(pilot, app)
        assert "traffic" not in panel_text(app, "header")
        await pilot.press("t")  # not bound on a real host: nothing happens
        await pilot.pause(0.3)
        assert not app.traffic.on
        await pilot.press("1")
        await wait_for(pilot, lambda: server_state(app, "alpha") == "ready" and app.busy is None, 60, "alpha ready")
        pid = app.link.servers["alpha"]["pid"]
        await pilot.press("q")
        await wait_for(pilot, lambda: app.exit_note is not None, 30, "quit")
    assert pid_alive(pid)
    assert app.exit_note.startswith("spectui: the servers keep running on local: alpha (ready")
