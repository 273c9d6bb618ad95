"""How a profile becomes an argv list and an environment, checked through real processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from spectui.core.profiles import ProfileLayer, build_argv, build_env, format_command, load_profile

ECHO_ARGV = "import sys, json; print(json.dumps(sys.argv[1:]))"

HOSTILE = [
    "a b;rm -rf x",
    "$(touch pwned)",
    "`touch pwned`",
    "it's \"quoted\"",
    "*",
    "line one\nline two",
    "${HOME}",
    "x|y&z>out.txt",
    "ünïcødé ✓",
]


def profile_from(tmp_path: Path, text: str, name: str = "p.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return load_profile(path, layers=[ProfileLayer("test", (tmp_path,))])


def run_argv(argv: list[str], cwd: Path) -> list[str]:
    result = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=30, check=True)
    return json.loads(result.stdout)


def test_real_server_command(tmp_path):
    profile = profile_from(tmp_path, """\
        model: moonshotai/Kimi-K2.5
        python: /opt/sglang/.venv/bin/python
        port: 30010
        args:
          tp-size: 8
          trust-remote-code: true
          disable-radix-cache: false
          cuda-graph-bs: [1, 2, 4]
          json-model-override-args: {rope_scaling: {factor: 2}}
          speculative-algorithm: EAGLE3
        sim:
          hardware: pcie-8gpu
        """)
    assert build_argv(profile, simulated=False) == [
        "/opt/sglang/.venv/bin/python", "-m", "sglang.launch_server",
        "--model-path", "moonshotai/Kimi-K2.5", "--host", "127.0.0.1", "--port", "30010",
        "--enable-metrics",
        "--tp-size", "8", "--trust-remote-code", "--cuda-graph-bs", "1", "2", "4",
        "--json-model-override-args", '{"rope_scaling":{"factor":2}}',
        "--speculative-algorithm", "EAGLE3",
    ]


def test_simulated_host_swaps_the_launcher_and_adds_sim_knobs(tmp_path):
    profile = profile_from(tmp_path, """\
        model: org/m
        launcher: -m sglang.launch_server --some-wrapper-flag
        metrics: false
        args: {speculative-num-draft-tokens: 8}
        sim: {hardware: pcie-8gpu, draft-agreement: 0.55, load-time: 3}
        """)
    argv = build_argv(profile, simulated=True, python="/usr/bin/python3")
    assert argv == [
        "/usr/bin/python3", "-m", "spectui.sim.server",
        "--model-path", "org/m", "--host", "127.0.0.1", "--port", "30000",
        "--speculative-num-draft-tokens", "8",
        "--sim-hardware", "pcie-8gpu", "--sim-draft-agreement", "0.55", "--sim-load-time", "3",
    ]
    real = build_argv(profile, simulated=False)
    assert real[:4] == ["python3", "-m", "sglang.launch_server", "--some-wrapper-flag"]
    assert "--enable-metrics" not in real and not any(w.startswith("--sim-") for w in real)


def test_python_precedence(tmp_path):
    profile = profile_from(tmp_path, "model: org/m\npython: /venv/bin/python\n")
    assert build_argv(profile, simulated=False)[0] == "/venv/bin/python"
    assert build_argv(profile, simulated=False, python="/other/python")[0] == "/other/python"
    plain = profile_from(tmp_path, "model: org/m\n", name="q.yaml")
    assert build_argv(plain, simulated=False)[0] == "python3"


def test_hostile_values_arrive_as_single_literal_arguments(tmp_path):
    args = "\n".join(f"  flag-{i}: {json.dumps(v)}" for i, v in enumerate(HOSTILE))
    profile = profile_from(tmp_path, f"""\
model: "org/m; echo injected"
launcher: [-c, "{ECHO_ARGV}"]
args:
{args}
  dash-value: "--not-an-option"
  list-values: ["a b", "$(touch pwned)"]
""")
    argv = build_argv(profile, simulated=False, python=sys.executable)
    workdir = tmp_path / "work"
    (workdir / "x").mkdir(parents=True)
    received = run_argv(argv, workdir)
    assert received == argv[3:]
    for i, value in enumerate(HOSTILE):
        at = received.index(f"--flag-{i}")
        assert received[at + 1] == value
    assert received[received.index("--model-path") + 1] == "org/m; echo injected"
    assert "--dash-value=--not-an-option" in received
    at = received.index("--list-values")
    assert received[at + 1: at + 3] == ["a b", "$(touch pwned)"]
    # Nothing was interpreted by a shell.
    assert sorted(p.name for p in workdir.iterdir()) == ["x"]


def test_format_command_survives_a_shell(tmp_path):
    """Where a remote shell is unavoidable, the quoted line gives back the same argv."""
    args = "\n".join(f"  flag-{i}: {json.dumps(v)}" for i, v in enumerate(HOSTILE))
    profile = profile_from(tmp_path, f"model: org/m\nlauncher: [-c, \"{ECHO_ARGV}\"]\nargs:\n{args}\n")
    argv = build_argv(profile, simulated=False, python=sys.executable)
    workdir = tmp_path / "work"
    workdir.mkdir()
    via_shell = run_argv(["/bin/sh", "-c", format_command(argv)], workdir)
    assert via_shell == argv[3:]
    assert list(workdir.iterdir()) == []


def test_build_env(tmp_path):
    profile = profile_from(tmp_path, """\
        model: org/m
        gpus: "0-3,6"
        env:
          HF_TOKEN: ${HF_TOKEN}
          NCCL_P2P_LEVEL: NVL
          SGLANG_LOG_MS: 1
        """)
    assert build_env(profile) == {
        "HF_TOKEN": "${HF_TOKEN}",
        "NCCL_P2P_LEVEL": "NVL",
        "SGLANG_LOG_MS": "1",
        "CUDA_VISIBLE_DEVICES": "0,1,2,3,6",
    }
    assert build_env(profile_from(tmp_path, "model: org/m\n", name="q.yaml")) == {}
    single = profile_from(tmp_path, "model: org/m\ngpus: 2\n", name="r.yaml")
    assert build_env(single) == {"CUDA_VISIBLE_DEVICES": "2"}



def test_a_hosts_python_serves_the_profiles_that_name_none(tmp_path):
    """``--host local --python VENV``: the venv runs the agent and the servers of profiles without ``python``;
    a profile's own ``python`` stays its own."""
    from types import SimpleNamespace

    from spectui.core.servers import start_params
    from spectui.core.session import HostTarget

    session = SimpleNamespace(target=HostTarget(kind="local", python="/venv/bin/python"), hello={})
    plain = profile_from(tmp_path, "model: org/m\n", name="plain.yaml")
    own = profile_from(tmp_path, "model: org/m\npython: /own/bin/python\n", name="own.yaml")
    assert start_params(plain, session)["argv"][0] == "/venv/bin/python"
    assert start_params(own, session)["argv"][0] == "/own/bin/python"
    bare = SimpleNamespace(target=HostTarget(kind="local"), hello={})
    assert start_params(plain, bare)["argv"][0] == "python3"


def test_a_server_on_the_cpu_holds_no_gpus(tmp_path):
    """``gpus: []`` is "no GPUs" (not a schema error), and a profile with ``device: cpu`` and no ``gpus`` holds
    none either (not GPU 0, which a GPU server with tp-size 1 would take)."""
    from spectui.core.servers import profile_gpus

    empty = profile_from(tmp_path, "model: org/m\ngpus: []\nargs:\n  device: cpu\n", name="empty.yaml")
    assert profile_gpus(empty) == [] and build_env(empty)["CUDA_VISIBLE_DEVICES"] == ""
    cpu = profile_from(tmp_path, "model: org/m\nargs:\n  device: cpu\n", name="cpu.yaml")
    assert profile_gpus(cpu) == [] and "CUDA_VISIBLE_DEVICES" not in build_env(cpu)
    gpu = profile_from(tmp_path, "model: org/m\nargs:\n  tp-size: 2\n", name="gpu.yaml")
    assert profile_gpus(gpu) == [0, 1]
