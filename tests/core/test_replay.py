"""Record a demo session (a switch, a served speculative server under traffic), then replay it: every frame
the replay shows equals the frame that was shown live; seek (backwards too), speed and pause; a replay is
read-only."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from spectui.core.errors import Disconnected
from spectui.core.link_events import FrameReceived, SwitchStage
from spectui.core.live import HostLink
from spectui.core.profiles import load_profiles
from spectui.core.recording import RecordingWriter, read_recording
from spectui.core.replay import ReplayLink
from spectui.core.session import HostTarget
from tests.support.sshd import free_port
from tests.core.test_live import wait_until


def shown(event) -> tuple:
    """What the console shows of a frame: everything but the client's clock."""
    if isinstance(event, SwitchStage):
        return ("switch", event.target, event.stage)
    frame = dataclasses.replace(event.frame, received_at=0.0)
    return (event.kind, event.name, frame)


@pytest.fixture
def ngram_profile(tmp_path, monkeypatch):
    port = free_port()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "rec.yaml").write_text(
        f"name: rec\nmodel: sim/rec\nport: {port}\ngpus: [0, 1]\nargs:\n  tp-size: 2\n"
        "  speculative-algorithm: NGRAM\n  speculative-num-draft-tokens: 4\n"
        "sim:\n  load-time: 0.3\n")
    monkeypatch.setenv("SPECTUI_PROFILES_PATH", str(tmp_path / "profiles"))
    return load_profiles().get("rec")


async def test_a_recorded_session_replays_frame_for_frame(state_dir, tmp_path, ngram_profile):
    path = tmp_path / "session.spectui.gz"
    link = HostLink(HostTarget.demo(str(state_dir)), gpu_interval_s=0.25, server_interval_s=0.25)
    link.recorder = RecordingWriter(path, {"target": "demo", "profiles": [ngram_profile.name]})
    live = []
    link.events.subscribe(lambda e: live.append(shown(e)) if isinstance(e, (FrameReceived, SwitchStage)) else None)
    task = asyncio.create_task(link.run())
    try:
        await wait_until(lambda: link.connected)
        await link.switch_to(ngram_profile)
        await link.session.client.call("traffic.start", {"concurrency": 2, "seed": 3})
        await wait_until(lambda: (s := link.series.get("rec")) is not None and s.latest is not None
                         and s.latest.accept_length.value is not None, timeout=60)
        await asyncio.sleep(2.0)
    finally:
        if link.connected:   # whatever happened, nothing is left running
            await link.session.client.call("traffic.stop")
            await link.stop_all()
        await link.close()
        await asyncio.wait_for(task, 20)
        link.recorder.close()

    rec = read_recording(path)
    assert not rec.truncated and rec.header["target"] == "demo"
    replay = ReplayLink(rec)
    replayed = []
    replay.events.subscribe(lambda e: replayed.append(shown(e)) if isinstance(e, (FrameReceived, SwitchStage)) else None)
    replay.seek(rec.duration_s)
    assert len(replayed) == len(live), (len(replayed), len(live), replayed[-3:], live[-3:])
    assert replayed == live
    assert any(k == "server" and f.accept_length.value is not None for k, _, f in
               (x for x in replayed if x[0] == "server"))
    assert [s for s in replayed if s[0] == "switch"][-1][2] in ("stopped", "ready")
    def state():
        return {n: dataclasses.replace(s.latest, received_at=0.0) for n, s in replay.series.items()}

    end_state = state()

    # backwards, then forwards again: the same state
    replay.seek(rec.duration_s / 3)
    assert replay.position_s == pytest.approx(rec.duration_s / 3)
    assert state() != end_state
    replay.seek(rec.duration_s)
    assert state() == end_state

    with pytest.raises(Disconnected, match="This is a replay"):
        replay.control()


class Clock:
    """A recording's clock, moved by hand."""
    t = 5000.0

    def __call__(self):
        return self.t


def test_speed_pause_and_seek_bounds(tmp_path):
    clock = Clock()
    w = RecordingWriter(tmp_path / "r.gz", {"target": "x"}, clock=clock)
    for i in range(120):
        clock.t += 1.0
        w.write("gpu", {"seq": i, "source": "sim", "gpus": [{"index": 0, "util_pct": float(i)}]})
    w.close()
    replay = ReplayLink(read_recording(tmp_path / "r.gz"))
    replay.advance(1.5)
    assert replay.gpu.gpus[0].util_pct == 0.0
    assert replay.faster() == 2.0 and replay.faster() == 5.0
    replay.advance(2.0)                       # 10 s of recording
    assert replay.gpu.seq == 10
    assert replay.toggle_pause() is True
    replay.advance(100.0)
    assert replay.gpu.seq == 10
    replay.toggle_pause()
    replay.seek(10_000)
    assert replay.position_s == replay.duration_s and replay.at_end and replay.gpu.seq == 119
    replay.seek(-5)
    assert replay.position_s == 0 and replay.gpu is None
    assert replay.slower() == 2.0
    with pytest.raises(ValueError, match="from 1x to 60x"):  # spectui replay --speed 120
        ReplayLink(read_recording(tmp_path / "r.gz"), speed=120)


def test_a_recorded_benchmark_shows_its_progress_up_to_the_play_head_and_the_profiles_come_back(tmp_path):
    from spectui.core.profiles import load_profiles

    clock = Clock()
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "e.yaml").write_text(
        "name: kimi-eagle3\nmodel: moonshotai/Kimi-K2.5\nport: 30001\ngpus: [0, 1]\nenv: {HF_TOKEN: hf_secret}\n"
        "args:\n  tp-size: 2\n  speculative-algorithm: EAGLE3\n  api-key: sk-secret\n")
    profile = load_profiles([str(tmp_path / "p")]).get("kimi-eagle3")
    w = RecordingWriter(tmp_path / "r.gz", {"target": "root@gpu-box", "profiles": [profile.redacted()]}, clock=clock)
    clock.t += 1
    w.write("session", {"facts": {"hostname": "gpu-box"}, "servers": []})
    for i in range(10):
        clock.t += 1.0
        w.write("bench_progress", {"run_id": "r-1", "state": "done" if i == 9 else "running", "done": i,
                                   "total": 9, "tok_s": 60.0 + i})
    w.close()
    replay = ReplayLink(read_recording(tmp_path / "r.gz"))
    replay.seek(5.5)
    (run,) = replay.bench.active()
    assert (run.done, run.tok_s) == (3, 63.0)   # the events at 2 to 5 s
    replay.seek(replay.duration_s)
    assert replay.bench.active() == [] and replay.bench.runs["r-1"].state == "done"
    replay.seek(2.5)   # backwards: the board is as it was then
    assert replay.bench.runs["r-1"].done == 0
    (back,) = replay.profiles()
    assert back.name == "kimi-eagle3" and back.algorithm == "EAGLE3" and back.gpus == ("0", "1")
    assert back.env == {"HF_TOKEN": "<redacted>"} and back.args["api-key"] == "<redacted>"  # never the secret
    assert back.port == 30001 and back.model == "moonshotai/Kimi-K2.5"
