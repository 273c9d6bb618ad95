"""The console and a server spectui did not start, on the simulated host: a simulated SGLang server started
by hand (its own session, its output in a file) shows as an external row with live panels; x stops exactly
the processes its plan lists; A adopts it; I imports a profile from it; a switch onto its port stops it
after naming it."""

import getpass
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from spectui.core.profiles import load_profiles, user_profile_dir
from spectui.core.session import HostTarget
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.confirm import ConfirmScreen
from tests.support.procs import group_pids
from tests.support.sshd import free_port
from tests.ui.support import EAGLE, connected, notified, panel_text, server_state, wait_for, write_profile

SIZE = (130, 44)
ACCEPT_LENGTH = "accept length "


@dataclass
class HandStarted:
    pid: int
    port: int
    argv: list[str]

    @property
    def name(self) -> str:
        return f"ext-{self.port}"


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def hand_started(state: Path, log: Path, *, port: int | None = None, tp: int = 2):
    """A speculative simulated server started as an operator starts one: own session, output to a file,
    ``--tp`` abbreviated as argparse allows."""
    port = port or free_port()
    flags = [w for k, v in EAGLE.items() for w in (f"--{k}", str(v))]
    argv = [sys.executable, "-m", "spectui.sim.server", "--model-path", "sim/handmade", "--port", str(port),
            "--tp", str(tp), "--enable-metrics", "--sim-load-time", "0.3", "--sim-draft-agreement", "0.7",
            *flags]
    env = dict(os.environ, SPECTUI_STATE_DIR=str(state))
    env.pop("CUDA_VISIBLE_DEVICES", None)
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not _healthy(port):
            assert proc.poll() is None, f"the hand-started server exited: {log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"the hand-started server was not ready: {log.read_text()[-2000:]}"
            time.sleep(0.1)
        yield HandStarted(proc.pid, port, argv)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)


@contextmanager
def requests_to(port: int, streams: int = 2):
    """Greedy requests sent one after another at the server, so its accept length is measured."""
    stop = threading.Event()

    def send() -> None:
        body = json.dumps({"text": "Explain speculative decoding to a new engineer, with one good example.",
                           "sampling_params": {"max_new_tokens": 48, "temperature": 0}}).encode()
        while not stop.is_set():
            try:
                req = urllib.request.Request(f"http://127.0.0.1:{port}/generate", data=body,
                                             headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=30) as r:
                    r.read()
            except (urllib.error.URLError, OSError):
                stop.wait(0.2)

    threads = [threading.Thread(target=send, daemon=True) for _ in range(streams)]
    for t in threads:
        t.start()
    try:
        yield
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=35)


def make_app(env, **kw):
    kw.setdefault("traffic", False)
    return SpectuiApp(HostTarget.demo(str(env.state)), library=load_profiles(), **kw)


async def highlight(pilot, app, name):
    await wait_for(pilot, lambda: name in app.row_names(), 30, f"{name} in the list")
    app.set_highlight(app.row_names().index(name))
    await pilot.pause(0.3)


async def confirmation(pilot, app, title):
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.is_mounted, 15, "the confirmation")
    assert app.screen.title_text == title, app.screen.title_text
    return app.screen


def process_rows(screen):
    """The confirmation's process table: ``[pid, user, command words...]`` for each row."""
    rows = [line.split() for entry in screen.lines for line in entry.splitlines()]
    return [r for r in rows if r and r[0].isdigit()]



@pytest.mark.rank_processes  # it counts the server's processes, one per TP rank
async def test_a_hand_started_server_is_an_external_row_with_live_panels_and_x_stops_exactly_its_processes(ui_env):
    with hand_started(ui_env.state, ui_env.tmp / "server.log") as srv, requests_to(srv.port):
        app = make_app(ui_env)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            await highlight(pilot, app, srv.name)
            assert app.row_names()[:3] == ["alpha", "beta", "broken"] and srv.name in app.row_names()  # and any others the machine runs
            row = [line for line in panel_text(app, "profiles").splitlines() if srv.name in line][0]
            assert "external" in row and "EAGLE3" in row and "● ready" in row, row
            await wait_for(pilot, lambda: ACCEPT_LENGTH in panel_text(app, "spec")
                           and "no data" not in panel_text(app, "spec"), 40, "its accept length")
            server = panel_text(app, "server")
            assert f"port {srv.port}" in server and f"pid {srv.pid}" in server
            assert "external: spectui did not start it" in server and f"user {getpass.getuser()}" in server, server
            assert "log: " in server
            # x: the plan, exactly the server's processes, then the stop
            members = sorted(group_pids(srv.pid))
            assert len(members) >= 3  # the leader and its two rank workers
            await pilot.press("x")
            screen = await confirmation(pilot, app, f"Stop {srv.name}?")
            pid_rows = process_rows(screen)
            assert sorted(int(r[0]) for r in pid_rows) == members, screen.lines
            assert all(r[1] == getpass.getuser() for r in pid_rows)
            assert any("spectui.sim.server" in line for line in screen.lines)
            command = screen.query_one("#confirm-command").render().plain.split()
            assert command[:2] == ["kill", "-TERM"]
            assert command[2:] == ["--", f"-{srv.pid}"] or sorted(map(int, command[2:])) == members, command
            await pilot.press("y")
            await wait_for(pilot, lambda: server_state(app, srv.name) == "stopped" and app.busy is None, 60,
                           f"{srv.name} stopped")
            assert group_pids(srv.pid) == []
            assert notified(app, f"{srv.name} stopped")


async def test_escape_leaves_it_running_and_adopting_makes_it_spectuis_own(ui_env):
    with hand_started(ui_env.state, ui_env.tmp / "server.log") as srv:
        app = make_app(ui_env)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            await highlight(pilot, app, srv.name)
            await pilot.press("x")
            await confirmation(pilot, app, f"Stop {srv.name}?")
            await pilot.press("escape")
            await pilot.pause(1.0)
            assert server_state(app, srv.name) == "ready" and group_pids(srv.pid)
            await pilot.press("A")
            screen = await confirmation(pilot, app, f"Adopt {srv.name}?")
            assert sorted(int(r[0]) for r in process_rows(screen)) == sorted(group_pids(srv.pid)), screen.lines
            await pilot.press("y")
            await wait_for(pilot, lambda: (app.link.servers.get(srv.name) or {}).get("origin") == "adopted"
                           and app.busy is None, 30, "adopted")
            record = json.loads((ui_env.state / "servers" / f"{srv.name}.json").read_text())
            assert record["pid"] == srv.pid and record["origin"] == "adopted"
            assert server_state(app, srv.name) == "ready" and group_pids(srv.pid)
            row = [line for line in panel_text(app, "profiles").splitlines() if srv.name in line][0]
            assert "adopted" in row, row
            assert not app.servers.found_action_possible("adopt") and app.servers.found_action_possible("import_profile")


async def test_import_writes_a_profile_that_starts_it_the_way_it_runs(ui_env):
    with hand_started(ui_env.state, ui_env.tmp / "server.log") as srv:
        app = make_app(ui_env)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            await highlight(pilot, app, srv.name)
            await pilot.press("I")
            folder = user_profile_dir()
            assert str(folder).startswith(str(ui_env.tmp))  # the test's own config folder
            await wait_for(pilot, lambda: list(folder.glob("*.yaml")), 60, "the profile file")
            (path,) = folder.glob("*.yaml")
            data = yaml.safe_load(path.read_text())
            assert data["model"] == "sim/handmade" and data["port"] == srv.port
            assert data["args"]["speculative-algorithm"] == "EAGLE3" and data["args"]["tp-size"] == 2
            assert data["sim"]["load-time"] == 0.3 and data["metrics"] is True
            assert notified(app, f"Wrote profile {data['name']} to {path}")
            # the list now has it, and the highlight stays on the server
            assert data["name"] in [p.name for p in app.profiles]
            assert app.highlighted_name() == srv.name
            # a second import never replaces the first file
            await pilot.press("I")
            await wait_for(pilot, lambda: len(list(folder.glob("*.yaml"))) == 2, 60, "a second file")
            assert yaml.safe_load(path.read_text()) == data


async def test_switching_onto_its_port_names_it_and_stops_it_on_confirm(ui_env):
    port = free_port()
    write_profile(ui_env.profiles, "gamma", port=port, gpus=(2, 3))
    with hand_started(ui_env.state, ui_env.tmp / "server.log", port=port) as srv:
        app = make_app(ui_env)
        async with app.run_test(size=SIZE) as pilot:
            await connected(pilot, app)
            await wait_for(pilot, lambda: srv.name in app.row_names(), 30, f"{srv.name} in the list")
            number = str([p.name for p in app.profiles].index("gamma") + 1)
            await pilot.press(number)
            screen = await confirmation(pilot, app, "Switch to gamma?")
            text = "\n".join(screen.lines)
            assert f"{srv.name} will be stopped" in text
            assert f"pid {srv.pid}, user {getpass.getuser()}" in text and "spectui.sim.server" in text
            assert f"port {port}" in text
            assert "--model-path" in screen.query_one("#confirm-command").render().plain
            await pilot.press("n")
            await pilot.pause(1.0)
            assert group_pids(srv.pid) and "gamma" not in app.link.servers
            await pilot.press(number)
            await confirmation(pilot, app, "Switch to gamma?")
            await pilot.press("y")
            await wait_for(pilot, lambda: server_state(app, "gamma") == "ready" and app.busy is None, 60,
                           "gamma ready")
            assert group_pids(srv.pid) == []


class PlannedControl:
    """The host's side of a stop, as the agent answers it: a fixed plan; records what the console confirms."""

    def __init__(self, plan):
        self.plan = plan
        self.stops = []

    async def plan_stop(self, name):
        return dict(self.plan, name=name)

    async def stop(self, name, *, confirmed=None, **kw):
        self.stops.append((name, confirmed))
        return {"name": name, "state": "stopped", "stop": {"exit_s": 0.5, "release_s": 0.1}}


def plan(**over):
    p = {"origin": "external", "pid": 51000, "argv": ["python3", "-m", "sglang.launch_server", "--model-path", "m"],
         "user": "alice", "signal": "processes", "pgid": 1,
         "processes": [{"pid": 51000, "start_ticks": 777, "user": "alice",
                        "command": "python3 -m sglang.launch_server --model-path m"},
                       {"pid": 51007, "start_ticks": 790, "user": "alice", "command": "sglang::scheduler_TP0"}],
         "gpus": [0], "allowed": True, "why_not": None, "unit": None, "note": None}
    p.update(over)
    return p


async def test_x_is_refused_with_the_hosts_sentence_and_confirms_exactly_the_planned_processes(ui_env):
    from tests.ui.test_found_server_views import found_record

    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        app.link.servers["ext-40000"] = found_record(name="ext-40000", port=40000, pid=51000, user="alice")
        await highlight(pilot, app, "ext-40000")
        why = "it belongs to user alice and spectui runs as bob"
        refused = PlannedControl(plan(allowed=False, why_not=why))
        app.link.control = lambda: refused
        await pilot.press("x")
        await wait_for(pilot, lambda: notified(app, why), 10, "the refusal")
        assert notified(app, f"ext-40000 cannot be stopped: {why}")
        assert not isinstance(app.screen, ConfirmScreen) and refused.stops == []
        note = ("it is the systemd unit sglang.service; systemd may start it again: stop it with systemctl stop "
                "sglang.service instead")
        planned = PlannedControl(plan(unit="sglang.service", note=note))
        app.link.control = lambda: planned
        await pilot.press("x")
        screen = await confirmation(pilot, app, "Stop ext-40000?")
        text = "\n".join(screen.lines)
        assert "systemd unit: sglang.service" in text and note in text
        assert "51007  alice" in text and "sglang::scheduler_TP0" in text
        assert screen.query_one("#confirm-command").render().plain == "kill -TERM 51000 51007"
        await pilot.press("y")
        await wait_for(pilot, lambda: planned.stops and app.busy is None, 10, "the stop")
        assert planned.stops == [("ext-40000", [[51000, 777], [51007, 790]])]
