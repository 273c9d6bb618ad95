"""A profile as text a scheduler runs: a shell script, a Slurm batch script, a Kubernetes LeaderWorkerSet.

spectui does not replace the schedulers clusters already use: ``spectui profiles render`` hands a
profile to them. Every target runs the same argv as ``build_argv``; a multi-node profile adds
``--nnodes``, ``--node-rank`` and ``--dist-init-addr`` per node (``multinode``), filled in by the
scheduler where it knows them:

- ``shell``: one command per node, with the node's rank and rank 0's address written out;
- ``slurm``: an ``sbatch`` script whose one ``srun`` starts a task per node; each task reads its
  rank from ``SLURM_NODEID`` and the first host of ``SLURM_JOB_NODELIST`` is rank 0, as in
  SGLang's own Slurm example (https://github.com/sgl-project/sglang/blob/main/docs/references/multi_node_deployment/multi_node.md);
- ``lws``: a LeaderWorkerSet (leader and worker templates) and a Service for the leader, the
  three flags taken from ``$(LWS_LEADER_ADDRESS)``, ``$(LWS_WORKER_INDEX)`` and ``$(LWS_GROUP_SIZE)``,
  as in SGLang's own LWS example (https://github.com/sgl-project/sglang/blob/main/docs/references/deploy_on_k8s.md,
  and https://github.com/kubernetes-sigs/lws/tree/main/docs/examples/sglang).

Values are never pasted into a shell unquoted: each word is single-quoted, and only the ``${VAR}``
references a profile may hold are left for the node's shell to expand (as the agent expands them
on a host). In Kubernetes, ``${VAR}`` becomes ``$(VAR)`` and every other ``$`` is doubled, so a
value reaches SGLang as written.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from spectui.core.profiles.argv import build_argv, build_env
from spectui.core.profiles.model import Profile
from spectui.core.profiles.multinode import (
    dist_init_addr,
    dist_init_port,
    node_count,
    node_flag_words,
    ranks_per_node,
)

#: A ``${VAR}`` reference in a profile value, expanded from the host's environment.
VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: The image of the Kubernetes containers unless ``image`` says otherwise (SGLang's published image).
DEFAULT_IMAGE = "lmsysorg/sglang:latest"
#: The interpreter inside that image.
CONTAINER_PYTHON = "python3"
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
#: The variable the Slurm script holds rank 0's meeting address in.
SLURM_ADDR_VAR = "SPECTUI_DIST_INIT_ADDR"
TARGETS = ("shell", "slurm", "lws")


class RenderError(ValueError):
    """The profile cannot be rendered for that target; ``str()`` is one sentence saying why."""


# -- quoting -------------------------------------------------------------------------------------
def shell_word(text: str) -> str:
    """``text`` as one shell word: literal parts single-quoted, ``${VAR}`` left for the shell."""
    parts: list[str] = []
    pos = 0
    for m in VAR_RE.finditer(text):
        if m.start() > pos:
            parts.append(shlex.quote(text[pos:m.start()]))
        parts.append('"${%s}"' % m.group(1))
        pos = m.end()
    if pos < len(text) or not parts:
        parts.append(shlex.quote(text[pos:]))
    return "".join(parts)


def k8s_value(text: str) -> str:
    """``text`` for a Kubernetes command or env value: ``${VAR}`` becomes ``$(VAR)`` and every other
    ``$`` is doubled (Kubernetes reads ``$$`` as one ``$`` and expands ``$(VAR)``)."""
    out: list[str] = []
    pos = 0
    for m in VAR_RE.finditer(text):
        out.append(text[pos:m.start()].replace("$", "$$"))
        out.append(f"$({m.group(1)})")
        pos = m.end()
    out.append(text[pos:].replace("$", "$$"))
    return "".join(out)


def option_groups(words: list[str]) -> list[list[str]]:
    """``words`` cut before each ``--option``: what precedes the first option, then each option with its values."""
    groups: list[list[str]] = []
    for word in words:
        if word.startswith("--") or not groups:
            groups.append([word])
        else:
            groups[-1].append(word)
    return groups


def command_lines(words: list[str], indent: str = "  ") -> str:
    """Shell words, one option with its values per line, joined by ``\\`` continuations."""
    return (" \\\n" + indent).join(" ".join(g) for g in option_groups(words))


def _server_words(argv: list[str]) -> list[str]:
    return [shell_word(w) for w in argv]


def _env_words(env: dict[str, str]) -> list[str]:
    return [f"{name}={shell_word(value)}" for name, value in env.items()]


def _header(profile: Profile, what: str) -> list[str]:
    source = f" ({Path(profile.source).name})" if profile.source else ""
    n = node_count(profile)
    nodes = f", {n} nodes" if n > 1 else ""
    return [f"# {what} for spectui profile '{profile.name}'{source}{nodes}, written by 'spectui profiles render'."]


# -- shell ---------------------------------------------------------------------------------------
def render_shell(profile: Profile) -> str:
    """A shell script: the command of each node (one command for a single-host profile)."""
    lines = ["#!/bin/sh", *_header(profile, "Launch commands")]
    env = _env_words(build_env(profile))
    argv = build_argv(profile, simulated=False)
    if not profile.nodes:
        lines.append(command_lines(env + _server_words(argv)))
        return "\n".join(lines) + "\n"
    lines.append("# Run each command on its node; the nodes wait for each other at rank 0's "
                 f"{dist_init_addr(profile)}.")
    n = len(profile.nodes)
    for rank, node in enumerate(profile.nodes):
        lines.append(f"# node {rank}: {node.host}")
        words = env + _server_words(argv + node_flag_words(n, rank, dist_init_addr(profile)))
        lines.append(command_lines(words))
    return "\n".join(lines) + "\n"


# -- Slurm ---------------------------------------------------------------------------------------
def render_slurm(profile: Profile) -> str:
    """An ``sbatch`` script: one task per node, rank from ``SLURM_NODEID``, rank 0 the first host.

    The server's words are quoted once, in the batch script; each task's own ``bash -c`` only
    appends its rank (``SLURM_NODEID`` differs per task, so the batch shell cannot expand it)."""
    n = node_count(profile)
    gpus = ranks_per_node(profile)
    lines = ["#!/bin/bash", *_header(profile, "Slurm batch script"),
             "# Submit with: sbatch FILE. GPUs come from the allocation (--gres), not the profile's 'gpus'.",
             f"#SBATCH --job-name={profile.name}",
             f"#SBATCH --nodes={n}",
             "#SBATCH --ntasks-per-node=1"]
    if gpus:
        lines.append(f"#SBATCH --gres=gpu:{gpus}")
    lines.append("set -euo pipefail")
    env = {k: v for k, v in build_env(profile).items() if k != "CUDA_VISIBLE_DEVICES"}
    lines += [f"export {word}" for word in _env_words(env)]
    words = [f"srun --nodes={n} --ntasks={n} --ntasks-per-node=1"]
    if n > 1:
        lines += ["# Rank 0 is the first node of the allocation; SLURM_NODEID numbers the nodes from 0.",
                  'head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)']
        words.append(shlex.join(["bash", "-c", 'exec "$@" --node-rank "$SLURM_NODEID"', "sglang"]))
    words += _server_words(build_argv(profile, simulated=False))
    if n > 1:
        words += ["--nnodes", str(n), "--dist-init-addr", f'"$head_node:{dist_init_port(profile)}"']
    lines.append(command_lines(words))
    return "\n".join(lines) + "\n"


# -- Kubernetes LeaderWorkerSet ------------------------------------------------------------------
def k8s_name(name: str) -> str:
    """A profile name as a Kubernetes object name (lower case, letters, digits and '-', at most 40)."""
    text = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    if not text or not text[0].isalpha():
        text = "sglang-" + text
    return text[:40].rstrip("-")


def _container(profile: Profile, *, role: str, image: str, host: str) -> dict[str, Any]:
    argv = build_argv(profile, simulated=False, python=CONTAINER_PYTHON)
    argv = _with_host(argv, profile, host)
    command = [k8s_value(w) for w in argv]
    if profile.nodes:
        command += node_flag_words("$(LWS_GROUP_SIZE)", "$(LWS_WORKER_INDEX)",
                                   f"$(LWS_LEADER_ADDRESS):{dist_init_port(profile)}")
    container: dict[str, Any] = {"name": f"sglang-{role}", "image": image, "command": command}
    env = {k: v for k, v in build_env(profile).items() if k != "CUDA_VISIBLE_DEVICES"}
    if env:
        container["env"] = [{"name": k, "value": k8s_value(v)} for k, v in env.items()]
    gpus = ranks_per_node(profile)
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    if role == "leader":
        container["ports"] = [{"containerPort": profile.port}]
        container["readinessProbe"] = {"tcpSocket": {"port": profile.port}, "initialDelaySeconds": 15,
                                       "periodSeconds": 10}
    container["volumeMounts"] = [{"mountPath": "/dev/shm", "name": "dshm"}]
    return container


def _with_host(argv: list[str], profile: Profile, host: str) -> list[str]:
    """``argv`` with the value of ``--host`` replaced by ``host``."""
    out = list(argv)
    i = out.index("--host")
    out[i + 1] = host
    return out


def _pod(profile: Profile, role: str, image: str, host: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"role": role}},
            "spec": {"containers": [_container(profile, role=role, image=image, host=host)],
                     "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]}}


def render_lws(profile: Profile, *, image: str = DEFAULT_IMAGE) -> str:
    """A LeaderWorkerSet of ``len(nodes)`` pods (leader = rank 0) and a Service for the leader's port."""
    name = k8s_name(profile.name)
    # A pod is reached on its own address: a server bound to loopback would be unreachable.
    host = "0.0.0.0" if profile.host in LOOPBACK_HOSTS else profile.host
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {
                "size": node_count(profile),
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": _pod(profile, "leader", image, host),
                "workerTemplate": _pod(profile, "worker", image, host),
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name}-leader"},
        "spec": {"selector": {"leaderworkerset.sigs.k8s.io/name": name, "role": "leader"},
                 "ports": [{"protocol": "TCP", "port": profile.port, "targetPort": profile.port}]},
    }
    notes = ["# Apply with: kubectl apply -f FILE (needs the LeaderWorkerSet controller).",
             f"# The containers run {CONTAINER_PYTHON} from the image {image}; GPUs come from the "
             "nvidia.com/gpu limit, not the profile's 'gpus'."]
    if host != profile.host:
        notes.append(f"# The server listens on {host}, not the profile's {profile.host}: a pod is reached on its own "
                     "address.")
    body = yaml.safe_dump_all([lws, service], sort_keys=False, default_flow_style=False, width=1000)
    return "\n".join(_header(profile, "Kubernetes LeaderWorkerSet") + notes) + "\n" + body


RENDERERS: dict[str, Callable[..., str]] = {"shell": render_shell, "slurm": render_slurm, "lws": render_lws}


def render(profile: Profile, target: str, *, image: str | None = None) -> str:
    """``profile`` rendered for ``target`` (one of ``TARGETS``)."""
    if target not in RENDERERS:
        raise RenderError(f"cannot render for '{target}'; choose one of {', '.join(TARGETS)}")
    if target == "lws":
        return render_lws(profile, image=image or DEFAULT_IMAGE)
    if image:
        raise RenderError("--image applies only to --for lws (Kubernetes runs containers; shell and Slurm do not)")
    return RENDERERS[target](profile)

