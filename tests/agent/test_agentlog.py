"""The agent's log records as ``agent.log`` events: the level the client asks for, the rate limit and
the count of what it left out, and the records landing in the console's own log."""

from __future__ import annotations

import logging

from spectui.agent import agentlog
from spectui.agent.protocol import EVENT_AGENT_LOG
from spectui.core import logsetup
from spectui.core.session import HostTarget, open_session


class Recorder:
    def __init__(self):
        self.events = []

    def event(self, name, data):
        self.events.append((name, data))
        return True


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_records_are_rate_limited_and_the_next_one_says_how_many_were_left_out():
    channel, clock = Recorder(), Clock()
    handler = agentlog.EventLogHandler(channel, logging.DEBUG, rate_per_s=10, burst=5, clock=clock)
    logger = logging.getLogger("spectui.agent.test_rate")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        for i in range(20):
            logger.info("record %d", i)
        assert [d["message"] for _, d in channel.events] == [f"record {i}" for i in range(5)]
        clock.t += 0.25  # 2.5 records' worth of time
        logger.warning("after the pause")
        logger.warning("and another")
        logger.warning("one too many")
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    names = {name for name, _ in channel.events}
    assert names == {EVENT_AGENT_LOG}
    later = [d for _, d in channel.events[5:]]
    assert [d["message"] for d in later] == ["after the pause", "and another"]
    assert later[0]["dropped"] == 15 and "dropped" not in later[1]
    assert later[0]["levelno"] == logging.WARNING and later[0]["logger"] == "spectui.agent.test_rate"


def test_tracebacks_travel_with_the_record():
    channel = Recorder()
    installed = agentlog.install(channel, "error", logger_name="spectui.agent.test_exc")
    logger = logging.getLogger("spectui.agent.test_exc.child")
    try:
        logger.warning("below the level: not sent")
        try:
            {}["missing"]
        except KeyError:
            logger.exception("lookup failed")
    finally:
        agentlog.uninstall(installed)
    assert len(channel.events) == 1
    data = channel.events[0][1]
    assert data["message"] == "lookup failed" and "KeyError: 'missing'" in data["exc"]
    assert logging.getLogger("spectui.agent.test_exc").propagate is True  # as it was


def test_replayed_records_follow_the_console_level(tmp_path):
    path = tmp_path / "c.log"
    try:
        logsetup.configure(log_file_path=path)  # WARNING
        logsetup.replay_agent_record({"levelno": logging.INFO, "logger": "spectui_agent.servers.manager",
                                      "message": "quiet", "time": 1.0}, "h1")
        logsetup.replay_agent_record({"levelno": logging.ERROR, "logger": "spectui_agent.servers.manager",
                                      "message": "loud", "time": 1.0, "exc": "Traceback ...\nOSError: x",
                                      "dropped": 3}, "h1")
        logsetup.replay_agent_record({"levelno": "not a level"}, "h1")  # ignored, no exception
    finally:
        logsetup.reset()
    text = path.read_text()
    assert "quiet" not in text
    assert "ERROR   spectui.host.servers.manager: [h1] loud\nTraceback ...\nOSError: x" in text
    assert "the agent left out 3 log records" in text


async def test_a_local_agent_sends_its_start_record_at_debug(state_dir, tmp_path):
    path = tmp_path / "client.log"
    try:
        logsetup.configure(debug=True, log_file_path=path)
        session = await open_session(HostTarget.demo(str(state_dir)))
        await session.close()
    finally:
        logsetup.reset()
    assert f"spectui.host.main: [demo (simulated host)] agent started: pid {session.hello['pid']}" in path.read_text()
