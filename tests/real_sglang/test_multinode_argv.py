"""Each node's command line of a multi-node profile, parsed by the real SGLang 0.5.23's own parser.

Every way a node gets its argv is checked: ``multinode.node_argv`` (what spectui starts), the
Slurm script run with stand-ins for ``srun`` (``SLURM_NODEID`` per task), and the LeaderWorkerSet
expanded as Kubernetes expands it (``LWS_WORKER_INDEX`` per pod). Two oracles: the host-parser
machinery ``spectui profiles check`` uses (the agent's ``sglang_argparse``, run by the real venv's
interpreter) and a plain ``ServerArgs.add_cli_args`` parser with ``parse_args``, whose namespace
must hold the node's place, and whose ``--dist-init-addr`` SGLang's ``NetworkAddress.parse``
accepts (sglang/srt/utils/network.py:600).
"""

from __future__ import annotations

import json

import pytest
import yaml

from spectui.agent.bootstrap import own_sources
from spectui.cli.main import main
from spectui.core.profiles import load_profile, load_profiles
from spectui.core.profiles.multinode import node_argv
from spectui.core.profiles.render import option_groups

from tests.support import real_sglang as rs
from tests.support.schedulers import lws_node_commands, run_script

pytestmark = pytest.mark.timeout(1200)

ORACLE = r'''
import argparse, json, sys
from sglang.srt.server_args import ServerArgs
from sglang.srt.utils.network import NetworkAddress
parser = argparse.ArgumentParser()
ServerArgs.add_cli_args(parser)
out = []
for argv in json.loads(sys.stdin.read()):
    ns = parser.parse_args(argv)
    addr = NetworkAddress.parse(ns.dist_init_addr)
    out.append({"nnodes": ns.nnodes, "node_rank": ns.node_rank, "tp_size": ns.tp_size, "pp_size": ns.pp_size,
                "model_path": ns.model_path, "addr": [addr.host, addr.port]})
print(json.dumps(out))
'''


def host_parser(python: str, argvs: list[list[str]]) -> list[dict]:
    """The verdicts of the parser machinery ``spectui profiles check`` runs on a host."""
    [source] = [text for name, text in own_sources().items() if name.rpartition(".")[2] == "sglang_argparse"]
    request = {"commands": [{"items": option_groups(a)} for a in argvs]}
    r = rs.run_real(python, ["-c", source], input=json.dumps(request))
    assert r.returncode == 0, r.stderr[-2000:]
    answer = json.loads(r.stdout)
    assert answer["imported"] is True and answer["version"] == "0.5.23"
    return answer["commands"]


def oracle(python: str, argvs: list[list[str]]) -> list[dict]:
    r = rs.run_real(python, ["-c", ORACLE], input=json.dumps(argvs))
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.fixture
def profiles(tmp_path, monkeypatch):
    """The shipped two-node example, and three odd nodes: IPv6 rank 0, a model path full of shell."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    odd = tmp_path / "odd.yaml"
    odd.write_text(yaml.safe_dump({
        "name": "odd", "model": "/models/it's $(id) `x`; a b",
        "nodes": [{"host": "root@[fd00::1]"}, "gpu-b", {"host": "gpu-c", "address": "10.1.0.3"}],
        "dist-init-port": 29500,
        "args": {"tp": 6, "pipeline-parallel-size": 2, "trust-remote-code": True,
                 "speculative-algorithm": "NGRAM", "speculative-num-draft-tokens": 8},
    }, sort_keys=False))
    return [load_profiles().get("twonode-kimi-eagle3"), load_profile(odd)]


def server_words(argv: list[str]) -> list[str]:
    """The words after ``python3 -m sglang.launch_server``."""
    assert argv[1:3] == ["-m", "sglang.launch_server"], argv[:3]
    return argv[3:]


def test_each_node_argv_parses_with_real_sglang(real_sglang_python, profiles):
    cases = [(p, rank, server_words(node_argv(p, rank))) for p in profiles for rank in range(len(p.nodes))]
    verdicts = host_parser(real_sglang_python, [argv for _, _, argv in cases])
    parsed = oracle(real_sglang_python, [argv for _, _, argv in cases])
    for (profile, rank, _), verdict, ns in zip(cases, verdicts, parsed):
        assert verdict["error"] is None, (profile.name, rank, verdict)
        resolved = {i["flag"]: i["value"] for i in verdict["items"]}
        assert resolved["--nnodes"] == len(profile.nodes) and resolved["--node-rank"] == rank
        assert ns["nnodes"] == len(profile.nodes) and ns["node_rank"] == rank and ns["model_path"] == profile.model
        assert ns["addr"] == [profile.nodes[0].dist_address, profile.dist_init_port or 20000]
        # tp-size is the total across nodes: SGLang's own rule (validation_hook.py:179) holds
        assert (ns["tp_size"] * ns["pp_size"]) % ns["nnodes"] == 0
    assert parsed[-3]["addr"] == ["fd00::1", 29500]  # the odd profile's rank 0, bracketed on the way


def test_slurm_and_lws_nodes_parse_with_real_sglang(real_sglang_python, profiles, tmp_path, capsys):
    argvs, expected = [], []
    for profile in profiles:
        n = len(profile.nodes)
        assert main(["profiles", "render", profile.source, "--for", "slurm"]) == 0
        nodelist = ",".join(f"cn-{i}" for i in range(n))
        records = run_script(capsys.readouterr().out, tmp_path / profile.name, {"SLURM_JOB_NODELIST": nodelist})
        argvs += [server_words(["python3"] + r["argv"]) for r in records]
        expected += [(profile, rank, "cn-0") for rank in range(n)]
        assert main(["profiles", "render", profile.source, "--for", "lws"]) == 0
        lws = next(yaml.safe_load_all(capsys.readouterr().out))
        pods = lws_node_commands(lws, leader_address=f"{profile.name}-0.{profile.name}")
        argvs += [server_words(pod["argv"]) for pod in pods]
        expected += [(profile, rank, f"{profile.name}-0.{profile.name}") for rank in range(n)]
    verdicts = host_parser(real_sglang_python, argvs)
    parsed = oracle(real_sglang_python, argvs)
    for (profile, rank, head), verdict, ns in zip(expected, verdicts, parsed):
        assert verdict["error"] is None, (profile.name, rank, verdict)
        assert (ns["nnodes"], ns["node_rank"]) == (len(profile.nodes), rank)
        assert ns["addr"] == [head, profile.dist_init_port or 20000] and ns["model_path"] == profile.model
