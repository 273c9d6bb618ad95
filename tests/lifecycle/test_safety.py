"""The server lifecycle never harms what spectui did not start, and stays right across agents,
full disks and hostile names."""

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from spectui.cli.main import main
from spectui.core.servers import ServerControl
from spectui.core.session import HostTarget, open_session
from tests.lifecycle.conftest import group_pids, library, write_profile
from tests.support.procs import pid_alive, wait_gone
from tests.support.sshd import free_port


# --- helpers -----------------------------------------------------------------------------------
def start_ticks(pid):
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[19])


@pytest.fixture
def bystanders():
    """Processes that are not spectui's, in sessions of their own; killed at teardown."""
    procs = []

    def start(argv):
        p = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.PIPE, text=True)
        procs.append(p)
        return p

    yield start
    for p in procs:
        for pid in group_pids(p.pid) or [p.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.wait()


def orphaned_group(start):
    """A process group whose leader has exited, leaving one member (a ``sleep``): ``(pgid, member)``."""
    sh = start(["sh", "-c", "sleep 60 & echo $!"])
    member = int(sh.stdout.readline())
    sh.wait()
    return sh.pid, member


def write_record(state_dir, name, *, pid, ticks, state="crashed", port=None, gpus=(0, 1), members=None,
                 ended_at=None):
    folder = state_dir / "servers"
    folder.mkdir(exist_ok=True)
    record = {"name": name, "state": state, "pid": pid, "pgid": pid, "start_ticks": ticks,
              "host": "127.0.0.1", "port": port or free_port(), "gpus": list(gpus), "argv": ["python3", "-m", "x"],
              "started_at": time.time() - 3600, "ready_at": time.time() - 3500,
              "ended_at": time.time() - 3000 if ended_at is None else ended_at, "reason": "the process exited"}
    if members is not None:
        record["members"] = members
    (folder / f"{name}.json").write_text(json.dumps(record))
    return record


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- signals only for what spectui started --------------------------------------------------------
def test_stop_spares_a_program_that_now_has_a_recorded_pid(state_dir, profiles_dir, bystanders, capsys):
    other = bystanders(["sleep", "60"])
    # the record of a server that ended long ago; its pid now names another program (born later)
    write_record(state_dir, "ghost", pid=other.pid, ticks=start_ticks(other.pid) - 500)
    demo = ["--demo", "--state-dir", str(state_dir)]
    code, out, err = run(capsys, "servers", "stop", *demo)  # every server spectui knows
    assert pid_alive(other.pid), "spectui signalled a program it did not start"
    assert code == 0, err
    assert f"ghost: was not running (pid {other.pid} now belongs to another program" in out
    code, out, err = run(capsys, "servers", "stop", "ghost", *demo)
    assert code == 0 and pid_alive(other.pid)


def test_stop_spares_a_leaderless_group_it_cannot_recognise(state_dir, profiles_dir, bystanders, capsys):
    pgid, member = orphaned_group(bystanders)
    # spectui recorded other processes in that group: none of them is the one there now
    write_record(state_dir, "ghost", pid=pgid, ticks=start_ticks(member) - 500,
                 members=[[pgid, start_ticks(member) - 500], [member + 1, start_ticks(member)]])
    code, out, err = run(capsys, "servers", "stop", "ghost", "--demo", "--state-dir", str(state_dir))
    assert pid_alive(member)
    assert code == 0 and f"the leader (pid {pgid}) is gone" in out


def test_stop_ends_the_ranks_it_recorded_once_their_leader_is_gone(state_dir, profiles_dir, bystanders, capsys):
    pgid, member = orphaned_group(bystanders)
    write_record(state_dir, "alpha", pid=pgid, ticks=start_ticks(member) - 5,
                 members=[[pgid, start_ticks(member) - 5], [member, start_ticks(member)]])
    code, out, err = run(capsys, "servers", "stop", "alpha", "--demo", "--state-dir", str(state_dir),
                         "--grace", "2")
    assert code == 0, err
    assert wait_gone(member), "a rank spectui recorded outlived the stop"
    assert "alpha: stopped in" in out


async def test_switch_spares_a_program_that_now_has_a_holders_pid(profiles_dir, state_dir, demo, bystanders):
    other = bystanders(["sleep", "60"])
    port = write_profile(profiles_dir, "alpha", gpus=(0, 1))
    # an ended server that used the same GPUs and port, its pid since reused
    write_record(state_dir, "old", pid=other.pid, ticks=start_ticks(other.pid) - 500, state="stopped",
                 port=port, gpus=(0, 1))
    r = await ServerControl(demo).switch(library().get("alpha"), grace_s=2)
    assert r["server"]["state"] == "ready"
    assert pid_alive(other.pid), "switch signalled a program it did not start"
    assert not [s for s in r["stages"] if s.get("detail") == "old"]


# --- a full disk --------------------------------------------------------------------------------
class _Channel:
    def __init__(self):
        self.events = []

    def event(self, name, data):
        self.events.append((name, data))


class _NoGpus:
    name = "none"


def test_stop_works_on_a_full_disk_and_says_so(state_dir, monkeypatch):
    from spectui.agent.servers import records as server_records
    from spectui.agent.servers.manager import ServerManager

    mgr = ServerManager(str(state_dir), _Channel(), lambda: _NoGpus())
    try:
        started = mgr.start({"name": "alpha", "argv": [sys.executable, "-c", "import time; time.sleep(60)"],
                             "host": "127.0.0.1", "port": free_port(), "gpus": []})
        pid = started["pid"]
        assert pid_alive(pid)

        class FullDisk:
            @staticmethod
            def dump(obj, fh, **kw):
                fh.write("{")
                raise OSError(28, "No space left on device")

        monkeypatch.setattr(server_records, "json", FullDisk)
        stopped = mgr.stop({"name": "alpha", "grace_s": 2})
        assert wait_gone(pid), "the server kept running because its record could not be written"
        assert stopped["state"] == "stopped"
        assert "could not be saved" in stopped["record_error"] and "No space left on device" in stopped["record_error"]
        assert not [f for f in os.listdir(state_dir / "servers") if f.startswith(".tmp-")]
    finally:
        mgr.close()
        try:
            os.killpg(started["pgid"], signal.SIGKILL)
        except (ProcessLookupError, NameError):
            pass


# --- two consoles on one host ---------------------------------------------------------------------
async def test_a_watching_console_sees_a_stop_by_another_as_stopped(profiles_dir, state_dir, demo):
    write_profile(profiles_dir, "alpha")
    ctl = ServerControl(demo)
    states = []
    ctl.on_events(lambda ev: states.append(ev.data["state"]) if ev.name == "server" else None)
    await ctl.start(library().get("alpha"))
    assert (await ctl.wait("alpha", timeout_s=60))["state"] == "ready"
    other = await open_session(HostTarget.demo(str(state_dir)))
    try:
        stopped = await ServerControl(other).stop("alpha", grace_s=5)
        assert stopped["state"] == "stopped"
    finally:
        await other.close()
    seen = await ctl.wait("alpha", states=["stopped", "crashed", "failed"], timeout_s=30)
    assert seen["state"] == "stopped", seen
    await asyncio.sleep(1.0)
    assert "crashed" not in states and "failed" not in states, states
    assert {s["name"]: s for s in await ctl.list()}["alpha"]["state"] == "stopped"


_SLOW_TO_STOP = """
import signal, time
def term(*_):
    print("Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.00s/it]", flush=True)
signal.signal(signal.SIGTERM, term)
print("Loading safetensors checkpoint shards:   0% Completed | 0/2 [00:00<?, ?it/s]", flush=True)
while True:
    time.sleep(0.1)
"""


class _GpuHeldFor:
    """A GPU source on which the given process holds GPU 0 until ``seconds`` after its first sample."""

    name = "test"

    def __init__(self, pid, seconds):
        self.pid, self.seconds, self.t0 = pid, seconds, None

    def sample(self):
        self.t0 = self.t0 or time.monotonic()
        held = time.monotonic() - self.t0 < self.seconds
        return [{"index": 0, "processes": [{"pid": self.pid}] if held else []}]


def test_a_watch_never_writes_over_another_agents_stop(state_dir):
    """While agent B stops a server, agent A's watch sees it change (a line in its log during the grace
    period) and then die: A must leave B's record alone and call the ending a stop."""
    from spectui.agent.servers.manager import ServerManager

    a_events = _Channel()
    a = ServerManager(str(state_dir), a_events, lambda: _NoGpus())
    b = None
    try:
        started = a.start({"name": "slow", "argv": [sys.executable, "-c", _SLOW_TO_STOP], "host": "127.0.0.1",
                           "port": free_port(), "gpus": [0]})
        deadline = time.monotonic() + 10
        while a.serving()["slow"]["state"] != "loading" and time.monotonic() < deadline:
            time.sleep(0.05)
        gpu = _GpuHeldFor(started["pid"], 1.5)
        b = ServerManager(str(state_dir), _Channel(), lambda: gpu)
        stopped = b.stop({"name": "slow", "grace_s": 1.0})
        assert stopped["state"] == "stopped" and stopped["stop"]["killed"]
        time.sleep(0.6)
        states = [d["state"] for n, d in a_events.events if n == "server" and d["name"] == "slow"]
        assert "failed" not in states and "crashed" not in states, states
        assert a._current("slow")["state"] == "stopped"
    finally:
        a.close()
        if b is not None:
            b.close()
        try:
            os.killpg(started["pgid"], signal.SIGKILL)
        except (ProcessLookupError, NameError):
            pass


async def test_a_console_sees_a_server_another_started_without_reconnecting(profiles_dir, state_dir, demo):
    write_profile(profiles_dir, "beta")
    ctl = ServerControl(demo)
    await ctl.list()  # this console has looked once, before beta existed
    names = []
    ctl.on_events(lambda ev: names.append((ev.data["name"], ev.data["state"])) if ev.name == "server" else None)
    other = await open_session(HostTarget.demo(str(state_dir)))
    try:
        await ServerControl(other).start(library().get("beta"))
        assert (await ServerControl(other).wait("beta", timeout_s=60))["state"] == "ready"
        deadline = time.monotonic() + 15
        while ("beta", "ready") not in names and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
        assert ("beta", "ready") in names, names
    finally:
        await other.close()


# --- states found by a console that was not watching ---------------------------------------------
async def test_a_crash_while_nobody_watched_keeps_its_cause(profiles_dir, state_dir):
    write_profile(profiles_dir, "crashy", sim={"crash-after": 1.0})
    s = await open_session(HostTarget.demo(str(state_dir)))
    await ServerControl(s).start(library().get("crashy"))
    r = await ServerControl(s).wait("crashy", timeout_s=60)
    await s.close()
    assert r["state"] == "ready"
    assert wait_gone(r["pid"], timeout=30)
    s2 = await open_session(HostTarget.demo(str(state_dir)))
    try:
        listed = {x["name"]: x for x in await ServerControl(s2).list()}
    finally:
        await s2.close()
    assert listed["crashy"]["state"] == "crashed"
    assert "illegal memory access" in listed["crashy"]["reason"]


async def test_list_shows_a_server_that_hung_while_nobody_watched_as_unresponsive(profiles_dir, state_dir):
    write_profile(profiles_dir, "hangs", sim={"hang-after": 0.5})
    s = await open_session(HostTarget.demo(str(state_dir)))
    try:
        await ServerControl(s).start(library().get("hangs"))
        r = await ServerControl(s).wait("hangs", timeout_s=60)
    finally:
        await s.close()
    try:
        assert r["state"] == "ready"
        await asyncio.sleep(1.5)
        s2 = await open_session(HostTarget.demo(str(state_dir)))
        try:
            # a listing answers at once: until the new agent's first health check gives up on it, the
            # server is shown as last recorded, marked as not confirmed and why
            first = {x["name"]: x for x in await ServerControl(s2).list()}["hangs"]
            assert first["state"] == "unresponsive" or "no answer yet from /server_info" in first["stale"], first
            listed = {"hangs": await ServerControl(s2).wait("hangs", states=["unresponsive"], timeout_s=30)}
        finally:
            await s2.close()
        assert listed["hangs"]["state"] == "unresponsive", listed["hangs"]
        assert "no answer from /server_info" in listed["hangs"]["reason"]
    finally:
        os.killpg(r["pgid"], signal.SIGKILL)


# --- names, permissions, pruning --------------------------------------------------------------------
def test_a_log_name_cannot_leave_the_records_folder(state_dir, profiles_dir, capsys):
    (state_dir / "secret.log").write_text("TOPSECRET\n")
    code, out, err = run(capsys, "servers", "logs", "../secret", "--demo", "--state-dir", str(state_dir))
    assert code == 1 and "TOPSECRET" not in out + err
    assert "'../secret' is not a server name" in err and len(err.strip().splitlines()) == 1


async def test_records_and_logs_are_private(profiles_dir, state_dir, demo):
    os.chmod(state_dir, 0o755)
    write_profile(profiles_dir, "alpha")
    await ServerControl(demo).start(library().get("alpha"))
    servers = state_dir / "servers"
    assert stat.S_IMODE(os.stat(state_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(servers).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(servers / "alpha.json").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(servers / "alpha.log").st_mode) == 0o600


def test_benchmark_run_files_are_private(tmp_path):
    from spectui.agent.bench.runner import write_json

    write_json(str(tmp_path / "spec.json"), {"server": {"argv": ["--api-key", "k"]}})
    assert stat.S_IMODE(os.stat(tmp_path / "spec.json").st_mode) == 0o600


def test_records_of_servers_long_ended_are_pruned(state_dir, profiles_dir, bystanders, capsys):
    gone = bystanders(["true"])
    gone.wait()
    old = write_record(state_dir, "old", pid=gone.pid, ticks=1, state="stopped",
                       ended_at=time.time() - 8 * 24 * 3600)
    (state_dir / "servers" / "old.log").write_text("old\n")
    write_record(state_dir, "recent", pid=gone.pid, ticks=1, state="crashed")
    code, out, err = run(capsys, "servers", "list", "--demo", "--state-dir", str(state_dir), "--json")
    assert code == 0, err
    names = [s["name"] for s in json.loads(out)["servers"]]
    assert "recent" in names and old["name"] not in names
    assert not (state_dir / "servers" / "old.json").exists() and not (state_dir / "servers" / "old.log").exists()


def test_a_switch_that_loses_names_the_winner_before_the_winner_is_recorded(state_dir, monkeypatch):
    """Agent B's switch to ``quick`` stops agent A's loading ``slow``; A's switch sees ``slow`` stopped before B has
    written ``quick``'s record (B stops first, then starts). A still says which switch won: the stop says so.

    A's monitor first sees the process gone (``failed``, as a crash while loading), then reads that B stopped it
    (``stopped``) in the same step; the switch waiting on it reads the step's outcome, never the moment between
    (widened here to a third of a second, which a loaded machine can give it)."""
    import threading

    from spectui.agent.protocol import AgentError
    from spectui.agent.servers.manager import ServerManager

    judged = ServerManager._stopped_elsewhere

    def slowly_judged(self, record):
        time.sleep(0.3)
        return judged(self, record)

    monkeypatch.setattr(ServerManager, "_stopped_elsewhere", slowly_judged)
    a = ServerManager(str(state_dir), _Channel(), lambda: _NoGpus())
    b = None
    port = free_port()
    outcome = {}

    def switch():
        try:
            outcome["reply"] = a.switch({"name": "slow", "argv": [sys.executable, "-c", _SLOW_TO_STOP],
                                         "host": "127.0.0.1", "port": port, "gpus": [0], "timeout_s": 60})
        except AgentError as exc:
            outcome["error"] = exc
    t = threading.Thread(target=switch)
    t.start()
    try:
        deadline = time.monotonic() + 20
        while (a.current("slow") or {}).get("state") != "loading":
            assert time.monotonic() < deadline, a.current("slow")
            time.sleep(0.05)
        b = ServerManager(str(state_dir), _Channel(), lambda: _NoGpus())
        assert b.stop({"name": "slow", "grace_s": 0.5}, switching_to="quick")["state"] == "stopped"
        t.join(30)
        assert not t.is_alive()
        exc = outcome.get("error")
        assert exc is not None and exc.code == "switch_lost", outcome
        assert "another switch won" in str(exc) and "quick" in str(exc), str(exc)
    finally:
        t.join(30)
        a.close()
        if b is not None:
            b.close()
        for f in (state_dir / "servers").glob("*.json"):
            try:
                os.killpg(json.loads(f.read_text())["pgid"], signal.SIGKILL)
            except (ProcessLookupError, KeyError, TypeError, ValueError):
                pass


_READY_SERVER = r"""
import http.server, sys
class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Health)
print("The server is fired up and ready to roll!", flush=True)
server.serve_forever()
"""


def test_a_switch_answers_ready_only_once_its_record_on_disk_says_ready(state_dir):
    """``spectui servers switch`` quits as soon as the answer says ready, and its agent with it; a console that
    lists the host next reads the record file. The monitor saves a state at its tick after the one that saw it, so
    the answer must not go out before the file says so (a CI run listed a switched-to server as loading)."""
    import threading

    from spectui.agent.servers.manager import ServerManager

    mgr = ServerManager(str(state_dir), _Channel(), lambda: _NoGpus())
    saves = mgr._persist

    def monitor_late(w):  # the monitor's save comes after the answer has gone out, as when its agent ends
        if threading.current_thread().name != "server-monitor":
            saves(w)

    mgr._persist = monitor_late
    port = free_port()
    reply = None
    try:
        reply = mgr.switch({"name": "alpha", "argv": [sys.executable, "-c", _READY_SERVER, str(port)],
                            "host": "127.0.0.1", "port": port, "gpus": [], "timeout_s": 60})
        assert reply["server"]["state"] == "ready", reply
        on_disk = json.loads((state_dir / "servers" / "alpha.json").read_text())
        assert on_disk["state"] == "ready", on_disk["state"]
    finally:
        mgr.close()
        try:
            os.killpg((reply or {}).get("server", {}).get("pgid") or json.loads(
                (state_dir / "servers" / "alpha.json").read_text())["pgid"], signal.SIGKILL)
        except (ProcessLookupError, OSError, KeyError, ValueError):
            pass
