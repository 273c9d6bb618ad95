"""Fixtures for the simulated server: start it on a free port with its own state folder, in its
own process group, and always kill that group at teardown."""

from __future__ import annotations

from typing import List, Optional

import pytest

from tests.sim.simproc import SimProcess


@pytest.fixture
def sim_server(tmp_path, request):
    """``sim_server(*flags, env=None, ready=True, state=None)`` starts a server; all are killed at teardown. Its TP
    ranks are kept in the server's process (``SPECTUI_SIM_RANKS=inline``: the same GPU usage, no process per rank)
    unless the test is marked ``rank_processes`` (it looks at the rank processes) or ``env`` says otherwise."""
    started: List[SimProcess] = []
    ranks = {} if request.node.get_closest_marker("rank_processes") else {"SPECTUI_SIM_RANKS": "inline"}

    def start(*args: str, env: Optional[dict] = None, ready: bool = True, name: str = "server",
              state=None) -> SimProcess:
        if state is None:  # each server on a host of its own, unless told to share one
            state = tmp_path / ("state-%d" % len(started))
            state.mkdir()
        sp = SimProcess(list(args), state, tmp_path / ("%s-%d.log" % (name, len(started))), dict(ranks, **(env or {})))
        started.append(sp)
        if ready:
            sp.wait_ready()
        return sp

    yield start
    for sp in started:
        sp.kill_group()
