"""End to end: ``spectui demo --record FILE`` and ``spectui replay FILE``, installed, in a real tmux: the demo
records while a server switches, quitting says how to play it, and the replay shows the recorded server with
its time line, pauses on space and quits on q."""

import time

import pytest

from tests.e2e.test_demo_tmux import (SPECTUI, TMUX, Tmux, demo_command, free_port_base, kill_leftovers, quit_demo,
                                      row)


@pytest.mark.timeout(240)
def test_demo_record_then_replay_in_tmux(tmp_path):
    assert SPECTUI and TMUX, "needs the installed spectui and tmux (.ci/run installs tmux)"
    recording = tmp_path / "demo.spectui.gz"
    state, cmd = demo_command(tmp_path, "--port-base", str(free_port_base()), "--record", str(recording))
    tmux = Tmux()
    try:
        tmux.start(cmd, size=(120, 40))
        tmux.wait(lambda t: "● REC" in t and "°C" in t, 60, "the dashboard, recording")
        tmux.keys("1")
        tmux.wait(lambda t: "● ready" in row(t, "kimi-baseline") and "tok/s" in t, 90, "kimi-baseline ready")
        tmux.wait(lambda t: "per stream" in t, 30, "its throughput")
        time.sleep(5)  # a few seconds of it served: the replay shows it ready for as long
        out = quit_demo(tmux)
        assert f"spectui replay {recording}` plays it" in out.replace("\n", ""), out
        tmux.kill()

        replay = Tmux()
        tmux = replay
        replay_cmd = cmd.split(" demo ")[0] + f" replay {recording}"
        tmux.start(replay_cmd, size=(120, 40))
        screen = tmux.wait(lambda t: "replay of demo" in t and "▶ 1x" in t, 30, "the replay")
        screen = tmux.wait(lambda t: "● ready" in row(t, "kimi-baseline"), 60, "the recorded server ready")
        tmux.keys("Space")
        screen = tmux.wait(lambda t: "Ⅱ paused" in t, 10, "paused")
        assert "● ready" in row(screen, "kimi-baseline")
        tmux.keys("q")
        tmux.wait(lambda t: tmux.dead() or "$" in t, 20, "the replay to end")
        assert "Traceback" not in tmux.screen(history=200)
    finally:
        tmux.kill()
        kill_leftovers(state)
