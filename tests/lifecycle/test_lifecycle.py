"""Start, stop, switch, faults and re-adoption on the simulated host."""

import asyncio
import json
import os
import signal

import pytest

from spectui.core.servers import ServerControl, start_params
from spectui.core.session import HostTarget, open_session
from tests.lifecycle.conftest import group_pids, http_json, library, sim_gpu_mem, write_profile


async def test_start_to_ready_with_loading_progress(profiles_dir, demo):
    port = write_profile(profiles_dir, "alpha", sim={"load-time": 1.5})
    ctl = ServerControl(demo)
    events = []
    ctl.on_events(events.append)
    started = await ctl.start(library().get("alpha"))
    assert started["state"] == "starting" and started["pid"] > 0
    ready = await ctl.wait("alpha", timeout_s=60)
    assert ready["state"] == "ready", ready
    loading = [e.data for e in events if e.name == "server" and e.data["state"] == "loading" and e.data["progress"]]
    assert loading, "no loading progress was seen"
    assert any(0 < (e["progress"]["percent"] or 0) < 100 for e in loading)
    assert loading[-1]["progress"]["total"] >= 1
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health_generate", timeout=5) as resp:
        assert resp.status == 200
    mem = await sim_gpu_mem(demo, {0, 1})
    assert all(v > 1000 for v in mem.values()), mem


async def test_switch_between_two_profiles(profiles_dir, demo):
    write_profile(profiles_dir, "alpha")
    port_b = write_profile(profiles_dir, "beta", sim={"load-time": 0.8})
    ctl = ServerControl(demo)
    live_stages = []
    ctl.on_events(lambda ev: live_stages.append(ev.data["stage"]) if ev.name == "switch" else None)
    lib = library()
    r = await ctl.switch(lib.get("alpha"))
    assert r["server"]["state"] == "ready"
    pid_a = r["server"]["pid"]
    r = await ctl.switch(lib.get("beta"))
    assert r["server"]["state"] == "ready" and r["server"]["name"] == "beta"
    stages = [s["stage"] for s in r["stages"]]
    assert stages[:2] == ["stopping", "waiting for GPU memory"] and stages[-1] == "ready"
    # the same stages arrive live, in order, while the switch runs
    seen = [s for s in live_stages if s in ("stopping", "waiting for GPU memory", "starting", "ready")]
    assert seen[-4:] == ["stopping", "waiting for GPU memory", "starting", "ready"], live_stages
    assert not group_pids(pid_a)
    listed = {s["name"]: s for s in await ctl.list()}
    assert listed["alpha"]["state"] == "stopped" and listed["beta"]["state"] == "ready"
    assert http_json(port_b, "/model_info")["model_path"] == "sim/beta"
    # switching to what already runs is a no-op
    again = await ctl.switch(lib.get("beta"))
    assert again.get("already_running") and again["server"]["pid"] == r["server"]["pid"]


async def test_failed_load_oom_shows_reason(profiles_dir, demo):
    write_profile(profiles_dir, "oom", sim={"fail-load": "oom"})
    ctl = ServerControl(demo)
    await ctl.start(library().get("oom"))
    r = await ctl.wait("oom", timeout_s=60)
    assert r["state"] == "failed"
    assert "out of memory" in r["reason"].lower()
    assert r["log_tail"] and len(r["log_tail"]) <= 40


async def test_crash_while_serving(profiles_dir, demo):
    write_profile(profiles_dir, "crashy", sim={"crash-after": 1.0})
    ctl = ServerControl(demo)
    await ctl.start(library().get("crashy"))
    assert (await ctl.wait("crashy", timeout_s=60))["state"] == "ready"
    r = await ctl.wait("crashy", states=["crashed"], timeout_s=60)
    assert r["state"] == "crashed" and r["reason"] and r["log_tail"]


async def test_hang_becomes_unresponsive(profiles_dir, demo):
    write_profile(profiles_dir, "hangs", sim={"hang-after": 1.0})
    prof = library().get("hangs")
    params = dict(start_params(prof, demo), unresponsive_after_s=2.0)
    await demo.client.call("server.start", params)
    ctl = ServerControl(demo)
    assert (await ctl.wait("hangs", timeout_s=60))["state"] == "ready"
    r = await ctl.wait("hangs", states=["unresponsive"], timeout_s=60)
    assert r["state"] == "unresponsive" and "no answer from /server_info" in r["reason"]
    stopped = await ctl.stop("hangs", grace_s=2)
    assert stopped["state"] == "stopped"


@pytest.mark.rank_processes  # it counts the server's processes, one per TP rank
async def test_stop_frees_ranks_and_memory_killing_only_the_leader_would_not(profiles_dir, demo):
    write_profile(profiles_dir, "alpha", gpus=(2, 3))
    ctl = ServerControl(demo)
    prof = library().get("alpha")
    await ctl.start(prof)
    r = await ctl.wait("alpha", timeout_s=60)
    pgid = r["pgid"]
    ranks = [p for p in group_pids(pgid) if p != r["pid"]]
    assert len(ranks) >= 2, "one process per TP rank"
    # Killing only the leader leaves the ranks and their GPU memory behind, as with SGLang.
    os.kill(r["pid"], signal.SIGKILL)
    await asyncio.sleep(1.5)
    assert all(p in group_pids(pgid) for p in ranks)
    mem = await sim_gpu_mem(demo, {2, 3})
    assert all(v > 1000 for v in mem.values()), mem
    crashed = await ctl.wait("alpha", states=["crashed", "failed"], timeout_s=30)
    assert crashed["state"] == "crashed"
    # spectui's stop takes the whole process group and waits for the memory.
    stopped = await ctl.stop("alpha", grace_s=5)
    assert not group_pids(pgid)
    assert stopped["stop"]["gpu_released"] is True and stopped["stop"]["release_s"] >= 0
    assert await sim_gpu_mem(demo, {2, 3}) == {2: 0, 3: 0}


async def test_readopt_after_agent_killed(profiles_dir, state_dir, demo):
    write_profile(profiles_dir, "alpha")
    ctl = ServerControl(demo)
    await ctl.start(library().get("alpha"))
    r = await ctl.wait("alpha", timeout_s=60)
    os.kill(demo.hello["pid"], signal.SIGKILL)
    await asyncio.wait_for(demo.client.closed.wait(), 10)
    s2 = await open_session(HostTarget.demo(str(state_dir)))
    try:
        listed = {x["name"]: x for x in await ServerControl(s2).list()}
        assert listed["alpha"]["state"] == "ready" and listed["alpha"]["pid"] == r["pid"]
        stopped = await ServerControl(s2).stop("alpha", grace_s=5)
        assert stopped["state"] == "stopped" and not group_pids(r["pgid"])
    finally:
        await s2.close()


async def test_stale_record_is_cleaned(profiles_dir, state_dir, demo):
    write_profile(profiles_dir, "alpha")
    ctl = ServerControl(demo)
    await ctl.start(library().get("alpha"))
    r = await ctl.wait("alpha", timeout_s=60)
    await demo.close()
    os.killpg(r["pgid"], signal.SIGKILL)  # dies while no agent watches
    await asyncio.sleep(0.3)
    s2 = await open_session(HostTarget.demo(str(state_dir)))
    try:
        listed = {x["name"]: x for x in await ServerControl(s2).list()}
        assert r["state"] == "ready", r
        assert listed["alpha"]["state"] == "crashed", (listed["alpha"].get("reason"), listed["alpha"].get("log_tail"))
        assert "no console was watching" in listed["alpha"]["reason"]
    finally:
        await s2.close()


async def test_two_consoles_never_double_start(profiles_dir, state_dir, demo):
    write_profile(profiles_dir, "alpha")
    prof = library().get("alpha")
    s2 = await open_session(HostTarget.demo(str(state_dir)))
    try:
        a, b = await asyncio.gather(ServerControl(demo).start(prof), ServerControl(s2).start(prof))
        assert a["pid"] == b["pid"]
        assert a.get("already_running") or b.get("already_running")
        # the second console sees the first one's server, and sees it answer (its own health check)
        await ServerControl(demo).wait("alpha", timeout_s=60)
        assert (await ServerControl(s2).wait("alpha", timeout_s=30))["state"] == "ready"
        listed = {x["name"]: x for x in await ServerControl(s2).list()}
        assert listed["alpha"]["state"] == "ready" and listed["alpha"]["pid"] == a["pid"]
    finally:
        await s2.close()


async def test_port_taken_by_another_program_is_refused(profiles_dir, demo):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        write_profile(profiles_dir, "alpha", port=port)
        from spectui.core.errors import AgentCallError

        with pytest.raises(AgentCallError, match=f"port {port} on the host is in use"):
            await ServerControl(demo).start(library().get("alpha"))


async def test_gpus_used_by_foreign_process_refused_unless_forced(profiles_dir, state_dir, demo):
    from spectui.core.errors import AgentCallError
    from spectui.sim.vgpu import GpuClaim

    claim = GpuClaim(state_dir, gpu=5, name="someone-else")
    claim.update(memory_mib=2048, util=0.0)
    try:
        write_profile(profiles_dir, "alpha", gpus=(5,))
        with pytest.raises(AgentCallError, match=r"GPU 5: pid \d+.*--force"):
            await ServerControl(demo).start(library().get("alpha"))
        r = await ServerControl(demo).start(library().get("alpha"), force=True)
        assert r["state"] == "starting"
    finally:
        claim.release()


async def test_shell_metacharacters_arrive_literally(profiles_dir, demo):
    port = write_profile(profiles_dir, "meta", model="a b;rm -rf x $(id) `id` | cat")
    ctl = ServerControl(demo)
    await ctl.start(library().get("meta"))
    assert (await ctl.wait("meta", timeout_s=60))["state"] == "ready"
    assert http_json(port, "/model_info")["model_path"] == "a b;rm -rf x $(id) `id` | cat"


async def test_secret_env_value_never_shown(profiles_dir, state_dir, demo):
    write_profile(profiles_dir, "alpha", extra="env:\n  API_TOKEN: \"hunter2-${HOME}\"\n")
    ctl = ServerControl(demo)
    r = await ctl.start(library().get("alpha"))
    await ctl.wait("alpha", timeout_s=60)
    # delivered, expanded on the host
    environ = open(f"/proc/{r['pid']}/environ", "rb").read().split(b"\0")
    assert f"API_TOKEN=hunter2-{os.environ['HOME']}".encode() in environ
    # and absent from every output
    listing = json.dumps(await ctl.list())
    records = "".join(p.read_text() for p in (state_dir / "servers").glob("*.json"))
    assert "API_TOKEN" in listing  # the key is listed
    for text in (listing, records, json.dumps(r), repr(library().get("alpha")), str(library().get("alpha"))):
        assert "hunter2" not in text
