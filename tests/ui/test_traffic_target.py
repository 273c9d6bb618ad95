"""The console's traffic line says what the demo traffic does: on while it sends to the server the dashboard
watches, and why not when it sends nothing (that server stopped, is loading, none is watched); the traffic
follows a switch."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager

from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.ui.app import SpectuiApp
from tests.sim.simproc import ROOT
from tests.support.sshd import free_port
from tests.ui.support import connected, panel_text, server_state, wait_for


async def serving_with_traffic(pilot, app, key, name):
    """Connected, ``key`` pressed: ``name`` ready and the demo traffic on it."""
    await connected(pilot, app)
    await pilot.press(key)
    await wait_for(pilot, lambda: server_state(app, name) == "ready" and app.busy is None, 60, f"{name} ready")
    await wait_for(pilot, lambda: "traffic on ×1" in panel_text(app, "header"), 15, "traffic on")


async def test_the_traffic_line_says_what_is_sent(ui_env):
    app = SpectuiApp(HostTarget.demo(str(ui_env.state)), library=load_profiles(), traffic=True)
    async with app.run_test(size=(160, 40)) as pilot:
        await connected(pilot, app)
        await wait_for(pilot, lambda: app.traffic.on, 10, "the demo traffic")
        # nothing runs yet: nothing is sent, and the header does not claim otherwise
        await wait_for(pilot, lambda: "traffic waiting" in panel_text(app, "header"), 10, "traffic waiting")
        assert "traffic on" not in panel_text(app, "header")

        await pilot.press("1")
        await wait_for(pilot, lambda: server_state(app, "alpha") == "ready" and app.busy is None, 60, "alpha ready")
        await wait_for(pilot, lambda: "traffic on ×1" in panel_text(app, "header"), 10, "traffic on")
        status = await app.link.session.client.call("traffic.status")
        assert status["target"] == "alpha" and status["server"] == "alpha" and status["sending"], status
        await wait_for(pilot, lambda: app.traffic.status.get("requests", 0) > 0, 20, "requests sent")

        # another console stops the watched server: the traffic pauses and the header says why
        await app.link.session.client.call("server.stop", {"name": "alpha"}, timeout=60)
        await wait_for(pilot, lambda: "traffic paused: alpha stopped" in panel_text(app, "header"), 15,
                       "the header to say why nothing is sent")
        assert "traffic on" not in panel_text(app, "header")
        status = await app.link.session.client.call("traffic.status")
        assert status["running"] and not status["sending"] and status["why"] == "paused: alpha stopped", status

        # a switch: the traffic follows the server the dashboard watches now
        await pilot.press("2")
        await wait_for(pilot, lambda: server_state(app, "beta") == "ready" and app.busy is None, 60, "beta ready")
        await wait_for(pilot, lambda: "traffic on ×1" in panel_text(app, "header"), 15, "traffic on again")
        status = await app.link.session.client.call("traffic.status")
        assert status["target"] == "beta" and status["server"] == "beta" and status["sending"], status




@contextmanager
def another_users_server(tmp, state):
    """A server started by hand on the demo host (``python3 -m spectui.sim.server --port N --sim-state STATE``, as
    the demo host finds its own hosts' servers) that answers every GET, never finishes a /generate, and writes
    each request it gets to a file."""
    pkg = tmp / "stub" / "spectui" / "sim"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "server.py").write_text((ROOT / "tests" / "agent" / "test_traffic_target_stub.py").read_text())
    log = tmp / "stub-requests.log"
    log.write_text("")
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(tmp / "stub"))
    proc = subprocess.Popen([sys.executable, "-m", "spectui.sim.server", "--port", str(port), "--sim-state", str(state),
                             str(log)],
                            env=env, cwd=str(tmp), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "the stub server did not start"
                time.sleep(0.1)
        yield port, log
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def requests_at(log, method, path):
    return sum(1 for line in log.read_text().splitlines() if line == f"{method} {path}")


async def test_a_server_started_later_by_someone_else_gets_no_demo_traffic(ui_env, tmp_path):
    app = SpectuiApp(HostTarget.demo(str(ui_env.state)), library=load_profiles(), traffic=True)
    async with app.run_test(size=(160, 40)) as pilot:
        await serving_with_traffic(pilot, app, "2", "beta")
        with another_users_server(tmp_path, ui_env.state) as (port, log):
            def found():
                return any(s.get("port") == port and s.get("origin") == "external" and s.get("state") == "ready"
                           for s in app.link.servers.values())

            await wait_for(pilot, found, 30, "the console to find it, ready")  # ready after beta
            before = (await app.link.session.client.call("traffic.status"))["requests"]
            # ten more requests of the demo traffic, over several of its looks for the server to send to
            await wait_for(pilot, lambda: app.traffic.status.get("requests", 0) >= before + 10, 60, "more requests")
            assert requests_at(log, "POST", "/generate") == 0
            assert requests_at(log, "GET", "/metrics") == 0
            status = await app.link.session.client.call("traffic.status")
            assert status["server"] == "beta" and status["sending"], status
            assert "traffic on ×1" in panel_text(app, "header")

            # the operator selects that server and presses t: chosen, it gets the traffic
            name = next(n for n, s in app.link.servers.items() if s.get("port") == port)
            app.highlight_row(name)
            await wait_for(pilot, lambda: app.focus() == name, 10, "the dashboard to watch it")
            await wait_for(pilot, lambda: "traffic not sending" in panel_text(app, "header"), 15, "why not")
            await pilot.press("t")
            await wait_for(pilot, lambda: requests_at(log, "POST", "/generate") >= 1, 15, "a request at the stub")
            status = await app.link.session.client.call("traffic.status")
            assert status["target"] == name and status["explicit"] and status["sending"], status
