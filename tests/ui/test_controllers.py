"""The console as controllers and messages: the host link's events reach the App as messages, in order;
a reconnection opens one session and restarts what each session needs once; a switch and a restart go
through the same stages."""

import asyncio
import os
import signal
from pathlib import Path

from textual import on

from spectui.core.link_events import FrameReceived, LinkStateChanged, SessionOpened
from spectui.core.profiles import load_profiles
from spectui.core.rpc import AgentClient
from spectui.core.session import HostTarget
from spectui.ui import app as app_module
from spectui.ui import messages
from spectui.ui.app import SpectuiApp
from spectui.ui.controllers.traffic import SYNC_S
from spectui.ui.screens.confirm import ConfirmScreen
from tests.ui.support import connected, panel_text, said, server_state, wait_for

SIZE = (120, 40)


class HearingApp(SpectuiApp):
    """The console, keeping every message the host link sent it, in the order the App received them."""

    CSS_PATH = str(Path(app_module.__file__).with_name(SpectuiApp.CSS_PATH))  # the console's own, not beside this file

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.heard: list[messages.LinkMessage] = []

    @on(messages.LinkMessage)
    def _keep(self, message: messages.LinkMessage) -> None:
        self.heard.append(message)

    def kinds(self, *types) -> list:
        return [m for m in self.heard if isinstance(m, types)]

    def stages(self, target: str, since: int = 0) -> list[str]:
        """The stages a switch to ``target`` went through (a stage that reports progress comes once a report)."""
        out: list[str] = []
        for m in self.heard[since:]:
            if isinstance(m, messages.SwitchStage) and m.event.target == target and out[-1:] != [m.event.stage]:
                out.append(m.event.stage)
        return out


def make_app(env, **kw) -> HearingApp:
    kw.setdefault("traffic", False)
    return HearingApp(HostTarget.demo(str(env.state)), library=load_profiles(), **kw)


async def test_a_sessions_events_arrive_as_messages_in_order(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await pilot.press("1")  # alpha: nothing runs, so no confirmation
        await wait_for(pilot, lambda: server_state(app, "alpha") == "ready" and app.busy is None, 60, "alpha ready")
        await wait_for(pilot, lambda: "ready" in app.stages("alpha"), 5, "the ready stage as a message")
        gpu_messages = lambda: [m for m in app.kinds(messages.FrameReceived) if m.event.kind == "gpu"]  # noqa: E731
        await wait_for(pilot, lambda: len(gpu_messages()) >= 2, 10, "two GPU frames as messages")

        heard = app.heard
        opened = [i for i, m in enumerate(heard) if isinstance(m, messages.SessionOpened)]
        assert len(opened) == 1 and isinstance(heard[opened[0]].event, SessionOpened)
        assert heard[opened[0]].event.session is app.link.session and heard[opened[0]].event.reconnects == 0
        # the link said it was connecting before the session opened, and nothing of the session came before it
        assert isinstance(heard[0], messages.LinkStateChanged) and heard[0].event.state == "connecting"
        before = heard[:opened[0]]
        assert all(isinstance(m, messages.LinkStateChanged) for m in before), [type(m).__name__ for m in before]
        assert isinstance(before[-1].event, LinkStateChanged) and before[-1].event.state == "connected"

        # the switch's stages, as messages, are the stages the link recorded, in the same order
        recorded = [stage for stage, _ in app.link.switch.history]
        assert app.stages("alpha") == recorded
        assert recorded[0] == "starting" and recorded[-1] == "ready" and len(recorded) >= 3, recorded
        # the server's record as a message: the last one for alpha is what the link holds now
        alpha = [m.event.record for m in app.kinds(messages.ServerChanged) if m.event.name == "alpha"]
        assert alpha and alpha[-1]["state"] == "ready" and alpha[-1] == app.link.servers["alpha"]
        # GPU frames arrive as messages in the order the host sent them
        gpu = [m.event.frame for m in app.kinds(messages.FrameReceived)
               if isinstance(m.event, FrameReceived) and m.event.kind == "gpu"]
        assert len(gpu) >= 2
        stamps = [f.received_at for f in gpu]
        assert stamps == sorted(stamps)
        assert gpu[-1] is app.link.gpu


async def test_a_reconnection_opens_one_session_and_restarts_traffic_and_telemetry_once(ui_env, monkeypatch):
    calls: list[tuple[int, str]] = []
    real_call = AgentClient.call

    async def recording_call(self, method, params=None, **kw):
        calls.append((id(self), method))
        answer = await real_call(self, method, params, **kw)
        if method == "traffic.start":  # a loaded host answers late: longer than the traffic's sync period
            await asyncio.sleep(3 * SYNC_S)
        return answer

    monkeypatch.setattr(AgentClient, "call", recording_call)
    app = make_app(ui_env, traffic=True, telemetry_hz=0)  # the demo load on; no GPU telemetry wanted
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.link is not None and app.link.connected and app.screen is app.dashboard,
                       30, "the console to connect")
        await wait_for(pilot, lambda: app.traffic.on, 10, "the demo traffic")
        first = app.link.session
        agent_pid = first.hello["pid"]
        os.kill(agent_pid, signal.SIGKILL)
        await wait_for(pilot, lambda: app.link.connected and app.link.session is not first, 30, "the reconnection")
        second = app.link.session
        await wait_for(pilot, lambda: (id(second.client), "traffic.start") in calls, 10, "the traffic again")
        await wait_for(pilot, lambda: (id(second.client), "gpu.unsubscribe") in calls, 10, "telemetry off again")
        await pilot.pause(1.5)  # several refreshes: none of them may start anything again

        opened = app.kinds(messages.SessionOpened)
        assert [m.event.reconnects for m in opened] == [0, 1]
        assert [m.event.session for m in opened] == [first, second]
        assert len(app.kinds(messages.SessionClosed)) == 1
        for session in (first, second):
            made = [method for client, method in calls if client == id(session.client)]
            for method in ("gpu.subscribe", "server.telemetry.subscribe", "gpu.unsubscribe",
                           "server.telemetry.unsubscribe", "traffic.start"):
                assert made.count(method) == 1, (method, made)
        await wait_for(pilot, lambda: app.traffic.on, 10, "the host to confirm the traffic")


async def test_a_switch_and_a_restart_go_through_the_same_stages(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await pilot.press("1")
        await wait_for(pilot, lambda: server_state(app, "alpha") == "ready" and app.busy is None, 60, "alpha ready")
        await wait_for(pilot, lambda: "ready" in app.stages("alpha"), 5, "the ready stage")
        switched = app.stages("alpha")
        pid = app.link.servers["alpha"]["pid"]
        mark = len(app.heard)

        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the confirmation")
        assert app.screen.title_text == "Restart alpha?"
        await pilot.press("y")
        await wait_for(pilot, lambda: app.busy == "restarting alpha", 20, "the restart to begin")
        await wait_for(pilot, lambda: app.busy is None and server_state(app, "alpha") == "ready"
                       and app.link.servers["alpha"]["pid"] != pid, 60, "alpha ready again")
        await wait_for(pilot, lambda: "ready" in app.stages("alpha", mark), 5, "the ready stage again")

        assert app.stages("alpha", mark) == switched
        # the same outcome, said the same way, and the same server panel: its stages and their total
        assert len(said(app, "alpha is ready (")) == 2
        assert app.host.switches.results["alpha"]["server"]["pid"] == app.link.servers["alpha"]["pid"]
        await pilot.pause(0.5)
        server = panel_text(app, "server")
        for stage in ("starting", "loading", "ready", "total"):
            assert stage in server, server


async def test_a_restart_confirmed_while_another_action_took_the_seat_says_it_was_refused(ui_env):
    """The seat is taken between the question and the answer (a benchmark began meanwhile): the answer is refused
    in one sentence naming what holds the seat, and nothing is started."""
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        await pilot.press("1")
        await wait_for(pilot, lambda: server_state(app, "alpha") == "ready" and app.busy is None, 60, "alpha ready")
        pid = app.link.servers["alpha"]["pid"]
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the confirmation")
        assert app.host.seat.take("benchmarking alpha")
        await pilot.press("y")
        await wait_for(pilot, lambda: said(app, "Restart refused"), 10, "the refusal")
        assert said(app, "Restart refused") == ["Restart refused. Wait: benchmarking alpha."]
        assert app.busy == "benchmarking alpha" and app.link.servers["alpha"]["pid"] == pid
        app.host.seat.release()
