"""The soak's churn counts the found servers that appeared and vanished as processes did: read when it
stops, not in the middle of a step, so a kill still under way in its thread is neither lost nor counted."""

import asyncio
import importlib.util
import threading
import time
from types import SimpleNamespace

from tests.sim.simproc import ROOT


def soak_module(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "bench"))  # soak.py imports its neighbours as a script does
    spec = importlib.util.spec_from_file_location("soak_under_test", ROOT / "bench" / "soak.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class SlowCrowd:
    """Stand-ins that cost nothing to start and take a while to reap, as a loaded machine's do."""

    def __init__(self):
        self.stubs, self.pids = [], iter(range(1000, 2000))
        self.killing = threading.Event()

    def spawn(self, kind):
        stub = SimpleNamespace(pid=next(self.pids), kind=kind)
        self.stubs.append(stub)
        return stub

    def kill(self, stub):
        self.killing.set()
        time.sleep(0.3)
        self.stubs.remove(stub)
        self.killing.clear()


def test_the_churn_stopped_during_a_kill_counts_what_ran(monkeypatch):
    soak = soak_module(monkeypatch)

    async def scenario():
        crowd = SlowCrowd()
        churn = soak.Churn(crowd, every=0.01, keep=2)
        task = asyncio.create_task(churn.run())
        while not (crowd.killing.is_set() and churn.ended >= 2):
            await asyncio.sleep(0.005)
        await churn.stop(task)  # a kill is under way in its thread now
        return churn, crowd

    churn, crowd = asyncio.run(scenario())
    assert len(churn.started) - churn.ended == len(crowd.stubs) <= 2, (churn.started, churn.ended, crowd.stubs)
