"""The probe across nodes on real hosts, run from the client: each node's agent starts its own ranks together
(``core.probe.nodes``), they meet at a port free on node 0, node 0's result is the probe's; a node that fails is
named by cause and the others are cancelled instead of waiting out their rendezvous. Over two real OpenSSH sshd
on loopback, with Gloo CPU ranks (no GPUs here)."""

from __future__ import annotations

import asyncio
import socket
import sys
import threading
import time
from types import SimpleNamespace

import pytest

from spectui.agent.probe.methods import ProbeRunner, rendezvous_port
from spectui.agent.protocol import AgentError
from spectui.core.probe import ProbeOptions, probe_params
from spectui.core.probe.nodes import NodesProbeError, ProbeNode, node_requests, run_probe_nodes
from spectui.core.profiles import Profile
from spectui.core.profiles.model import Node
from spectui.core.session import open_session
from tests.support.sshd import LoopbackSshd

GLOO = ProbeOptions(backend="gloo", device="cpu", hidden_size=512, layers=4, tokens=[1, 4], iters=12, warmup=2,
                    max_seconds=2.0, timeout_s=150)


class FakeAgent:
    simulated = False

    def __init__(self):
        self.events = []
        self.channel = SimpleNamespace(event=lambda name, data: self.events.append((name, data)))


def lone_node_job(port: int) -> dict:
    """Node 0 of two whose node 1 never comes: its ranks wait at the rendezvous."""
    return {"python": sys.executable, "backend": "gloo", "device": "cpu", "world_size": 4, "hidden_size": 512,
            "layers": 4, "tokens": [1], "iters": 4, "warmup": 1, "max_seconds": 1.0, "timeout_s": 120,
            "nnodes": 2, "node_rank": 0, "dist_init_addr": f"127.0.0.1:{port}"}


def run_in_thread(runner, job):
    out = {}

    def go():
        started = time.monotonic()
        try:
            out["result"] = runner.run(job)
        except AgentError as exc:
            out["error"] = exc
        out["seconds"] = time.monotonic() - started

    t = threading.Thread(target=go)
    t.start()
    return t, out


def test_cancel_ends_a_node_waiting_for_its_peers():
    pytest.importorskip("torch")
    agent = FakeAgent()
    runner = ProbeRunner(agent)
    assert runner.cancel() == {"cancelled": False}  # nothing running
    port = rendezvous_port({})["port"]
    t, out = run_in_thread(runner, lone_node_job(port))
    deadline = time.monotonic() + 60
    while not any(d.get("stage") == "ranks" for _, d in agent.events) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert any(d.get("stage") == "ranks" for _, d in agent.events), agent.events
    assert runner.cancel() == {"cancelled": True}
    t.join(30)
    assert not t.is_alive()
    assert out["error"].code == "cancelled" and str(out["error"]) == "the probe was cancelled"
    assert out["seconds"] < 60   # not the rendezvous' 120 s
    assert runner._proc is None


def test_a_cancel_that_comes_before_the_worker_starts_ends_it_when_it_starts():
    runner = ProbeRunner(FakeAgent())
    assert runner._lock.acquire(False)   # a probe.run that has begun but not started its worker yet
    assert runner.cancel() == {"cancelled": True}
    started = time.monotonic()
    with pytest.raises(AgentError) as err:
        runner._run_worker(lone_node_job(rendezvous_port({})["port"]))
    runner._lock.release()
    assert err.value.code == "cancelled" and time.monotonic() - started < 10


def test_the_rendezvous_port_is_free_on_every_address():
    port = rendezvous_port({})["port"]
    s = socket.socket()
    try:
        s.bind(("", port))   # free: torch's TCP store binds it this way on node 0
    finally:
        s.close()


def test_each_node_gets_its_rank_and_the_meeting_point():
    nodes = [ProbeNode("a", None, {"world_size": 4}), ProbeNode("b", None, {"world_size": 4})]
    assert node_requests(nodes, "10.0.0.1:4000") == [
        {"world_size": 4, "nnodes": 2, "node_rank": 0, "dist_init_addr": "10.0.0.1:4000"},
        {"world_size": 4, "nnodes": 2, "node_rank": 1, "dist_init_addr": "10.0.0.1:4000"}]


def duo(first: LoopbackSshd, second: LoopbackSshd) -> Profile:
    return Profile(name="duo", model="tiny", args={"tp-size": 4},
                   nodes=[Node(host=f"{first.user}@127.0.0.1", ssh_port=first.port),
                          Node(host=f"{second.user}@127.0.0.1", ssh_port=second.port)])


async def probe_over(servers, tmp_path, python_of=lambda rank: sys.executable):
    """The probe across the sshd hosts ``servers`` (each with its own state folder): the result or the error,
    node 0's progress, and the seconds it took."""
    profile = duo(*servers)
    state_dirs = [tmp_path / f"state-{rank}" for rank in range(len(servers))]
    for d in state_dirs:
        d.mkdir()
    sessions = [await open_session(s.host_target(d, simulated=False)) for s, d in zip(servers, state_dirs)]
    try:
        nodes = []
        for rank, (server, session) in enumerate(zip(servers, sessions)):
            params = probe_params(profile, GLOO, agent_python=session.hello.get("python"))
            params["python"] = python_of(rank)
            nodes.append(ProbeNode(server.dest, session, params))
        progress = []
        started = time.monotonic()
        try:
            return await run_probe_nodes(nodes, profile.nodes[0].dist_address, on_progress=progress.append), \
                progress, time.monotonic() - started
        except NodesProbeError as exc:
            return exc, progress, time.monotonic() - started
    finally:
        for s in sessions:
            await s.close()


@pytest.mark.sshd
@pytest.mark.timeout(300)
def test_two_real_sshd_nodes_meet_and_node_0_reports_for_both(sshd, other_sshd, tmp_path):
    pytest.importorskip("torch")
    result, progress, _ = asyncio.run(probe_over([sshd, other_sshd], tmp_path))
    assert isinstance(result, dict), result
    prov = result["provenance"]
    assert (prov["nnodes"], prov["node_rank"], prov["ranks_per_node"], prov["world_size"]) == (2, 0, 2, 4)
    assert prov["hosts"] == [sshd.dest, other_sshd.dest] and prov["checked"] is True
    host, _, port = prov["dist_init_addr"].rpartition(":")
    assert host == "127.0.0.1" and int(port) > 0
    assert result["allreduce"]["combine"] == "slowest rank of all nodes per iteration"
    assert all(s["n"] == 12 and s["median_ms"] > 0 for s in result["allreduce"]["sizes"])
    # progress comes from node 0 alone
    ranks = [d for d in progress if d.get("stage") == "ranks"]
    assert [d["node_rank"] for d in ranks] == [0]


@pytest.mark.sshd
@pytest.mark.timeout(300)
def test_a_node_that_cannot_start_is_named_and_the_other_is_cancelled(sshd, other_sshd, tmp_path):
    pytest.importorskip("torch")
    missing = str(tmp_path / "no-such-venv" / "bin" / "python")
    err, _, seconds = asyncio.run(probe_over([sshd, other_sshd], tmp_path,
                                             python_of=lambda rank: missing if rank == 1 else sys.executable))
    assert isinstance(err, NodesProbeError), err
    first, *rest = err.failures
    assert first == (other_sshd.dest, f"{missing} does not exist on the host")
    assert rest == [(sshd.dest, "the probe was cancelled")]   # node 0 stopped waiting for it
    assert str(err).startswith(f"node 1 ({other_sshd.dest}) failed: {missing} does not exist on the host; then "
                               f"node 0 ({sshd.dest}): the probe was cancelled")
    assert seconds < 60   # not node 0's rendezvous time-out


# -- spectui probe --profile P, P with nodes: every node from one command ----------------------------------------
def cli_words(tmp_path, servers, profiles):
    from tests.ssh.test_fleet_sshd import key_line

    known = tmp_path / "known_hosts"
    known.write_text("".join(key_line(s) for s in servers))
    config = tmp_path / "ssh_config"
    config.write_text("")
    words = ["-F", str(config), "--known-hosts", str(known), "--python", sys.executable, "--profiles", str(profiles)]
    for s in servers:
        words += ["-i", str(s.client_key)]
    return words


def write_duo_profile(folder, first, second, tiny_model):
    folder.mkdir(exist_ok=True)
    (folder / "duo.yaml").write_text(
        f"name: duo\nmodel: {tiny_model}\npython: {sys.executable}\n"
        f"nodes:\n  - {{host: {first.user}@127.0.0.1, ssh-port: {first.port}}}\n"
        f"  - {{host: {second.user}@127.0.0.1, ssh-port: {second.port}}}\n"
        "args:\n  tp-size: 4\n  speculative-algorithm: NGRAM\n  speculative-num-draft-tokens: 8\n")
    return folder


@pytest.mark.sshd
@pytest.mark.timeout(300)
def test_cli_probe_of_a_multi_node_profile_runs_on_every_node(sshd, other_sshd, tmp_path, tiny_model, capsys):
    pytest.importorskip("torch")
    import json

    from spectui.cli.main import main
    from spectui.cli.probe import render_text

    profiles = write_duo_profile(tmp_path / "profiles", sshd, other_sshd, tiny_model)
    words = cli_words(tmp_path, [sshd, other_sshd], profiles)
    # --host names either node: the probe runs on both, rank 0 first
    code = main(["probe", "--host", other_sshd.dest, *words, "--profile", "duo", "--backend", "gloo", "--device",
                 "cpu", "--iters", "12", "--warmup", "2", "--tokens", "1,4", "--json", "--no-save"])
    out = capsys.readouterr()
    assert code == 0, out.err
    report = json.loads(out.out)
    assert report["host"] == sshd.dest
    prov = report["result"]["provenance"]
    assert prov["hosts"] == [sshd.dest, other_sshd.dest] and prov["nnodes"] == 2 and prov["node_rank"] == 0
    assert [s["tokens"] for s in report["result"]["allreduce"]["sizes"]] == [1, 4, 8]   # NGRAM's 8 added
    assert "probe: starting 2 of 4 ranks on node 0 of 2 (gloo on cpu, meeting at 127.0.0.1:" in out.err
    first = render_text(report).splitlines()[0]
    assert first.startswith(f"probe      {sshd.dest}: measured with torch ")
    assert f", gloo on cpu, 4 ranks over 2 nodes ({sshd.dest}, {other_sshd.dest}) (" in first
    # a host that is not one of the nodes: one sentence
    code = main(["probe", "--host", "root@127.0.0.1:1", *words, "--profile", "duo"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip().splitlines() == [
        f"spectui: duo runs on 2 nodes ({sshd.user}@127.0.0.1:{sshd.port}, {other_sshd.user}@127.0.0.1:"
        f"{other_sshd.port}), and --host root@127.0.0.1:1 is not one of them: give one of them, and spectui reaches "
        "all of them"]


class ScriptedClient:
    """A node's agent that answers probe.run after ``delay`` s with ``error`` (code, sentence), unless cancelled."""

    def __init__(self, delay, error=None):
        self.delay, self.error, self.calls = delay, error, []
        self.cancelled = asyncio.Event()

    def add_listener(self, fn):
        return lambda: None

    async def call(self, method, params, timeout=None):
        from spectui.core.errors import AgentCallError

        self.calls.append(method)
        if method == "probe.port":
            return {"port": 29999}
        if method == "probe.cancel":
            self.cancelled.set()
            return {"cancelled": True}
        try:
            await asyncio.wait_for(self.cancelled.wait(), self.delay)
            raise AgentCallError("cancelled", "the probe was cancelled")
        except asyncio.TimeoutError:
            pass
        if self.error:
            raise AgentCallError(*self.error)
        return {"provenance": {"node_rank": params["node_rank"]}}


def scripted(*clients):
    return [ProbeNode(f"node-{i}", SimpleNamespace(client=c), {"world_size": 4}) for i, c in enumerate(clients)]


def test_the_node_that_failed_by_itself_is_named_before_one_that_lost_its_peers_first():
    lost = ("probe_failed", "rank 0 of 4 failed: RuntimeError: [../gloo/transport/tcp/pair.cc:534] Connection "
            "closed by peer [127.0.0.1]:41922")
    oom = ("rank_failed", "rank 2 of 4 failed: torch.OutOfMemoryError: CUDA out of memory")
    clients = [ScriptedClient(0.05, lost), ScriptedClient(0.3, oom), ScriptedClient(30)]
    with pytest.raises(NodesProbeError) as err:
        asyncio.run(run_probe_nodes(scripted(*clients), "10.0.0.1"))
    labels = [label for label, _ in err.value.failures]
    assert labels == ["node-1", "node-0", "node-2"]   # the cause, then the symptoms in the order seen
    assert str(err.value).startswith(f"node 1 (node-1) failed: {oom[1]}; then node 0 (node-0): {lost[1]}; then "
                                     "node 2 (node-2): the probe was cancelled")
    assert clients[2].calls == ["probe.run", "probe.cancel"]   # cancelled, not waited out
    assert clients[0].calls == ["probe.port", "probe.run"]


def test_every_node_answering_gives_node_0s_result_with_the_hosts():
    result = asyncio.run(run_probe_nodes(scripted(ScriptedClient(0.01), ScriptedClient(0.05)), "fd00::1"))
    assert result["provenance"] == {"node_rank": 0, "hosts": ["node-0", "node-1"]}
