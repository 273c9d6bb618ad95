"""`spectui servers start|stop P` for a multi-node profile, over two real OpenSSH sshd on loopback (simulated GPU
hosts, each with its own HOME and so its own state folder): --host names either node, every node starts together and is ready, rank
0 serves the API; stop ends every node; a failing start stops every node and names the failed node with its own
last log lines; a --host that is not a node is one sentence."""

from __future__ import annotations

import json
import sys
import urllib.request

import pytest

from spectui.cli.main import main
from tests.ssh.test_fleet_sshd import key_line
from tests.support.sshd import LoopbackSshd, free_port
from tests.ui.support import kill_recorded_servers

pytestmark = [pytest.mark.sshd, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    """Two sshd on loopback, each a host with its own HOME, so each agent keeps its own state folder
    (~/.cache/spectui) as two machines would."""
    servers = []
    for name in ("node-a", "node-b"):
        root = tmp_path_factory.mktemp(name)
        home = root / "home"
        home.mkdir()
        servers.append(LoopbackSshd(root / "sshd", home=home).start())
    yield servers
    for s in servers:
        kill_recorded_servers(s.home / ".cache" / "spectui")
        s.stop()


def words(tmp_path, servers, profiles):
    known = tmp_path / "known_hosts"
    known.write_text("".join(key_line(s) for s in servers))
    config = tmp_path / "ssh_config"
    config.write_text("")
    out = ["-F", str(config), "--known-hosts", str(known), "--python", sys.executable, "--sim", "--profiles",
           str(profiles)]
    for s in servers:
        out += ["-i", str(s.client_key)]
    return out


def write_duo(folder, first, second, *, port, sim_extra=""):
    folder.mkdir(exist_ok=True)
    (folder / "duo.yaml").write_text(
        f"name: duo\nmodel: sim/duo\nport: {port}\ngpus: [0, 1]\n"
        f"nodes:\n  - {{host: {first.user}@127.0.0.1, ssh-port: {first.port}}}\n"
        f"  - {{host: {second.user}@127.0.0.1, ssh-port: {second.port}}}\n"
        f"dist-init-port: {free_port()}\nargs:\n  tp-size: 4\nsim:\n  load-time: 0.6\n{sim_extra}")
    return folder


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_start_and_stop_every_node_from_either_node(nodes, tmp_path, capsys):
    first, second = nodes
    port = free_port()
    profiles = write_duo(tmp_path / "profiles", first, second, port=port)
    opts = words(tmp_path, nodes, profiles)
    code, out, err = run(capsys, "servers", "start", "duo", "--host", second.dest, *opts, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["schema"] == "spectui.servers.nodes/1"
    started = report["nodes"]
    assert [(n["rank"], n["host"]) for n in started] == [(0, first.dest), (1, second.dest)]
    assert all(n["server"]["state"] == "ready" for n in started)
    argvs = [" ".join(n["server"]["argv"]) for n in started]
    assert all("--nnodes 2" in a and "--dist-init-addr 127.0.0.1:" in a for a in argvs)
    assert "--node-rank 0" in argvs[0] and "--node-rank 1" in argvs[1]
    for server in nodes:   # each node's record on its own host
        assert (server.home / ".cache" / "spectui").is_dir()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as r:   # rank 0 serves
        assert r.status == 200
    code, out, err = run(capsys, "servers", "stop", "duo", "--host", first.dest, *opts)
    assert code == 0, err
    assert out.splitlines() == [f"node 0 on {first.dest}: stopped", f"node 1 on {second.dest}: stopped"]
    code, out, err = run(capsys, "servers", "stop", "duo", "--host", first.dest, *opts)
    assert code == 0 and out.splitlines() == [f"node 0 on {first.dest}: not running",
                                              f"node 1 on {second.dest}: not running"]


def test_a_failing_start_stops_every_node_and_shows_the_failed_nodes_log(nodes, tmp_path, capsys):
    first, second = nodes
    profiles = write_duo(tmp_path / "profiles", first, second, port=free_port(), sim_extra="  fail-load: oom\n")
    opts = words(tmp_path, nodes, profiles)
    code, out, err = run(capsys, "servers", "start", "duo", "--host", first.dest, *opts, "--json")
    assert code == 1
    report = json.loads(out)   # --json: the failure as one object on stdout, the sentence on stderr as well
    lines = err.strip().splitlines()
    assert lines[0].startswith("spectui: duo: node ") and "CUDA out of memory" in lines[0], err
    assert lines[0].endswith("; every node was stopped")
    rank = int(lines[0].split("node ")[1].split()[0])
    host = nodes[rank]
    assert lines[1] == f"The last lines of node {rank}'s log on {host.dest}:"
    logs = list((host.home / ".cache" / "spectui").rglob("duo*.log"))
    assert len(logs) == 1, logs
    written = [line for line in logs[0].read_text().splitlines() if line.strip()][-6:]
    assert lines[2:] == ["  " + (line[:159] + "…" if len(line) > 160 else line) for line in written]
    assert (report["schema"], report["failed_node"], report["host"]) == ("spectui.servers.nodes/1", rank, host.dest)
    assert ["  " + line for line in report["log"]] == lines[2:] and report["reason"] in lines[0]
    for server in nodes:
        code, out, err = run(capsys, "servers", "list", "--host", server.dest, *opts, "--json")
        assert code == 0, err
        duo = [s for s in json.loads(out)["servers"] if s["name"] == "duo"]
        assert duo and all(s["state"] not in ("starting", "loading", "ready") for s in duo)


def test_a_host_that_is_not_a_node_is_one_sentence(nodes, tmp_path, capsys):
    first, second = nodes
    profiles = write_duo(tmp_path / "profiles", first, second, port=free_port())
    code, out, err = run(capsys, "servers", "start", "duo", "--host", "root@127.0.0.1:1",
                         *words(tmp_path, nodes, profiles))
    assert code == 1 and out == ""
    assert err.strip().splitlines() == [
        f"spectui: duo runs on 2 nodes ({first.user}@127.0.0.1:{first.port}, {second.user}@127.0.0.1:"
        f"{second.port}), and --host root@127.0.0.1:1 is not one of them: give one of them, and spectui reaches "
        "all of them"]
