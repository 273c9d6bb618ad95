"""A host's console without Textual: its one action seat names what holds it, every host's alerts are judged
whichever host is shown, each host keeps its own switch results and logs, a replay's console refuses every
action in one sentence, and what it publishes carries its data."""

from __future__ import annotations

import asyncio

from spectui.core.console import READ_ONLY, AlertChanged, HostConsole, LinkNews, SeatChanged, SwitchOutcome
from spectui.core.errors import SpectuiError
from spectui.core.link_events import FrameReceived, ServerChanged, ServersForgotten
from spectui.core.live import HostLink, LinkState
from spectui.core.profiles import ProfileLibrary
from spectui.core.profiles.model import Profile
from spectui.core.replay import ReplayLink
from spectui.core.recording import Recording
from spectui.core.session import HostTarget


def console(label: str, *, connected: bool = True) -> tuple[HostConsole, HostLink, list]:
    target = HostTarget(kind="ssh", destination=label)
    link = HostLink(target)
    if connected:
        link.state = LinkState.CONNECTED
    host = HostConsole(target, ProfileLibrary(), link=link)
    heard: list = []
    host.events.subscribe(heard.append)
    return host, link, heard


def crashed(link: HostLink, name: str) -> None:
    link.servers[name] = {"name": name, "state": "crashed", "origin": "spectui", "started_at": 1.0}


def test_the_seat_refuses_a_second_action_naming_what_holds_it_and_says_each_change():
    host, _link, heard = console("gpu-a")
    assert host.refusal() is None
    assert host.seat.take("benchmarking alpha")
    assert not host.seat.take("switching to beta")
    assert host.refusal() == "Wait: benchmarking alpha."
    host.seat.release()
    assert host.refusal() is None
    assert [e for e in heard if isinstance(e, SeatChanged)] == [SeatChanged("gpu-a", "benchmarking alpha"),
                                                                SeatChanged("gpu-a", None)]


def test_a_disconnected_host_refuses_actions_in_one_sentence():
    host, _link, _heard = console("gpu-a", connected=False)
    assert host.refusal() == "Not connected: wait for the connection to come back."
    assert host.seat.holder is None


def test_every_hosts_alerts_are_judged_from_its_own_link_whichever_is_shown():
    shown, _, _ = console("gpu-a")
    other, other_link, heard = console("gpu-b")
    crashed(other_link, "kimi")
    other_link.events.publish(FrameReceived("gpu", None, None))  # the other host's frame: its console judges
    (alert,) = [e for e in heard if isinstance(e, AlertChanged)]
    assert alert.host == "gpu-b" and alert.change.kind == "fired" and alert.change.alert.subject == "kimi"
    assert set(other.alerts.active) == {("server_down", "kimi")} and not shown.alerts.active


def test_each_host_keeps_its_switch_results_and_logs():
    a, _, _ = console("gpu-a")
    b, _, _ = console("gpu-b")
    profile = Profile(name="alpha", model="m", port=30000)

    async def ready(_link):
        return {"server": {"name": "alpha", "state": "ready"}, "total_s": 1.0}

    async def refused(_link):
        raise SpectuiError("port 30000 is in use")

    asyncio.run(a.start_server(profile, ready))
    try:
        asyncio.run(b.start_server(profile, refused))
    except SpectuiError:
        pass
    a.logs.buffer("alpha").feed({"lines": ["loaded"], "offset": 7})
    assert a.switches.results["alpha"]["server"]["state"] == "ready" and "alpha" not in a.switches.errors
    assert b.switches.errors == {"alpha": "port 30000 is in use"} and b.switches.results == {}
    assert list(a.logs.tail("alpha").lines) == ["loaded"] and b.logs.tail("alpha") is None


def test_a_replay_refuses_every_action_once_through_its_seat(tmp_path):
    from spectui.core.recording import RecordingWriter, read_recording
    path = tmp_path / "r.spectui.gz"
    writer = RecordingWriter(path, {"target": "gpu-a", "kind": "ssh", "host": {}, "profiles": []})
    writer.write("session", {"facts": {}, "servers": []})
    writer.close()
    replay = ReplayLink(read_recording(path))
    assert isinstance(replay.recording, Recording) and replay.read_only and not HostLink.read_only
    host = HostConsole(replay.target, ProfileLibrary(), link=replay)
    assert host.refusal() == READ_ONLY
    assert not host.seat.take("switching to alpha") and host.seat.holder is None
    host.judge_alerts()  # a replay's alerts are the recorded ones: never judged again
    assert not host.alerts.active


def test_events_carry_their_data():
    host, link, heard = console("gpu-a")
    record = {"name": "alpha", "state": "ready", "origin": "spectui"}
    link.record_server(record)
    assert LinkNews("gpu-a", ServerChanged("alpha", record)) in heard
    profile = Profile(name="alpha", model="m", port=30000)

    async def ready(_link):
        return {"server": record}

    asyncio.run(host.start_server(profile, ready))
    assert heard[-1] == SwitchOutcome("gpu-a", "alpha", result={"server": record})


class FakeLogs:
    """A host that answers ``server.logs`` from a script: each read's reply, or the error it raises."""

    def __init__(self, replies: list) -> None:
        self.replies = replies
        self.asked: list[dict] = []

    async def logs(self, name: str, *, lines: int = 40, offset: int | None = None) -> dict:
        self.asked.append({"name": name, "offset": offset})
        reply = self.replies.pop(0) if self.replies else {"lines": [], "offset": offset}
        if isinstance(reply, Exception):
            raise reply
        return reply


async def test_a_followed_log_is_read_by_the_console_and_each_read_that_changed_it_is_published(monkeypatch):
    from spectui.core.console import LogRead, host as host_module
    from spectui.core.errors import AgentCallError
    monkeypatch.setattr(host_module, "LOG_READ_S", 0.05)
    host, link, heard = console("gpu-a")
    link.servers["alpha"] = {"name": "alpha", "state": "ready", "origin": "spectui"}
    agent = FakeLogs([{"lines": ["loading", "ready \x1b[31m"], "offset": 20}, {"lines": [], "offset": 20},
                      AgentCallError("no_log", "no log for alpha"), {"reset": True, "lines": ["again"], "offset": 6}])
    link.control = lambda: agent
    reads = lambda: [e for e in heard if isinstance(e, LogRead)]  # noqa: E731
    host.follow_log("alpha")
    for _ in range(200):
        await asyncio.sleep(0.05)
        if len(reads()) == 3:
            break
    host.follow_log(None)
    first, failed, again = reads()
    assert first == LogRead("gpu-a", "alpha", ("loading", "ready ␛[31m"))  # made visible as it arrives
    assert failed == LogRead("gpu-a", "alpha", error="no log yet")
    assert again == LogRead("gpu-a", "alpha", ("again",), reset=True)
    assert list(host.logs.buffers["alpha"].lines) == ["again"] and agent.asked[1]["offset"] == 20
    assert host.following is None and host._reader is None


def test_what_is_kept_of_servers_the_link_forgets_goes_when_it_says_so_except_the_log_read_now():
    host, link, heard = console("gpu-a")
    link.found_grace_s = 0.0
    for name in ("ext-1", "ext-2"):
        link.servers[name] = {"name": name, "state": "stopped", "origin": "external"}
        host.logs.buffer(name).feed({"lines": [f"{name} said"], "offset": 9})
        host.switches.errors[name] = "refused"
    host.following = "ext-2"                 # a log screen shows it
    assert link.prune() == ["ext-1", "ext-2"]
    assert [e.event for e in heard if isinstance(e, LinkNews)] == [ServersForgotten(("ext-1", "ext-2"))]
    assert host.logs.tail("ext-1") is None and list(host.logs.tail("ext-2").lines) == ["ext-2 said"]
    assert host.switches.errors == {}
