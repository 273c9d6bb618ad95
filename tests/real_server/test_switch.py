"""``spectui servers switch`` between two real SGLang 0.5.23 servers on one port: the running one's whole process
tree ends and lets the port go, the other starts ready, and the real server says it runs the new settings; then
``spectui servers stop`` ends the other's whole process tree and frees the port (two real starts, not three)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from spectui.agent.servers import process
from spectui.agent.servers.process import proc_stat
from tests.e2e.test_demo_tmux import port_free
from tests.support import real_sglang as rs
from tests.support.procs import group_pids, pid_alive
from tests.support.sshd import free_port

pytestmark = pytest.mark.xdist_group("real_server")

START_TIMEOUT_S = rs.READY_TIMEOUT_S + 60


def server_info(port: int) -> dict:
    """The real server's ``/server_info``: its resolved launch settings at the top level (sglang 0.5.23 wheel,
    sglang/srt/entrypoints/http_server.py:863-885, sglang/srt/utils/common.py:3584-3592)."""
    status, body = rs.get(port, "/server_info", timeout=30.0)
    assert status == 200, body[:500]
    return json.loads(body)


def listeners(port: int) -> set[int]:
    """The pids that hold a TCP socket listening on ``port`` (from /proc/net/tcp{,6} and each pid's fds)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":  # 0A: LISTEN
                inodes.add(fields[9])
    pids = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir("/proc/%s/fd" % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink("/proc/%s/fd/%s" % (pid, fd))
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in inodes:
                pids.add(int(pid))
    return pids


def running(pid: int) -> bool:
    """Whether any thread of process ``pid`` still runs. ``/proc/PID/stat`` alone is the main thread's: it says Z
    once that thread has ended while the others still run, and hold the process's sockets."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return False
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                    return True
        except OSError:
            continue
    return False


def test_switch_stops_the_running_real_server_and_starts_the_other_ready(tier):
    port = free_port()
    tier.profile("real-a", port, **{"max-running-requests": 4})
    tier.profile("real-b", port, **{"max-running-requests": 6})
    try:
        a = tier.cli_json("servers", "start", "real-a", timeout=START_TIMEOUT_S)["server"]
        assert a["state"] == "ready" and a["port"] == port, a
        a_group = group_pids(a["pgid"])
        assert a["pid"] in a_group and len(a_group) > 1  # SGLang's scheduler and detokenizer run beside it
        assert listeners(port) <= set(a_group) and listeners(port)
        assert server_info(port)["max_running_requests"] == 4

        switched = tier.cli_json("servers", "switch", "real-b", timeout=START_TIMEOUT_S)
        b = switched["server"]
        assert b["name"] == "real-b" and b["state"] == "ready" and b["port"] == port, switched
        gone = [pid for pid in a_group if pid_alive(pid) or running(pid)]
        assert not gone and not group_pids(a["pgid"]), "real-a left processes behind: %s" % gone
        b_group = group_pids(b["pgid"])
        held = listeners(port)
        assert held and held <= set(b_group), "port %d is held by %s, not real-b's %s" % (port, held, b_group)
        assert server_info(port)["max_running_requests"] == 6
        listed = {s["name"]: s for s in tier.cli_json("servers", "list")["servers"]}
        assert listed["real-b"]["state"] == "ready" and listed["real-a"]["state"] != "ready"

        # a stop ends the real server's whole process tree and frees its port
        assert len(b_group) >= 3, b_group  # the launcher, its scheduler and its detokenizer (sglang's subprocesses)
        r = tier.cli("servers", "stop", "real-b", "--yes", timeout=120)
        assert r.returncode == 0 and "real-b: stopped" in r.stdout + r.stderr, r.stdout + r.stderr
        assert [p for p in b_group if pid_alive(p)] == []
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))  # the port is free
    finally:
        for name in ("real-b", "real-a"):
            tier.cli("servers", "stop", name, "--yes", timeout=120)
    assert not group_pids(b["pgid"]) and port_free(port), "real-b's processes or its port outlived its stop"


#: A process whose main thread ends first (as a real SGLang server's leader does after SIGTERM): it keeps its
#: listening socket, and runs, until stdin closes; SIGTERM is ignored (its threads' exit takes longer than a grace).
MAIN_THREAD_ENDS_FIRST = r"""
import ctypes, signal, socket, sys, threading
signal.signal(signal.SIGTERM, signal.SIG_IGN)
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print(s.getsockname()[1], flush=True)
threading.Thread(target=sys.stdin.readline).start()
ctypes.CDLL(None).pthread_exit(None)
"""


def main_thread_gone(child):
    deadline = time.monotonic() + 30
    while proc_stat(child.pid)[0] != "Z" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc_stat(child.pid)[0] == "Z"  # /proc/PID/stat says Z ...


def test_a_process_whose_main_thread_ended_first_is_alive_until_its_last_thread_ends():
    child = subprocess.Popen([sys.executable, "-c", MAIN_THREAD_ENDS_FIRST], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        port = int(child.stdout.readline())
        ticks = proc_stat(child.pid)[3]
        main_thread_gone(child)
        assert running(child.pid) and not port_free(port)  # ... while it runs and holds its port
        assert process.alive(child.pid) and process.process_matches(child.pid, ticks)
        child.stdin.close()
        deadline = time.monotonic() + 30
        while process.alive(child.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not process.alive(child.pid) and not running(child.pid) and port_free(port)
    finally:
        child.kill()
        child.wait(10)


def test_a_stop_ends_a_group_whose_leaders_main_thread_ended_first():
    """The stop goes on to SIGKILL a leader whose main thread has ended while its other threads hold the port,
    instead of counting it gone at once (a switch to the same port then found it taken)."""
    child = subprocess.Popen([sys.executable, "-c", MAIN_THREAD_ENDS_FIRST], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        port = int(child.stdout.readline())
        main_thread_gone(child)
        assert process.group_members(child.pid), "a leader whose threads still run is a member of its group"
        seconds, killed, left, spared = process.terminate_group(child.pid, 0.5, reap=lambda: child.poll())
        assert killed and not left and not spared
        assert not running(child.pid) and port_free(port)
    finally:
        child.kill()
        child.wait(10)
