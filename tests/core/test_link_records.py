"""The link keeps the agent's server records as checked ServerRecords, and everything that writes them
as JSON (a recording's session line, a recorded agent event, a replay) writes the record itself."""

import logging

from spectui.agent.protocol import Event as WireEvent
from spectui.core.live import HostLink, LinkState
from spectui.core.recording import RecordingWriter, read_recording
from spectui.core.replay import ReplayLink
from spectui.core.rpc import Event
from spectui.core.servers import ServerRecord
from spectui.core.session import HostTarget

GOOD = {"name": "kimi-eagle3", "state": "ready", "pid": 4242, "port": 30000, "origin": "spectui",
        "argv": ["python3", "-m", "sglang.launch_server", "--port", "30000"]}


def test_the_link_keeps_checked_records_and_skips_a_malformed_one(state_dir, caplog):
    link = HostLink(HostTarget.demo(str(state_dir)))
    caplog.set_level(logging.WARNING, logger="spectui")
    link._on_event(Event(WireEvent.SERVER, GOOD, 0.0))
    link._on_event(Event(WireEvent.SERVER, {**GOOD, "name": "broken", "state": "runing"}, 0.0))
    assert isinstance(link.servers["kimi-eagle3"], ServerRecord) and link.servers["kimi-eagle3"] == GOOD
    assert "broken" not in link.servers
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "'runing'" in warned[0]
    link.record_server({**GOOD, "state": "stopping"})
    assert isinstance(link.servers["kimi-eagle3"], ServerRecord) and link.servers["kimi-eagle3"]["state"] == "stopping"


def test_a_recording_writes_records_as_objects_and_a_replay_reads_them_back(state_dir, tmp_path):
    path = tmp_path / "r.spectui.gz"
    w = RecordingWriter(path, {"host": {"hostname": "gpu-box"}})
    rec = ServerRecord.from_wire(GOOD)
    w.write("session", {"facts": {"hostname": "gpu-box"}, "servers": [rec]})
    w.write("server", rec)
    w.close()
    events = read_recording(path).events
    assert events[0][2]["servers"] == [GOOD] and events[1][2] == GOOD  # the record, not its repr
    replay = ReplayLink(read_recording(path))
    replay.seek(replay.duration_s)
    assert replay.state is LinkState.CONNECTED
    assert isinstance(replay.servers["kimi-eagle3"], ServerRecord) and replay.servers["kimi-eagle3"] == GOOD
