"""Quitting a demo of several hosts stops the benchmark under way on every host, not only the shown one's, and
waits until what each measured is saved, before the servers stop."""

from __future__ import annotations

from types import SimpleNamespace

from spectui.core.console import HostConsole
from spectui.core.history import HistoryStore
from spectui.core.live import HostLink, LinkState
from spectui.core.profiles import ProfileLibrary
from spectui.core.session import HostTarget
from spectui.ui.controllers.quit import QuitController
from tests.core.console.test_jobs import running


def host_console(label: str) -> HostConsole:
    target = HostTarget(kind="ssh", destination=label)
    link = HostLink(target)
    link.state = LinkState.CONNECTED
    link.session = SimpleNamespace(target=target)
    return HostConsole(target, ProfileLibrary(), link=link)


async def test_quitting_the_demo_stops_every_hosts_benchmark_first(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(tmp_path / "data"))
    hosts = [host_console("gpu-a"), host_console("gpu-b")]
    handles = {}
    for console in hosts:
        _job, handles[console.label] = await running(console, monkeypatch, f"run-{console.label}")
    for console in hosts:  # as quitting finds them: nothing left to stop on a host that is gone
        console.link.state = LinkState.CLOSED
    app = SimpleNamespace(demo=True, keep=False, hosts=hosts, host=hosts[0], refresh_now=lambda: None,
                          notify=lambda *a, **k: None, again=SimpleNamespace(reopen="spectui demo"))
    await QuitController(app)._quit_hosts()
    assert all(h.cancelled for h in handles.values())  # the host not shown too
    assert sorted((r["run_id"], r["state"]) for r in HistoryStore().runs()) == \
        [("run-gpu-a", "interrupted"), ("run-gpu-b", "interrupted")]
