"""Discovery on a shared host: the simulated host is a world of its own (it lists only the simulated
servers of its own state folder, never a real SGLang server nor one whose folder it cannot read), and
an agent keeps nothing of a found server once it has gone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from spectui.agent.protocol import Channel
from spectui.agent.servers.manager import ServerManager
from spectui.core.session import HostTarget, open_session
from tests.agent.crowded_stubs import CrowdedHost

ROOT = Path(__file__).resolve().parents[2]


async def listed_names(target):
    s = await open_session(target)
    try:
        return {v["name"]: v for v in (await s.client.call("servers.list"))["servers"]}
    finally:
        await s.close()


async def test_each_demo_host_lists_only_the_simulated_servers_of_its_own_folder(tmp_path):
    a, b = tmp_path / "demo-1", tmp_path / "demo-2"
    a.mkdir()
    b.mkdir()
    real = CrowdedHost(silent=2, trickling=0)
    sim_a = CrowdedHost(silent=1, trickling=0, module="spectui.sim.server", extra=("--sim-state", str(a)))
    sim_b = CrowdedHost(silent=1, trickling=0, module="spectui.sim.server", env={"SPECTUI_STATE_DIR": str(b)})
    with real, sim_a, sim_b:
        on_a = await listed_names(HostTarget.demo(str(a)))
        on_b = await listed_names(HostTarget.demo(str(b)))
        on_real = await listed_names(HostTarget(kind="local", state_dir=str(tmp_path / "real"), gpu_source="none"))
    real_names = set("ext-%d" % p for p in real.ports)
    assert not real_names & set(on_a) and not real_names & set(on_b), (sorted(on_a), sorted(on_b))
    assert "ext-%d" % sim_a.ports[0] in on_a and "ext-%d" % sim_a.ports[0] not in on_b
    assert "ext-%d" % sim_b.ports[0] in on_b and "ext-%d" % sim_b.ports[0] not in on_a
    # a real host still finds the real servers (and no simulated one of a folder that is not its own)
    assert real_names <= set(on_real) and not {"ext-%d" % sim_a.ports[0], "ext-%d" % sim_b.ports[0]} & set(on_real)


def test_a_demo_host_of_another_user_never_lists_a_server_whose_folder_it_cannot_read(tmp_path):
    """An agent running as nobody cannot read root's processes' environment: a simulated server whose
    folder is only in its environment is not the agent's, whatever that folder is."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root and setpriv to run an agent as nobody")
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    state = Path(tempfile.mkdtemp(prefix="spectui-nobody-"))  # pytest's tmp folders are private to root
    os.chmod(state, 0o755)
    subprocess.run(["chown", "-R", "nobody:nogroup", str(state)], check=True)
    mine = CrowdedHost(silent=1, trickling=0, module="spectui.sim.server", extra=("--sim-state", str(state)))
    unreadable = CrowdedHost(silent=1, trickling=0, module="spectui.sim.server", env={"SPECTUI_STATE_DIR": str(state)})
    agent = None
    try:
        with mine, unreadable:
            agent = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", python, "-m",
                                      "spectui.agent.main", "--sim", "--state", str(state), "--gpu-source", "none"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=str(ROOT),
                                     env=dict(os.environ, PYTHONPATH=str(ROOT)))
            agent.stdout.readline()  # hello
            agent.stdin.write(b'{"id": 1, "method": "servers.list", "params": {}}\n')
            agent.stdin.flush()
            while True:
                msg = json.loads(agent.stdout.readline())
                if msg.get("id") == 1:
                    break
            names = set(v["name"] for v in msg["result"]["servers"])
        assert "ext-%d" % mine.ports[0] in names  # its folder is on its command line: readable
        assert "ext-%d" % unreadable.ports[0] not in names, names
    finally:
        if agent is not None:
            agent.stdin.close()
            agent.wait(10)
        shutil.rmtree(state, ignore_errors=True)


class _Events(object):
    def event(self, name, data):
        pass


class _NoGpus(object):
    name = "none"


def _own_threads():
    return set(t for t in threading.enumerate())


def _fds():
    return set(os.listdir("/proc/self/fd"))


def _until(pred, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def test_found_servers_that_come_and_go_leave_nothing_behind(state_dir):
    """Many simulated servers of this host's folder (three silent, one trickling at a time) are found,
    asked, and gone again: everything the agent kept per server goes with them, its threads and files too."""
    m = ServerManager(str(state_dir), Channel(open(os.devnull, "wb")), lambda: _NoGpus(), simulated=True)
    try:
        m.discover(wait=True)
        threads, fds = _own_threads(), _fds()
        for _ in range(5):
            with CrowdedHost(silent=3, trickling=1, module="spectui.sim.server",
                             extra=("--sim-state", str(state_dir))) as crowd:
                pids = set(s.pid for s in crowd.stubs)

                def found():
                    m.discover(wait=True)
                    m.poll_all()
                    return pids <= set(e.record["pid"] for e in m.external.entries.values())
                assert _until(found, 30), sorted(m.external.entries)
                assert crowd.wait_asked(crowd.ports)

            def gone():
                m.discover(wait=True)
                m.poll_all()
                return not m.external.entries
            assert _until(gone, 30), sorted(m.external.entries)
        assert not m.external.entries and not m.external.origins and not m.mirrors and not m.watches
        # the health checks in flight end by their deadline; nothing else was started per server
        assert _until(lambda: _own_threads() <= threads, 15), _own_threads() - threads
        assert len(_fds()) <= len(fds), sorted(_fds() - fds)
    finally:
        m.close()


async def test_a_found_server_named_for_a_benchmark_is_looked_for_when_the_first_look_was_skipped(tmp_path):
    """A fresh agent's first look for servers started outside spectui is skipped while another agent holds the
    records (a start or stop elsewhere); a benchmark that names a found server `servers list` showed must still
    find it once the records are free, rather than say there is no such server."""
    import fcntl

    state = tmp_path / "state"
    (state / "servers").mkdir(parents=True)
    host = CrowdedHost(silent=1, trickling=0)
    with host:
        name = "ext-%d" % host.ports[0]
        held = open(state / "servers" / ".lock", "a")
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)  # as another agent's start would
        threading.Timer(1.0, held.close).start()    # its start ends a second later
        s = await open_session(HostTarget(kind="local", state_dir=str(state), gpu_source="none"))
        try:
            with pytest.raises(Exception) as refused:
                await s.client.call("bench.start", {"server": name, "spec": {"prompts": ["hi"], "max_tokens": 4}},
                                    timeout=60)
        finally:
            await s.close()
    assert "no server named" not in str(refused.value), str(refused.value)
    assert name in str(refused.value)  # refused as not ready (it never answers), by its name


def test_a_first_listing_while_the_monitor_holds_the_records_a_moment_still_lists_found_servers(tmp_path):
    """A fresh agent (one ``spectui servers list``) lists at once while its own monitor's round, or another
    agent's, holds the records for a moment: the listing waits that moment out and shows the servers started
    outside spectui, instead of leaving them out of this one listing."""
    state = tmp_path / "state"
    (state / "servers").mkdir(parents=True)
    with CrowdedHost(silent=1, trickling=0) as host:
        name = "ext-%d" % host.ports[0]
        m = ServerManager(str(state), Channel(open(os.devnull, "wb")), lambda: _NoGpus())
        try:
            taken, release = threading.Event(), threading.Event()

            def monitor_round():  # as the monitor's look at the records folder, a moment long
                with m.store.lock():
                    taken.set()
                    release.wait(0.4)
            t = threading.Thread(target=monitor_round)
            t.start()
            assert taken.wait(5)
            names = [s["name"] for s in m.list()["servers"]]
            release.set()
            t.join(5)
            assert name in names, names
        finally:
            m.close()


class _Lagging(object):
    """This agent's watch of a server another agent started: its own first health check has not answered yet."""

    def __init__(self, record):
        self.record = record

    def stale(self):
        return "no answer yet from /health (asked 0.2 s ago)"

    def poll(self):
        return False

    def close(self):
        pass


def test_a_listing_shows_ready_what_another_agent_saw_ready_while_this_agents_check_lags(tmp_path):
    """Another console's switch saved the server ready (its own health check said so); this agent's watch of the
    same process is still waiting on its first answer on a loaded host. The listing says ready, as the record
    does, and why that is not yet this agent's own reading, instead of contradicting the switch that just ended."""
    state = tmp_path / "state"
    (state / "servers").mkdir(parents=True)
    m = ServerManager(str(state), Channel(open(os.devnull, "wb")), lambda: _NoGpus())
    try:
        record = {"name": "ngram", "origin": "spectui", "state": "ready", "pid": os.getpid(), "pgid": os.getpgid(0),
                  "start_ticks": 1, "port": 1, "gpus": [], "ready_at": time.time(), "started_at": time.time() - 2}
        m.store.write(record)
        m._adopted = True
        m.external.discovered_at = time.monotonic()
        m.watches["ngram"] = _Lagging(dict(record, state="loading", ready_at=None))
        listed = {s["name"]: s for s in m.list()["servers"]}
        assert listed["ngram"]["state"] == "ready", listed["ngram"]
        assert "not yet confirmed" in (listed["ngram"].get("stale") or ""), listed["ngram"]
    finally:
        m.watches.pop("ngram", None)
        m.close()
