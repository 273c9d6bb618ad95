"""End to end: ``spectui demo --hosts 2`` in a real tmux: the overview of both simulated hosts first, enter opens
one, a server switched there shows on its row; the shipped two-node profile starts on both hosts as one server
(the switch stops what held the second host's GPUs), and quitting stops what ran on each host."""

import pytest

from tests.e2e.test_demo_tmux import (SPECTUI, TMUX, Tmux, demo_command, kill_leftovers, port_free, quit_demo, row)


def two_host_port_base(count: int = 16) -> int:
    """A port base whose range is free for the first host and, 1000 above, for the second."""
    for base in range(36000, 38000, count):
        if all(port_free(p) and port_free(p + 1000) for p in range(base, base + count)):
            return base
    raise AssertionError("no free port range for two demo hosts")


@pytest.mark.timeout(240)
def test_demo_with_two_hosts_in_tmux(tmp_path):
    assert SPECTUI and TMUX, "needs the installed spectui and tmux (.ci/run installs tmux)"
    state, cmd = demo_command(tmp_path, "--hosts", "2", "--no-traffic", "--port-base", str(two_host_port_base()))
    second = state.parent / f"{state.name}-2"
    tmux = Tmux()
    try:
        tmux.start(cmd, size=(160, 50))
        screen = tmux.wait(lambda t: "2 of 2 connected" in t, 90, "the overview with both hosts connected")
        assert "demo-1" in screen and "demo-2" in screen and "◀ dashboard" in screen
        tmux.keys("Down", "Enter")
        tmux.wait(lambda t: "demo-2" in t.splitlines()[0] and "°C" in t, 20, "demo-2's dashboard")
        tmux.keys("1")
        tmux.wait(lambda t: "● ready" in row(t, "kimi-baseline"), 90, "kimi-baseline ready on demo-2")
        tmux.keys("H")
        screen = tmux.wait(lambda t: "Hosts ·" in t and "kimi-baseline" in t, 20, "the overview")
        line = next(ln for ln in screen.splitlines() if "demo-2" in ln)
        assert "kimi-baseline" in line and " ok " in line and "◀ dashboard" in line
        assert "kimi-baseline" not in next(ln for ln in screen.splitlines() if "demo-1" in ln)
        tmux.keys("Escape")
        tmux.wait(lambda t: "Hosts ·" not in t, 10, "the dashboard again")   # (an escape and q at once read as alt+q)
        # the shipped two-node profile: its nodes are the demo's two hosts; one confirmation lists both
        tmux.keys("<")
        tmux.wait(lambda t: "demo-1" in t.splitlines()[0], 10, "demo-1's dashboard")
        tmux.keys("9")
        screen = tmux.wait(lambda t: "on 2 nodes?" in t, 30, "the two-node confirmation")
        assert "Node 0 on demo-1" in screen and "Node 1 on demo-2" in screen and "stops kimi-baseline" in screen
        tmux.keys("y")
        screen = tmux.wait(lambda t: "● ready" in row(t, "twonode-kimi-eagle3"), 120, "ready on both nodes")
        tmux.keys("H")
        screen = tmux.wait(lambda t: "Hosts ·" in t and t.count("twonode-kimi-eagle3") >= 2, 20, "both rows")
        tmux.keys("Escape")
        tmux.wait(lambda t: "Hosts ·" not in t, 10, "the dashboard again")
        out = quit_demo(tmux).replace("\n", "")
        assert "demo-1: stopped twonode-kimi-eagle3" in out and "demo-2: stopped twonode-kimi-eagle3" in out, out
    finally:
        tmux.kill()
        kill_leftovers(state)
        kill_leftovers(second)
