"""``spectui profiles render NAME --for slurm|lws|shell``: text a scheduler runs, checked by running it.

The Slurm script is run by bash with stand-ins for ``srun``/``scontrol`` and a ``python3`` that
records its argv; the LeaderWorkerSet is expanded as Kubernetes expands it. Either way each node
must get exactly the argv spectui would start it with (``multinode.node_argv``), whatever shell
characters the profile's values hold.
"""

from __future__ import annotations

import os
import stat
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from spectui.cli.main import main
from spectui.core.profiles import build_argv, load_profile
from spectui.core.profiles.multinode import node_argv
from spectui.core.profiles.render import option_groups
from tests.support.schedulers import lws_node_commands, run_script

ROOT = Path(__file__).resolve().parents[2]
#: A model path no shell may reinterpret: spaces, both quotes, $( ), backticks, ; & | * and a newline.
NASTY_MODEL = "/models/My \"Model\" it's $(touch pwned) `id`; a&b|c *.x\nend"


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    monkeypatch.delenv("SPECTUI_PROFILES_PATH", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)


def write_profile(tmp_path: Path, text: str, name: str = "mn.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def nasty(tmp_path) -> Path:
    """A three-node profile whose model path, flag values and env hold shell metacharacters."""
    path = tmp_path / "mn.yaml"
    path.write_text(yaml.safe_dump({
        "name": "mn",
        "model": NASTY_MODEL,
        "nodes": ["root@gpu-a", {"host": "gpu-b", "ssh-port": 2222}, "gpu-c"],
        "dist-init-port": 23456,
        "env": {"NCCL_SOCKET_IFNAME": "eth0 ; echo hi", "TOKEN": "${HF_TOKEN}"},
        "gpus": [0, 1, 2, 3],
        "args": {"tp-size": 12, "trust-remote-code": True, "speculative-algorithm": "EAGLE3",
                 "speculative-draft-model-path": "/drafts/${DRAFT_ROOT}/d $x"},
    }, sort_keys=False))
    assert load_profile(path, layers=[]).model == NASTY_MODEL
    return path


def render(capsys, *args) -> str:
    assert main(["profiles", "render", *args]) == 0
    return capsys.readouterr().out


def expanded(argv: list[str], env: dict[str, str]) -> list[str]:
    """``argv`` with ``${VAR}`` resolved from ``env``, as the agent does on a host."""
    out = []
    for word in argv:
        for name, value in env.items():
            word = word.replace("${%s}" % name, value)
        out.append(word)
    return out


HOST_ENV = {"HF_TOKEN": "hf_abc", "DRAFT_ROOT": "root dir"}


def test_slurm_script_passes_bash_n_and_gives_each_node_its_argv(capsys, nasty, tmp_path):
    text = render(capsys, str(nasty), "--for", "slurm")
    check = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    assert "#SBATCH --nodes=3" in text and "#SBATCH --gres=gpu:4" in text and "SLURM_NODEID" in text
    records = run_script(text, tmp_path, {"SLURM_JOB_NODELIST": "cn-7,cn-8,cn-9", **HOST_ENV})
    profile = load_profile(nasty, layers=[])
    assert len(records) == 3
    for rank, record in enumerate(records):
        want = node_argv(profile, rank)
        want[want.index("--dist-init-addr") + 1] = "cn-7:23456"  # rank 0 is the allocation's first node
        got = record["argv"]
        # srun's tasks put the node flags in their own order; compare as flag -> value
        assert sorted(_pairs(got)) == sorted(_pairs(expanded(want[1:], HOST_ENV)))
        assert record["env"]["NCCL_SOCKET_IFNAME"] == "eth0 ; echo hi" and record["env"]["TOKEN"] == "hf_abc"
    assert not (tmp_path / "pwned").exists()


def _pairs(argv: list[str]) -> list[tuple[str, ...]]:
    return [tuple(group) for group in option_groups(argv)]


def test_slurm_script_stops_when_a_host_variable_is_missing(capsys, nasty, tmp_path):
    text = render(capsys, str(nasty), "--for", "slurm")
    with pytest.raises(AssertionError, match="HF_TOKEN"):
        run_script(text, tmp_path, {"SLURM_JOB_NODELIST": "cn-1,cn-2,cn-3", "DRAFT_ROOT": "r"})


def test_shell_commands_run_each_node_with_its_rank(capsys, nasty, tmp_path):
    text = render(capsys, str(nasty), "--for", "shell")
    records = run_script(text, tmp_path, HOST_ENV)
    profile = load_profile(nasty, layers=[])
    assert [r["argv"] for r in records] == [expanded(node_argv(profile, i)[1:], HOST_ENV) for i in range(3)]
    assert {r["env"]["CUDA_VISIBLE_DEVICES"] for r in records} == {"0,1,2,3"}
    assert "# node 1: gpu-b" in text and "gpu-a:23456" in text
    assert not (tmp_path / "pwned").exists()


def test_shell_for_a_single_host_profile_is_its_one_command(capsys, tmp_path):
    path = write_profile(tmp_path, """\
        name: one
        model: "/m/a b"
        args: {tp-size: 2}
        """)
    records = run_script(render(capsys, str(path), "--for", "shell"), tmp_path)
    assert [r["argv"] for r in records] == [build_argv(load_profile(path, layers=[]), simulated=False)[1:]]
    assert "--nnodes" not in records[0]["argv"]


def test_lws_yaml_has_leader_and_worker_templates_with_the_lws_variables(capsys, nasty):
    docs = list(yaml.safe_load_all(render(capsys, str(nasty), "--for", "lws")))
    lws, service = docs
    assert (lws["apiVersion"], lws["kind"]) == ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet")
    template = lws["spec"]["leaderWorkerTemplate"]
    assert template["size"] == 3
    for role in ("leaderTemplate", "workerTemplate"):
        [container] = template[role]["spec"]["containers"]
        command = container["command"]
        flags = {command[i]: command[i + 1] for i in range(len(command) - 1) if command[i].startswith("--")}
        assert flags["--nnodes"] == "$(LWS_GROUP_SIZE)"
        assert flags["--node-rank"] == "$(LWS_WORKER_INDEX)"
        assert flags["--dist-init-addr"] == "$(LWS_LEADER_ADDRESS):23456"
        assert flags["--host"] == "0.0.0.0"  # a pod is reached on its own address
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "4"  # tp-size 12 over 3 nodes
    leader = template["leaderTemplate"]["spec"]["containers"][0]
    assert leader["readinessProbe"]["tcpSocket"]["port"] == 30000
    assert service["kind"] == "Service" and service["spec"]["selector"] == {
        "leaderworkerset.sigs.k8s.io/name": "mn", "role": "leader"}


def test_lws_pods_get_the_profile_values_as_written(capsys, nasty):
    lws = next(yaml.safe_load_all(render(capsys, str(nasty), "--for", "lws")))
    pods = lws_node_commands(lws, leader_address="mn-0.mn")
    profile = load_profile(nasty, layers=[])
    for rank, pod in enumerate(pods):
        want = node_argv(profile, rank, python="python3")
        want[want.index("--dist-init-addr") + 1] = "mn-0.mn:23456"
        want[want.index("--host") + 1] = "0.0.0.0"
        # ${VAR} becomes the pod's $(VAR): defined in the container's env (DRAFT_ROOT is not, so it stays)
        assert pod["argv"] == [w.replace("${DRAFT_ROOT}", "$(DRAFT_ROOT)") for w in want]
        assert pod["env"]["NCCL_SOCKET_IFNAME"] == "eth0 ; echo hi"
        assert "CUDA_VISIBLE_DEVICES" not in pod["env"]


def test_lws_image_option(capsys):
    text = render(capsys, "twonode-kimi-eagle3", "--for", "lws", "--image", "registry.local/sglang:v0.5.23")
    lws = next(yaml.safe_load_all(text))
    images = {c["image"] for t in ("leaderTemplate", "workerTemplate")
              for c in lws["spec"]["leaderWorkerTemplate"][t]["spec"]["containers"]}
    assert images == {"registry.local/sglang:v0.5.23"}


def test_shipped_multinode_profile_renders_for_every_target(capsys, tmp_path):
    for target in ("shell", "slurm", "lws"):
        text = render(capsys, "twonode-kimi-eagle3", "--for", target)
        assert "--tp-size" in text and "16" in text
    records = run_script(render(capsys, "twonode-kimi-eagle3", "--for", "slurm"), tmp_path,
                         {"SLURM_JOB_NODELIST": "a,b"})
    assert sorted(r["argv"][r["argv"].index("--node-rank") + 1] for r in records) == ["0", "1"]


def test_output_file_is_private_and_not_replaced_without_force(capsys, tmp_path):
    out = tmp_path / "job.sbatch"
    assert main(["profiles", "render", "twonode-kimi-eagle3", "--for", "slurm", "--output", str(out)]) == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert f"sbatch {out}" in capsys.readouterr().err
    first = out.read_text()
    assert main(["profiles", "render", "twonode-kimi-eagle3", "--for", "lws", "--output", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"spectui: {out} already exists; pass --force to replace it"
    assert out.read_text() == first
    assert main(["profiles", "render", "twonode-kimi-eagle3", "--for", "lws", "-o", str(out), "--force"]) == 0
    assert out.read_text().count("kind: LeaderWorkerSet") == 1


@pytest.mark.parametrize("args, message", [
    (["twonode-kimi-eagl3", "--for", "lws"], "no profile named 'twonode-kimi-eagl3'; did you mean 'twonode-kimi-eagle3'"),
    (["kimi-eagle3", "--for", "slurm", "--image", "x"], "--image applies only to --for lws"),
    (["missing.yaml", "--for", "shell"], "no profile file missing.yaml"),
])
def test_bad_requests_get_one_sentence(capsys, args, message):
    assert main(["profiles", "render", *args]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.strip().splitlines()
    assert line.startswith("spectui: ") and message in line


def test_a_broken_profile_file_is_reported_at_its_line(capsys, tmp_path):
    path = write_profile(tmp_path, """\
        name: mn
        model: m
        nodes: [a, b]
        args:
          tp-size: 3
        """)
    assert main(["profiles", "render", str(path), "--for", "lws"]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"spectui: {path}:5:")
    assert "multiple of 2" in line


def test_a_broken_profile_by_name_says_what_is_wrong(capsys, tmp_path):
    folder = tmp_path / "config" / "spectui" / "profiles"
    folder.mkdir(parents=True)
    (folder / "mn.yaml").write_text("name: mn\nmodel: m\nnodes: [a, b]\nargs: {tp-size: 2, nnodes: 2}\n")
    assert main(["profiles", "render", "mn", "--for", "shell"]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"spectui: {folder / 'mn.yaml'}:4:") and "remove 'args.nnodes'" in line
