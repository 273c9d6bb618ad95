"""The dashboard's first frame with the host's figures does not wait on the history's disk: the profiles' earlier
probes are read on a thread of their own."""

from __future__ import annotations

import gc
import threading
import time

from spectui.core.history import HistoryStore
from tests.ui.support import connected, panel_text, wait_for
from tests.ui.test_console_pilot import SIZE, make_app


async def test_a_slow_history_holds_up_neither_the_connection_nor_the_first_frame(ui_env, monkeypatch):
    gate, gave_up = threading.Event(), []
    real = HistoryStore.latest_probe

    def slow(self, *args, **kwargs):  # a history on a disk that does not answer for a while
        if not gate.wait(8):
            gave_up.append(time.monotonic())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(HistoryStore, "latest_probe", slow)
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        first = app.profiles[0].name
        await wait_for(pilot, lambda: first in panel_text(app, "profiles"), 5, "the profiles' rows")
        assert not gave_up, "the console waited on the history before its first frame"
        gate.set()


async def test_the_collector_held_off_for_the_start_runs_again_once_the_first_frame_is_shown(ui_env):
    """``spectui demo`` and ``connect`` start with the collector off (spectui.cli.console.run); the console turns it
    on at its first frame, with what the start made kept out of its generations. One the console did not turn off
    (a test's, an embedding program's) it leaves as it is."""
    frozen = gc.get_freeze_count()
    gc.disable()
    try:
        app = make_app(ui_env)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: gc.isenabled(), 5, "the collector turned on again")
            assert gc.get_freeze_count() > frozen
    finally:
        gc.enable()
        gc.unfreeze()
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        assert gc.isenabled() and gc.get_freeze_count() == 0
