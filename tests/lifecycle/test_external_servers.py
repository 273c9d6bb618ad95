"""Servers spectui did not start, on the simulated host: started by hand in a tmux pane, with nohup,
and detached with their output in a pipe; found, watched, benchmarked, planned, stopped, adopted."""

import asyncio
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from spectui.core.bench import BenchClient, Preset, build_spec
from spectui.core.errors import AgentCallError
from spectui.core.session import HostTarget, open_session
from tests.lifecycle.conftest import library, write_profile
from tests.support.sshd import free_port

ROOT = Path(__file__).resolve().parents[2]
SPEC_FLAGS = ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
              "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
              "--speculative-num-draft-tokens", "4"]


def server_argv(port, state, *, metrics=True, extra=()):
    """A hand-started simulated server: ``--tp`` (argparse's abbreviation of --tp-size) and ``--port=P``."""
    argv = [sys.executable, "-m", "spectui.sim.server", "--port=%d" % port, "--tp", "2",
            "--model-path", "meta-llama/Llama-3.1-8B-Instruct", "--sim-load-time", "0.5", "--sim-state", str(state)]
    return argv + (["--enable-metrics"] if metrics else []) + list(extra)


def server_env(state):
    env = dict(os.environ, PYTHONPATH=str(ROOT), SPECTUI_STATE_DIR=str(state),
               SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION="false")
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


def start_ticks(pid):
    with open("/proc/%d/stat" % pid) as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[19])


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def tree(pid):
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit() and alive(int(d)):
            try:
                with open("/proc/%s/stat" % d) as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [pid], list(kids.get(pid, []))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return sorted(out)


def leader_on(port):
    """The pid of the simulated server whose command line holds ``--port=PORT``."""
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                argv = Path("/proc/%s/cmdline" % d).read_bytes().split(b"\0")
            except OSError:
                continue
            if b"spectui.sim.server" in argv and ("--port=%d" % port).encode() in argv:
                return int(d)
    return None


def wait_until(pred, timeout=30.0, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(step)
    return pred()


async def until(coro_fn, timeout=30.0, step=0.2):
    deadline = time.monotonic() + timeout
    while True:
        got = await coro_fn()
        if got or time.monotonic() > deadline:
            return got
        await asyncio.sleep(step)


async def listed(s, name, state="ready", timeout=30.0, where=None):
    """The server ``name`` once a listing shows it in ``state`` (and ``where(v)`` holds, when given)."""
    async def find():
        for v in (await s.client.call("servers.list"))["servers"]:
            if v["name"] == name and (state is None or v["state"] == state) and (where is None or where(v)):
                return v
        return None
    v = await until(find, timeout)
    assert v is not None, f"{name} not {state}: " + "; ".join(
        " ".join(f"{k}={x.get(k)}" for k in ("name", "state", "pid", "port", "reason"))
        for x in (await s.client.call("servers.list"))["servers"])
    return v


async def call_error(s, method, params):
    with pytest.raises(AgentCallError) as exc:
        await s.client.call(method, params, timeout=120)
    return exc.value


def kill_tree(pid):
    for p in tree(pid):
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture
def tmux_socket():
    assert shutil.which("tmux"), "needs tmux (scripts/test installs it)"
    name = "spectui-test-%s" % uuid.uuid4().hex[:10]
    yield name
    subprocess.run(["tmux", "-L", name, "kill-server"], stderr=subprocess.DEVNULL)


@pytest.mark.rank_processes  # it counts the server's processes, one per TP rank
async def test_a_server_in_a_tmux_pane(state_dir, tmp_path, tmux_socket, profiles_dir):
    port = free_port()
    argv = server_argv(port, state_dir, extra=SPEC_FLAGS)
    env = server_env(state_dir)
    # the pane's shell also runs a sleep of its own: it is not the server's and must survive its stop
    pane_cmd = "sleep 600 & %s; wait" % " ".join(shlex.quote(a) for a in argv)
    subprocess.run(["tmux", "-L", tmux_socket, "-f", "/dev/null", "new-session", "-d", "-s", "work", "-x", "220",
                    "-y", "50", "sh", "-c", pane_cmd], env=env, check=True)
    leader = wait_until(lambda: leader_on(port), 20)
    assert leader
    pane_sleep = wait_until(lambda: _pane_sleep(leader))
    s = await open_session(HostTarget.demo(str(state_dir)))
    events = []
    s.client.add_listener(lambda ev: events.append(ev))
    try:
        await s.client.call("server.telemetry.subscribe", {"interval_s": 0.5})
        # the GPUs its ranks hold, once they hold them: read at each look for servers (every few seconds), which
        # may come a moment after the server answers ready
        v = await listed(s, "ext-%d" % port, where=lambda v: len(v["gpus"]) >= 2)
        # a server spectui did not start is read (/metrics, /server_info) only while the console watches it
        await s.client.call("server.telemetry.watch", {"servers": [v["name"]]})
        assert v["origin"] == "external" and v["pid"] == leader and v["port"] == port
        assert v["model"] == "meta-llama/Llama-3.1-8B-Instruct" and v["tp_size"] == 2
        assert v["speculative"] == {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4}
        assert v["gpus"] == [0, 1] and v["user"] == "root" and v["can_signal"] is True
        assert v["started_by"]["kind"] == "tmux" and "session work, window 0" in v["started_by"]["text"]
        assert v["log_source"]["kind"] == "tmux" and v["log_source"]["readable"] is True
        assert v["log_path"] == str(state_dir / "external" / ("ext-%d.log" % port))
        assert v["argv"] == argv and v["metrics_note"] is None
        assert any(e.name == "server" and e.data["name"] == v["name"] for e in events)
        # its log, from the pane's mirror
        logs = await until(lambda: _log_has(s, v["name"], "The server is fired up and ready to roll!"), 20)
        assert logs
        # accept length in its telemetry, while a request runs
        gen = asyncio.get_running_loop().run_in_executor(None, _generate, port, 400)
        frame = await until(lambda: _frame_with_accept(events, v["name"]), 30)
        await gen
        assert frame, [e.data for e in events if e.name == "server_frame"][-3:]
        # a benchmark against it records its argv
        spec = build_spec(Preset(name="x", num_prompts=4, input_len=16, output_len=8), 2)
        run = await BenchClient(s).start(spec, server=v["name"])
        st = await until(lambda: _run_done(s, run["run_id"]), 60)
        assert st["state"] == "done", st
        saved = json.loads((Path(run["dir"]) / "spec.json").read_text())
        assert saved["server"]["name"] == v["name"] and saved["server"]["argv"] == argv
        # what a stop would signal: exactly the server's tree
        plan = await s.client.call("server.plan_stop", {"name": v["name"]})
        assert plan["signal"] == "processes" and plan["origin"] == "external" and plan["allowed"]
        assert sorted(p["pid"] for p in plan["processes"]) == tree(leader) and len(tree(leader)) == 3
        assert pane_sleep not in [p["pid"] for p in plan["processes"]]
        # a profile on its port: the switch plan names it, the switch without confirming refuses
        write_profile(profiles_dir, "mine", port=port, gpus=(2, 3))
        from spectui.core.servers import start_params
        params = start_params(library().get("mine"), s)
        sw = await s.client.call("server.plan_switch", params)
        assert [(x["name"], x["holds"], x["pid"]) for x in sw["stops"]] == [(v["name"], "port %d" % port, leader)]
        err = await call_error(s, "server.switch", params)
        assert err.code == "port_in_use" and v["name"] in str(err) and "switch again and confirm" in str(err)
        assert alive(leader)
        done = await s.client.call("server.switch", dict(params, stop_external=sw["stops"][0]["processes"]),
                                   timeout=120)
        assert done["server"]["state"] == "ready" and done["server"]["name"] == "mine"
        assert not any(alive(p["pid"]) for p in plan["processes"])
        assert alive(pane_sleep)
    finally:
        kill_tree(leader)
        await s.close()
        for f in (state_dir / "servers").glob("*.json"):
            try:
                os.killpg(json.loads(f.read_text())["pgid"], signal.SIGKILL)
            except (ProcessLookupError, KeyError):
                pass


def _pane_sleep(leader):
    with open("/proc/%d/stat" % leader) as fh:
        ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
    for p in tree(ppid):
        if Path("/proc/%d/comm" % p).read_text().strip() == "sleep":
            return p
    return None


async def _log_has(s, name, text):
    got = await s.client.call("server.logs", {"name": name, "lines": 400})
    return any(text in line for line in got["lines"])


def _generate(port, tokens):
    import urllib.request

    body = json.dumps({"text": "Tell me a story", "sampling_params": {"max_new_tokens": tokens}}).encode()
    req = urllib.request.Request("http://127.0.0.1:%d/generate" % port, data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read()


async def _frame_with_accept(events, name):
    for e in events:
        if e.name == "server_frame" and e.data.get("name") == name:
            acc = e.data.get("accept_length") or {}
            if acc.get("value"):
                return e.data
    return None


async def _run_done(s, run_id):
    st = await s.client.call("bench.status", {"run_id": run_id})
    return st if st["state"] in ("done", "failed", "interrupted") else None


async def test_a_nohup_server_and_a_detached_one(state_dir, tmp_path):
    port_a, port_b = free_port(), free_port()
    env = server_env(state_dir)
    log = tmp_path / "server.log"
    argv_a = server_argv(port_a, state_dir, metrics=False)
    cmd = "nohup %s > %s 2>&1 &" % (" ".join(shlex.quote(a) for a in argv_a), shlex.quote(str(log)))
    subprocess.run(["sh", "-c", cmd], env=env, check=True)
    # a sibling in another process group, and a pipe reader for the detached server
    sibling = subprocess.Popen(["sleep", "600"], start_new_session=True)
    r, w = os.pipe()
    reader = subprocess.Popen(["cat"], stdin=r, stdout=subprocess.DEVNULL)
    # on GPUs of its own: two servers loading at once on the same GPUs fail as SGLang's do ("Not enough memory")
    # SIGHUP as a plain start leaves it, also when these tests run under nohup: ignored, it would read as nohup
    detached = subprocess.Popen(server_argv(port_b, state_dir), stdin=subprocess.DEVNULL, stdout=w, stderr=w,
                                env=dict(env, CUDA_VISIBLE_DEVICES="2,3"), start_new_session=True,
                                preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
    os.close(r)
    os.close(w)
    leader_a = wait_until(lambda: leader_on(port_a), 20)
    s = await open_session(HostTarget.demo(str(state_dir)))
    s2 = None
    try:
        # each has two rank processes to start on a busy machine
        a, b = [await listed(s, "ext-%d" % port, timeout=60.0) for port in (port_a, port_b)]
        assert a["pid"] == leader_a and b["pid"] == detached.pid
        assert a["started_by"] == {"kind": "nohup", "text": "nohup, output to %s" % log}
        assert a["log_source"]["kind"] == "file" and a["log_path"] == str(log)
        assert a["metrics_note"].startswith("metrics are off: it was started without --enable-metrics")
        assert a["speculative"]["algorithm"] is None
        assert b["started_by"] == {"kind": "detached",
                                   "text": "detached, output to a pipe read by pid %d (cat)" % reader.pid}
        assert b["log_source"]["kind"] == "pipe" and b["log_source"]["readable"] is False and b["log_path"] is None
        assert "restart it with its output in a file or in tmux" in b["log_source"]["text"]
        assert await until(lambda: _log_has(s, a["name"], "The server is fired up and ready to roll!"), 20)
        assert (await call_error(s, "server.logs", {"name": b["name"]})).code == "no_log"
        # the nohup server shares this test's process group: adopting it would be unsafe
        plan = await s.client.call("server.plan_stop", {"name": a["name"]})
        confirmed = [[p["pid"], p["start_ticks"]] for p in plan["processes"]]
        assert sorted(p for p, _ in confirmed) == tree(leader_a)
        err = await call_error(s, "server.adopt", {"name": a["name"], "confirmed": confirmed})
        assert err.code == "not_own_group" and "pid %d" % os.getpid() in str(err)
        # stop: refused without the plan and with a stale one, then exactly the plan's processes
        assert (await call_error(s, "server.stop", {"name": a["name"]})).code == "confirm_needed"
        stale = [[p, t + 1] if p == leader_a else [p, t] for p, t in confirmed]
        assert (await call_error(s, "server.stop", {"name": a["name"], "confirmed": stale})).code == "plan_changed"
        assert all(alive(p) for p, _ in confirmed)
        out = await s.client.call("server.stop", {"name": a["name"], "confirmed": confirmed, "grace_s": 5},
                                  timeout=120)
        assert out["state"] == "stopped" and out["stop"]["gpu_released"] is True
        assert sorted(out["stop"]["pids"]) == sorted(p for p, _ in confirmed)
        assert not any(alive(p) for p, _ in confirmed)
        assert alive(sibling.pid) and alive(reader.pid)
        # the detached one is alone in its group: adopt it, a new agent re-adopts it, a stop works as for spectui's own
        plan = await s.client.call("server.plan_stop", {"name": b["name"]})
        confirmed = [[p["pid"], p["start_ticks"]] for p in plan["processes"]]
        adopted = await s.client.call("server.adopt", {"name": b["name"], "as": "found", "confirmed": confirmed})
        assert adopted["origin"] == "adopted" and adopted["name"] == "found" and adopted["pid"] == detached.pid
        await s.close()
        s = None
        s2 = await open_session(HostTarget.demo(str(state_dir)))
        again = await listed(s2, "found")
        assert again["origin"] == "adopted" and again["pid"] == detached.pid
        assert not [v for v in (await s2.client.call("servers.list"))["servers"] if v["name"] == b["name"]]
        plan = await s2.client.call("server.plan_stop", {"name": "found"})
        assert plan["signal"] == "group" and plan["origin"] == "adopted"
        out = await s2.client.call("server.stop", {"name": "found", "grace_s": 5}, timeout=120)
        assert out["state"] == "stopped" and out["stop"]["gpu_released"] is True
        assert detached.wait(10) is not None
    finally:
        for p in (leader_a, detached.pid):
            if p:
                kill_tree(p)
        for p in (sibling, reader):
            p.kill()
            p.wait()
        detached.poll()
        for sess in (s, s2):
            if sess is not None:
                await sess.close()


def test_an_agent_of_another_user_shows_but_never_stops(state_dir, tmp_path):
    setpriv = shutil.which("setpriv")
    assert setpriv, "needs setpriv (util-linux; scripts/test installs it)"
    if os.geteuid() != 0:
        pytest.skip("needs root to run an agent as nobody")
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    import tempfile

    port = free_port()
    state = Path(tempfile.mkdtemp(prefix="spectui-nobody-"))  # pytest's tmp folders are private to root
    os.chmod(state, 0o755)
    server = subprocess.Popen(server_argv(port, state), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=server_env(state), start_new_session=True)
    wait_until(lambda: (state / "sim" / "procs").is_dir(), 20)
    subprocess.run(["chown", "-R", "nobody:nogroup", str(state)], check=True)
    agent = subprocess.Popen([setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", python, "-m",
                              "spectui.agent.main", "--sim", "--state", str(state)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=str(ROOT),
                             env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        agent.stdout.readline()  # hello

        def call(method, params, n=[0]):  # noqa: B006  (the request counter, kept between calls)
            n[0] += 1
            agent.stdin.write((json.dumps({"id": n[0], "method": method, "params": params}) + "\n").encode())
            agent.stdin.flush()
            while True:
                msg = json.loads(agent.stdout.readline())
                if msg.get("id") == n[0]:
                    return msg

        def found():
            got = call("servers.list", {})
            return next((v for v in got["result"]["servers"] if v["name"] == "ext-%d" % port), None)

        v = wait_until(found, 30, 0.5)
        assert v is not None and v["user"] == "root" and v["uid"] == 0
        assert v["can_signal"] is False and v["why_not"] == "it belongs to user root and spectui runs as nobody"
        plan = call("server.plan_stop", {"name": v["name"]})["result"]
        assert plan["allowed"] is False
        confirmed = [[p["pid"], p["start_ticks"]] for p in plan["processes"]]
        err = call("server.stop", {"name": v["name"], "confirmed": confirmed})["error"]
        assert err["code"] == "not_permitted" and "belongs to user root" in err["message"]
        assert alive(server.pid)
    finally:
        agent.stdin.close()
        agent.wait(10)
        kill_tree(server.pid)
        server.wait(10)
        shutil.rmtree(state, ignore_errors=True)
