"""A state folder, or a record in it, that another user can write never aims spectui's signals: spectui
uses a state folder only when the folders from it up to / and its records are its user's (or root's) and
writable by no one else, as OpenSSH treats ~/.ssh; otherwise it says so in one sentence and signals
nothing. A process that became another program (exec) since spectui planned to stop it is not signalled."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from spectui.cli.main import main
from tests.support.procs import pid_alive
from tests.support.sshd import free_port

SETPRIV = ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups"]


def start_ticks(pid):
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[19])


def as_nobody():
    if os.geteuid() != 0:
        pytest.skip("needs root: the test plays another user (nobody) with setpriv")
    assert shutil.which("setpriv"), "needs setpriv (util-linux; scripts/test installs it)"


def record_of(pid, name="kimi-baseline"):
    return {"name": name, "state": "ready", "pid": pid, "pgid": pid, "start_ticks": start_ticks(pid),
            "host": "127.0.0.1", "port": free_port(), "gpus": [0], "argv": ["sleep", "10000"],
            "started_at": time.time() - 60, "ready_at": time.time() - 50, "ended_at": None}


@pytest.fixture
def root_sleeper():
    """A process of root's that is no server of spectui's (a ``sleep`` in a session of its own)."""
    p = subprocess.Popen(["sleep", "10000"], start_new_session=True)
    yield p
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait(10)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_state_folder_another_user_can_write_aims_no_signal(root_sleeper, capsys):
    as_nobody()
    record = json.dumps(record_of(root_sleeper.pid))
    made = subprocess.run(SETPRIV + ["sh", "-c", 'd=$(mktemp -d /tmp/spectui-hostile-XXXXXX) && chmod 777 "$d" && '
                                     'mkdir -m 777 "$d/servers" && printf %s "$1" > "$d/servers/kimi-baseline.json" '
                                     '&& echo "$d"', "sh", record], capture_output=True, text=True, check=True)
    state = made.stdout.strip()
    try:
        code, out, err = run(capsys, "servers", "stop", "--host", "local", "--state-dir", state, "--yes")
        assert pid_alive(root_sleeper.pid), "spectui signalled a process named by another user's record"
        assert code != 0 and "stopped" not in out, (out, err)
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and state in lines[0] and "nobody" in lines[0], err
        assert "Traceback" not in err
        code, out, err = run(capsys, "servers", "list", "--host", "local", "--state-dir", state)
        assert code != 0 and state in err and pid_alive(root_sleeper.pid)
    finally:
        shutil.rmtree(state, ignore_errors=True)


def test_a_private_folder_of_another_user_is_not_trusted_either(root_sleeper, capsys, tmp_path):
    """Made 0700 by nobody: writable by no one else, but nobody may still plant records in it."""
    as_nobody()
    record = json.dumps(record_of(root_sleeper.pid))
    made = subprocess.run(SETPRIV + ["sh", "-c", 'd=$(mktemp -d /tmp/spectui-hostile-XXXXXX) && chmod 711 "$d" && '
                                     'mkdir -m 711 "$d/servers" && printf %s "$1" > "$d/servers/kimi-baseline.json" '
                                     '&& chmod 644 "$d/servers/kimi-baseline.json" && echo "$d"', "sh", record],
                          capture_output=True, text=True, check=True)
    state = made.stdout.strip()
    try:
        code, out, err = run(capsys, "servers", "stop", "kimi-baseline", "--host", "local", "--state-dir", state,
                             "--yes")
        assert pid_alive(root_sleeper.pid)
        assert code != 0 and state in err and "nobody" in err, (out, err)
    finally:
        shutil.rmtree(state, ignore_errors=True)


def test_a_record_of_another_user_is_ignored_with_a_sentence(root_sleeper, state_dir, capsys):
    as_nobody()
    folder = state_dir / "servers"
    folder.mkdir(mode=0o700)
    path = folder / "kimi-baseline.json"
    path.write_text(json.dumps(record_of(root_sleeper.pid)))
    os.chown(path, 65534, 65534)  # nobody's now: root's folder, another user's record
    where = ["--host", "local", "--state-dir", str(state_dir)]
    code, out, err = run(capsys, "servers", "stop", *where, "--yes")
    assert pid_alive(root_sleeper.pid), "spectui signalled a process named by another user's record"
    assert "kimi-baseline: stopped" not in out and str(path) in err and "Traceback" not in err, (out, err)
    code, out, err = run(capsys, "servers", "stop", "kimi-baseline", *where, "--yes")
    assert pid_alive(root_sleeper.pid)
    assert code != 0 and str(path) in err, (out, err)
    code, out, err = run(capsys, "servers", "list", *where, "--json")
    assert code == 0, err
    assert "kimi-baseline" not in [s["name"] for s in json.loads(out)["servers"]]
    assert str(path) in err


def test_a_group_writable_folder_of_its_own_is_refused_not_silently_used(root_sleeper, state_dir, capsys):
    folder = state_dir / "servers"
    folder.mkdir()
    (folder / "kimi-baseline.json").write_text(json.dumps(record_of(root_sleeper.pid)))
    os.chmod(folder, 0o770)
    code, out, err = run(capsys, "servers", "stop", "--host", "local", "--state-dir", str(state_dir), "--yes")
    assert pid_alive(root_sleeper.pid)
    assert code != 0 and str(folder) in err and "chmod" in err, (out, err)


# --- a process that became another program ---------------------------------------------------------
EXECS_ON_USR1 = r'''
import os, signal, sys, time
def become_sleep(*_):
    os.execv("/bin/sleep", ["sleep", "10000"])
signal.signal(signal.SIGUSR1, become_sleep)
print("waiting", flush=True)
while True:
    time.sleep(1)
'''


# A server that answers /server_info and logs SGLang's ready line, then becomes another program on SIGUSR1.
READY_THEN_EXECS_ON_USR1 = r'''
import http.server, os, signal, sys
class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")
    def log_message(self, *args):
        pass
httpd = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Answer)
def become_sleep(*_):
    os.execv("/bin/sleep", ["sleep", "10000"])
signal.signal(signal.SIGUSR1, become_sleep)
print("The server is fired up and ready to roll!", flush=True)
httpd.serve_forever()
'''


def exe_of(pid):
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def wait_for(pred, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    return pred()


async def ready_through_wrapper(s, script, port) -> int:
    """Start ``script`` as server "own" through a wrapper that execs it (as a pyenv shim or ``env`` does) and wait
    until it is ready; its pid."""
    started = await s.client.call("server.start", {"name": "own", "argv": ["sh", "-c", 'sleep 0.5; exec "$0" "$@"',
                                                                           sys.executable, str(script), str(port)],
                                                   "host": "127.0.0.1", "port": port, "gpus": []}, timeout=60)
    ready = await s.client.call("server.wait", {"name": "own", "timeout_s": 60}, timeout=90)
    assert ready["state"] == "ready", ready
    return started["pid"]


async def test_a_server_that_became_another_program_is_not_signalled(state_dir, tmp_path):
    from spectui.core.session import HostTarget, open_session

    script, port = tmp_path / "serves.py", free_port()
    script.write_text(READY_THEN_EXECS_ON_USR1)
    s = await open_session(HostTarget(kind="local", state_dir=str(state_dir), gpu_source="none"))
    pid = None
    try:
        # started through a wrapper that execs the server (as a pyenv shim or `env` does): what serves at its
        # first ready is the program spectui started; becoming another program after that is not
        pid = await ready_through_wrapper(s, script, port)
        os.kill(pid, signal.SIGUSR1)
        assert wait_for(lambda: (exe_of(pid) or "").endswith("sleep"))
        stopped = await s.client.call("server.stop", {"name": "own", "grace_s": 2}, timeout=60)
        assert pid_alive(pid), "spectui signalled a process that had become another program"
        assert stopped.get("not_signalled") and str(pid) in stopped["not_signalled"], stopped
    finally:
        await s.close()
        if pid is not None:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


STUB_LAUNCHER = EXECS_ON_USR1


async def test_an_external_process_that_execs_after_the_plan_is_not_signalled(state_dir, tmp_path):
    """The stop plan lists a found server's processes (pid and start time); one of them then execs into
    another program, keeping both: the confirmed stop signals nothing and says why."""
    from spectui.core.session import HostTarget, open_session

    root = tmp_path / "stub"
    (root / "sglang").mkdir(parents=True)
    (root / "sglang" / "__init__.py").write_text("")
    (root / "sglang" / "launch_server.py").write_text(STUB_LAUNCHER)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "sglang.launch_server", "--port", str(port), "--model-path",
                             "stub/exec"], env=dict(os.environ, PYTHONPATH=str(root)), stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True, cwd=str(root))
    s = await open_session(HostTarget(kind="local", state_dir=str(state_dir), gpu_source="none"))
    try:
        assert proc.stdout.readline().strip() == b"waiting"
        name = f"ext-{port}"

        async def listed():
            return name in [v["name"] for v in (await s.client.call("servers.list", timeout=30))["servers"]]

        deadline = time.monotonic() + 30
        while not await listed():
            assert time.monotonic() < deadline, "the stub server was not found"
        plan = await s.client.call("server.plan_stop", {"name": name}, timeout=30)
        confirmed = [[p["pid"], p["start_ticks"]] for p in plan["processes"]]
        assert [proc.pid, start_ticks(proc.pid)] in confirmed
        os.kill(proc.pid, signal.SIGUSR1)
        assert wait_for(lambda: (exe_of(proc.pid) or "").endswith("sleep"))
        from spectui.core.errors import AgentCallError
        with pytest.raises(AgentCallError) as got:
            await s.client.call("server.stop", {"name": name, "confirmed": confirmed, "grace_s": 2}, timeout=60)
        assert pid_alive(proc.pid), "spectui signalled a process that had become another program"
        assert str(proc.pid) in str(got.value) and "nothing was signalled" in str(got.value), got.value
    finally:
        await s.close()
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(10)


async def test_a_server_started_through_a_wrapper_that_execs_is_stopped(state_dir, tmp_path):
    """A launch through programs that exec the next one (a pyenv shim, ``env``, ``sh -c 'exec ...'``) ends in the
    program that serves: spectui's stop signals it and it is gone, never left running as if it were another's."""
    from spectui.core.session import HostTarget, open_session

    script, port = tmp_path / "serves.py", free_port()
    script.write_text(READY_THEN_EXECS_ON_USR1)
    s = await open_session(HostTarget(kind="local", state_dir=str(state_dir), gpu_source="none"))
    pid = None
    try:
        pid = await ready_through_wrapper(s, script, port)
        assert (exe_of(pid) or "").startswith(os.path.dirname(os.path.realpath(sys.executable)))
        stopped = await s.client.call("server.stop", {"name": "own", "grace_s": 2}, timeout=60)
        assert stopped["state"] == "stopped" and not stopped.get("not_signalled"), stopped
        assert wait_for(lambda: not pid_alive(pid), 10), "the server spectui started and stopped still runs"
        listed = await s.client.call("servers.list", {}, timeout=30)
        assert [v["name"] for v in listed["servers"] if v.get("pid") == pid and v["state"] != "stopped"] == []
    finally:
        await s.close()
        if pid is not None:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
