"""The crowded-host stand-ins (tests/support/crowded.py) behave as specified, are found by the agent's
discovery as SGLang servers on their ports, and leave nothing running."""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from spectui.agent.servers import discover as sd
from spectui.agent.servers import proc_table as pt
from tests.sim.simproc import ROOT, start_ready
from tests.support.crowded import CrowdedHost, foreign_user_reason
from tests.support.procs import group_pids, pid_alive, wait_gone


def uid_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return int(next(line for line in fh if line.startswith("Uid:")).split()[1])


def all_gone(pids) -> bool:
    return all(wait_gone(p, 10) and not group_pids(p) for p in pids)


def test_discovery_finds_each_stand_in_as_an_sglang_server_listening_on_its_port(tmp_path):
    with CrowdedHost(silent=2, trickling=1, foreign_user=foreign_user_reason() is None, tmpdir=tmp_path) as host:
        found = sd.leaders(pt.snapshot())
        mine = {s.pid: s for s in host.stubs}
        assert set(mine) <= set(found), (mine, found)
        for pid, stub in mine.items():
            launch, argv, words = found[pid]
            s = sd.settings(words)
            assert launch == "sglang.launch_server" and argv[1:3] == ["-m", "sglang.launch_server"]
            assert (s["host"], s["port"], s["model"]) == ("127.0.0.1", stub.port, "stub-model")
            assert sd.confirm_port(pid, stub.port) == (stub.port, True)  # it listens on its port itself
        assert sorted(p for ports in host.ports.values() for p in ports) == sorted(s.port for s in mine.values())
        assert len(host.ports["silent"]) == 2 and len(host.ports["trickling"]) == 1


def test_a_real_host_agent_lists_the_stand_ins_that_answer(tmp_path):
    """``spectui servers list --host local``: the agent run on this machine finds them as external servers."""
    with CrowdedHost(silent=0, trickling=0, answering=1, foreign_user=foreign_user_reason() is None) as host:
        r = subprocess.run(["spectui", "servers", "list", "--host", "local", "--state-dir", str(tmp_path / "state"),
                            "--json"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        listed = {s["name"]: s for s in json.loads(r.stdout)["servers"]}
        for stub in host.stubs:
            found = listed[f"ext-{stub.port}"]
            assert (found["pid"], found["origin"], found["state"]) == (stub.pid, "external", "ready"), found


def test_a_silent_stand_in_accepts_and_never_answers():
    with CrowdedHost(silent=1, trickling=0) as host:
        port = host.ports["silent"][0]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1.0)
        conn.request("GET", "/server_info")  # the connection is accepted and the request sent
        with pytest.raises(TimeoutError):
            conn.getresponse()
        conn.close()


def test_a_trickling_stand_in_answers_200_one_byte_a_second():
    with CrowdedHost(silent=0, trickling=1) as host:
        with socket.create_connection(("127.0.0.1", host.ports["trickling"][0]), timeout=30) as s:
            asked = time.monotonic()
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            got = b""
            while len(got) < 4:
                chunk = s.recv(100)
                assert chunk, "the trickling stand-in closed the connection"
                got += chunk
            took = time.monotonic() - asked
    assert got == b"HTTP"  # "HTTP/1.1 200 OK ..." and a body that never ends
    assert took >= 2.95, f"4 bytes in {took:.2f} s: faster than a byte a second"


def answers_plausibly(port: int) -> None:
    for path in ("/server_info", "/health", "/metrics"):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            assert r.status == 200, path
            body = r.read()
        if path == "/server_info":
            assert json.loads(body)["port"] == port
    assert b"sglang:num_running_reqs" in body


@pytest.mark.skipif(foreign_user_reason() is not None, reason=foreign_user_reason() or "")
def test_a_foreign_user_stand_in_answers_as_user_nobody():
    with CrowdedHost(silent=0, trickling=0, foreign_user=True) as host:
        [stub] = host.stubs
        assert uid_of(stub.pid) == 65534 and not host.skipped
        answers_plausibly(stub.port)


def test_an_answering_stand_in_answers_as_this_user():
    with CrowdedHost(silent=0, trickling=0, answering=1) as host:
        [stub] = host.stubs
        assert uid_of(stub.pid) == os.getuid() and host.ports["answering"] == [stub.port]
        answers_plausibly(stub.port)


def test_without_root_the_foreign_user_stand_in_is_left_out_with_the_reason(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with CrowdedHost(silent=0, trickling=0, foreign_user=True) as host:
        assert host.stubs == [] and "needs root" in host.skipped["foreign_user"]


def test_the_load_generator_counts_the_tokens_of_each_stream(tmp_path):
    sp = start_ready(["--model-path", "m/Llama-3.1-8B", "--sim-load-time", "0.2"], tmp_path, "target")
    try:
        with CrowdedHost(silent=0, trickling=0) as host:
            assert host.foreign_stats() == {"requests": 0, "tokens": 0, "errors": 0}
            host.aim_load("127.0.0.1", sp.port, concurrency=2, max_new_tokens=16)
            deadline = time.monotonic() + 60
            while host.foreign_stats()["requests"] < 4 and time.monotonic() < deadline:
                time.sleep(0.1)
            got = host.stop_load()
            assert not [t for t in threading.enumerate() if t.name.startswith("foreign-load-")]
        # ignore_eos: every finished stream has exactly 16 tokens; an unfinished one (cut at the stop) fewer
        assert got["requests"] >= 4 and got["errors"] == 0, got
        assert got["requests"] * 16 <= got["tokens"] < (got["requests"] + 2) * 16, got
    finally:
        sp.kill_group()


def test_the_load_starts_with_the_host_when_aimed_at_construction(tmp_path):
    sp = start_ready(["--model-path", "m/Llama-3.1-8B", "--sim-load-time", "0.2"], tmp_path, "target")
    try:
        with CrowdedHost(silent=1, trickling=0, load_at=("127.0.0.1", sp.port)) as host:
            deadline = time.monotonic() + 60
            while host.foreign_stats()["tokens"] == 0 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert host.foreign_stats()["tokens"] > 0
        assert not [t for t in threading.enumerate() if t.name.startswith("foreign-load-")]
    finally:
        sp.kill_group()


def test_exit_kills_every_stand_in_it_started_and_no_other(tmp_path):
    with CrowdedHost(silent=1, trickling=1) as other:
        with pytest.raises(RuntimeError):
            with CrowdedHost(silent=2, trickling=2, tmpdir=tmp_path) as host:
                pids = host.pids
                assert len(pids) == 4 and all(pid_alive(p) for p in pids)
                raise RuntimeError("a failing test")
        assert all_gone(pids)
        assert host.pids == [] and host.ports["silent"] == []
        assert all(pid_alive(p) for p in other.pids)  # another host's stand-ins live on
        one = other.stubs[0]
        other.kill(one.pid)
        assert all_gone([one.pid]) and pid_alive(other.pids[0]) and len(other.pids) == 1


def test_stand_ins_end_when_the_process_that_started_them_is_killed():
    code = ("import sys, time\nsys.path.insert(0, %r)\nfrom tests.support.crowded import CrowdedHost\n"
            "h = CrowdedHost(silent=1, trickling=1).start()\nprint(*h.pids, flush=True)\ntime.sleep(300)\n" % str(ROOT))
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        pids = [int(p) for p in owner.stdout.readline().split()]
        assert len(pids) == 2 and all(pid_alive(p) for p in pids)
        os.kill(owner.pid, signal.SIGKILL)  # no cleanup runs: the stand-ins notice they are orphans
        owner.wait(10)
        assert all_gone(pids)
    finally:
        owner.kill()
        owner.wait(10)
