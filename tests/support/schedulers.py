"""Running rendered launch text the way its scheduler would, to read back each node's real argv.

- ``run_script``: a rendered shell or Slurm script run by bash, with ``srun`` and ``scontrol``
  standing in for Slurm's (one task per node, each with its own ``SLURM_NODEID``) and ``python3``
  recording the argv and environment it was started with instead of starting a server;
- ``k8s_expand``: Kubernetes' ``$(VAR)`` / ``$$`` expansion of container commands and env values
  (the rules of k8s.io/kubernetes third_party/forked/golang/expansion/expand.go), and
  ``lws_node_commands``: the command each pod of a LeaderWorkerSet runs, with the variables the
  LWS controller gives each pod.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

RECORDER = textwrap.dedent("""\
    #!{python}
    import json, os, sys
    with open(os.environ["SPECTUI_TEST_RECORD"], "a") as out:
        out.write(json.dumps({{"argv": sys.argv[1:], "env": dict(os.environ)}}) + "\\n")
    """)

SRUN = textwrap.dedent("""\
    #!{python}
    import os, subprocess, sys
    args = sys.argv[1:]
    tasks = 1
    while args and args[0].startswith("--"):
        if args[0].startswith("--ntasks="):
            tasks = int(args[0].split("=", 1)[1])
        args = args[1:]
    for rank in range(tasks):
        env = dict(os.environ, SLURM_NODEID=str(rank), SLURM_PROCID=str(rank))
        code = subprocess.run(args, env=env).returncode
        if code:
            sys.exit(code)
    """)

SCONTROL = textwrap.dedent("""\
    #!{python}
    import sys
    assert sys.argv[1:3] == ["show", "hostnames"], sys.argv
    print("\\n".join(sys.argv[3].split(",")))
    """)


def fake_bin(folder: Path) -> Path:
    """A folder holding the stand-ins: ``python3`` (records), ``srun`` and ``scontrol``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("python3", RECORDER), ("srun", SRUN), ("scontrol", SCONTROL)):
        path = folder / name
        path.write_text(text.format(python=sys.executable))
        path.chmod(0o755)
    return folder


def run_script(text: str, tmp_path: Path, env: dict[str, str] | None = None) -> list[dict]:
    """Run a rendered script with bash and the stand-ins first on PATH; what each python3 got."""
    bin_dir = fake_bin(tmp_path / "bin")
    script = tmp_path / "rendered.sh"
    script.write_text(text)
    record = tmp_path / "record.jsonl"
    record.unlink(missing_ok=True)
    run_env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin", "SPECTUI_TEST_RECORD": str(record), **(env or {})}
    r = subprocess.run(["bash", str(script)], env=run_env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in record.read_text().splitlines()]


def k8s_expand(text: str, variables: dict[str, str]) -> str:
    """``text`` as Kubernetes expands a container command word or env value."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                end = text.find(")", i + 2)
                if end != -1:
                    name = text[i + 2:end]
                    out.append(variables[name] if name in variables else text[i:end + 1])
                    i = end + 1
                    continue
        out.append(text[i])
        i += 1
    return "".join(out)


def lws_node_commands(lws: dict, leader_address: str) -> list[dict]:
    """Each pod's command and env, rank 0 (the leader) first, as the LWS controller and the kubelet
    would give them: ``LWS_LEADER_ADDRESS``, ``LWS_GROUP_SIZE`` and ``LWS_WORKER_INDEX`` set, then
    the container's env in order, then the command expanded."""
    template = lws["spec"]["leaderWorkerTemplate"]
    size = template["size"]
    out = []
    for index in range(size):
        pod = template["leaderTemplate"] if index == 0 else template["workerTemplate"]
        [container] = pod["spec"]["containers"]
        variables = {"LWS_LEADER_ADDRESS": leader_address, "LWS_GROUP_SIZE": str(size),
                     "LWS_WORKER_INDEX": str(index)}
        env = {}
        for item in container.get("env", []):
            env[item["name"]] = variables[item["name"]] = k8s_expand(item["value"], variables)
        out.append({"argv": [k8s_expand(w, variables) for w in container["command"]], "env": env})
    return out
