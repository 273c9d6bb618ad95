"""The probe on the simulated host: the simulator's hardware model instead of a measurement.

The simulated host has no torch-distributed GPUs. Its step times come from the simulator's
hardware cost model (``spectui.sim.hardware``), so the probe reads that model, in a separate
``python -c`` process of the host's interpreter (the agent itself never imports the simulator),
and reports the same fields as a measurement, marked as read from the model.

The model gives whole-step times: the all-reduce part of a plain decode step (custom all-reduce
inside CUDA graphs) and of a verify step of ``t`` tokens (NCCL). The probe reports them per
all-reduce (divided by the all-reduces of a forward, see ``allreduces_per_forward``), and the
modelled plain decode step, per-token compute and drafting costs that the prediction needs.

Across nodes (``nnodes`` in the request, from the profile's ``nodes`` or ``--nnodes``) the model is
the multi-node one (``cost_model(..., nnodes=N)``, default preset ``pcie-2x8gpu-100gbe`` as the
simulator's own): every all-reduce is NCCL's, plain decode included, since SGLang builds no custom
all-reduce for a group that spans nodes, and each carries an inter-node part over the NIC, which the
probe reports apart (``inter_node_ms`` beside each latency). A draft forward's extra cost across nodes
is folded into the drafting costs.
"""

from __future__ import annotations

import json
import subprocess
import sys

from .model import ModelConfigError, model_sizes
from ..protocol import AgentError

SCHEMA = "spectui.probe/1"
DEFAULT_PRESET = "pcie-8gpu"
# The simulator's default for --nnodes above 1 (spectui.sim.hardware.DEFAULT_MULTINODE_PRESET).
DEFAULT_MULTINODE_PRESET = "pcie-2x8gpu-100gbe"
ALLREDUCES_PER_LAYER = 2
EXTRA_ALLREDUCES = 1

# The simulator models step times, not layers; the sizes of the models its profiles name come
# from those models' public config.json (Kimi-K2.5 and DeepSeek-V3: hidden_size 7168,
# num_hidden_layers 61; Llama 3.1 8B: 4096, 32).
SIM_MODEL_SIZES = (
    (("kimi", "deepseek-v3", "deepseek-r1"), 7168, 61),
    (("llama-3.1-8b", "llama3-8b", "llama-3-8b"), 4096, 32),
)

# Runs in the host's interpreter, where spectui is importable on a simulated host.
_READ_MODEL = r"""
import json, sys
from spectui.sim import hardware as hw
preset, tp, model, tokens = sys.argv[1], int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
nnodes = int(sys.argv[5]) if len(sys.argv) > 5 else 1
weights_from = "spectui.sim.server.config.weights_gb_for"
try:
    from spectui.sim.server.config import weights_gb_for
    weights = weights_gb_for(model)
except Exception:
    weights, weights_from = hw.REFERENCE_GB_PER_RANK * 8, "the reference deployment"
try:
    cm = hw.cost_model(preset, tp, weights, nnodes=nnodes) if nnodes > 1 else hw.cost_model(preset, tp, weights)
except (ValueError, TypeError) as exc:
    print(json.dumps({"error": str(exc)}))
    sys.exit(0)
p = cm.p
inter = getattr(cm, "inter_node_ms", lambda t: 0.0)
net = getattr(cm.preset, "network", None) if nnodes > 1 else None
out = {
    "preset": preset, "description": cm.preset.description, "tp_size": tp, "nnodes": nnodes,
    "network": net.name if net is not None else None,
    "weights_gb": weights, "weights_from": weights_from,
    "decode_step_ms": cm.decode_ms(1),
    "decode_comm_ms": cm.decode_ms(1) - p.weights_ms - p.token_ms,
    "decode_inter_node_ms": inter(1),
    "verify_comm_ms": dict((str(t), cm.verify_ms(1, t) - p.weights_ms - t * p.token_ms) for t in tokens),
    "verify_inter_node_ms": dict((str(t), inter(t)) for t in tokens),
    "token_ms": p.token_ms,
    # one draft forward of batch 1 with topk k costs draft_ms(1, 0, k), linear in k; across nodes this
    # holds its NCCL and inter-node all-reduces as well
    "draft_step_ms": cm.draft_ms(1, 0, 0), "draft_token_ms": cm.draft_ms(1, 0, 1) - cm.draft_ms(1, 0, 0),
    "tree_draft_ms": cm.ngram_ms(1),
}
print(json.dumps(out))
"""


def sim_model_sizes(model):
    name = (model or "").lower()
    for keys, hidden, layers in SIM_MODEL_SIZES:
        if any(k in name for k in keys):
            return {"model": model, "hidden_size": hidden, "layers": layers, "dtype": "bfloat16",
                    "dtype_bytes": 2, "dtype_assumed": True,
                    "source": "public config.json sizes of this model (the simulator models no layers)"}
    return None


def sim_topology(preset, gpu_source, gpus=None, description=None, nnodes=1, network=None):
    """The simulated host's GPUs (its virtual GPUs' names), linked as the hardware preset's name says; with
    ``nnodes`` above 1, they are one node's, and ``network`` links the nodes."""
    names = []
    if gpu_source is not None:
        try:
            names = [g.get("name") for g in gpu_source.inventory().get("gpus", [])]
        except Exception:
            names = []
    if gpus is None:
        gpus = list(range(len(names)))
    kind = "nvlink" if preset.startswith("nvlink") else ("pcie" if preset.startswith("pcie") else None)
    topology = {
        "available": bool(names), "sources": ["sim"], "gpus": [{"index": i, "name": n} for i, n in enumerate(names)],
        "matrix": None, "p2p": None,
        "message": "the simulated host's GPUs, linked as the hardware model %s says%s"
                   % (preset, " (%s)" % description if description else ""),
        "interconnect": {"gpus": [g for g in gpus if g < len(names)], "kind": kind, "nvlink_links": None,
                         "nvswitch": None, "worst_path": None, "pcie_gen": None, "pcie_width": None, "p2p": None},
    }
    if nnodes > 1:
        topology["interconnect"].update(nodes=nnodes, network=network)
        topology["message"] += "; one of %d nodes%s" % (nnodes, " over %s" % network if network else "")
    return topology


def preset_for(params):
    """The hardware model a probe request names, else the simulator's default for its node count."""
    return params.get("sim_hardware") or (DEFAULT_MULTINODE_PRESET if node_count(params) > 1 else DEFAULT_PRESET)


def node_count(params):
    try:
        return max(1, int(params.get("nnodes") or 1))
    except (TypeError, ValueError):
        raise AgentError("bad_params", "nnodes must be a whole number of nodes, not %r" % (params.get("nnodes"),))


def short_network(name):
    """``100 GbE`` of ``100 GbE (NCCL NET/Socket over TCP)``."""
    return (name or "").split(" (")[0] or None


def spread(world, nnodes, network):
    """``TP16 over 2 nodes, 100 GbE``, or ``TP8`` on one node."""
    text = "TP%d" % world
    if nnodes > 1:
        text += " over %d nodes" % nnodes
        if network:
            text += ", " + network
    return text


def read_hardware_model(python, preset, tp, model, tokens, run=subprocess.run, nnodes=1):
    argv = [python, "-c", _READ_MODEL, preset, str(tp), model or "", json.dumps(tokens), str(nnodes)]
    try:
        r = run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AgentError("no_sim_model", "the simulator's hardware model could not be read with %s: %s"
                         % (python, exc))
    if r.returncode != 0:
        err = r.stderr.decode("utf-8", "replace").strip().splitlines()
        raise AgentError("no_sim_model", "the simulator's hardware model (spectui.sim.hardware) could not be read "
                         "with %s: %s" % (python, err[-1] if err else "exit %d" % r.returncode))
    data = json.loads(r.stdout.decode("utf-8"))
    if "error" in data:
        what = "no such hardware model" if data["error"].startswith("unknown hardware preset") else \
            "no model of this deployment"
        raise AgentError("bad_params", "the simulator has %s: %s" % (what, data["error"]))
    return data


def run(params, gpu_source=None, python=None, run_process=subprocess.run):
    """The probe's result on a simulated host, from the simulator's hardware model."""
    preset = preset_for(params)
    nnodes = node_count(params)
    world = int(params.get("world_size") or 1)
    tokens = sorted(set(int(t) for t in (params.get("tokens") or [1, 2, 4, 8, 16])))
    model_name = params.get("model")
    try:
        model = model_sizes(model_name, params.get("hidden_size"), params.get("layers"), params.get("dtype_bytes"))
    except ModelConfigError:
        model = sim_model_sizes(model_name)
        if model is None:
            raise AgentError("no_model_config", "the simulator knows no layer count for %s: give --hidden-size and "
                             "--layers" % model_name)
    hw = read_hardware_model(python or sys.executable, preset, world, model_name, tokens, run=run_process,
                             nnodes=nnodes)
    n_ar = ALLREDUCES_PER_LAYER * model["layers"] + EXTRA_ALLREDUCES if world > 1 else 0
    network = short_network(hw.get("network"))
    where = spread(world, nnodes, network)
    named = preset if nnodes == 1 else "%s: %s" % (preset, where)

    def per_call(step_ms):
        return step_ms / n_ar if n_ar else 0.0

    sizes = []
    for t in tokens:
        lat = per_call(hw["verify_comm_ms"][str(t)])
        size = {"tokens": t, "bytes": model["hidden_size"] * t * model["dtype_bytes"], "n": None,
                "median_ms": lat, "p99_ms": lat, "min_ms": lat, "mean_ms": lat,
                "halves_median_ms": None, "stable": None, "rank_median_ms": []}
        if nnodes > 1:
            size["inter_node_ms"] = per_call(hw["verify_inter_node_ms"][str(t)])
            size["intra_node_ms"] = lat - size["inter_node_ms"]
        sizes.append(size)
    decode_path = {"tokens": 1, "median_ms": per_call(hw["decode_comm_ms"]),
                   "note": "custom all-reduce inside CUDA graphs, as the model has it"}
    if nnodes > 1:
        decode_path["inter_node_ms"] = per_call(hw["decode_inter_node_ms"])
        decode_path["intra_node_ms"] = decode_path["median_ms"] - decode_path["inter_node_ms"]
        decode_path["note"] = "NCCL, no custom all-reduce across nodes, as the model has it"
    gpus = [int(g) for g in (params.get("gpus") or range(world // nnodes))]
    topology = sim_topology(preset, gpu_source, gpus, hw["description"], nnodes=nnodes, network=network)
    allreduce = {"backend": "model", "device": "sim", "world_size": world, "dtype": model["dtype"],
                 "combine": None, "sizes": sizes, "decode_path": decode_path}
    provenance = {"kind": "sim-hardware-model", "preset": preset, "source": "spectui.sim.hardware",
                  "python": python or sys.executable, "world_size": world, "weights_gb": hw["weights_gb"],
                  "weights_from": hw["weights_from"],
                  "message": "read from the simulator's hardware model (%s), not measured" % named}
    if nnodes > 1:
        per_node = world // nnodes
        allreduce.update(nnodes=nnodes, ranks_per_node=per_node, network=hw.get("network"))
        provenance.update(nnodes=nnodes, ranks_per_node=per_node, network=hw.get("network"),
                          spread="%s (simulated)" % where)
    return {
        "schema": SCHEMA,
        "provenance": provenance,
        "topology": topology,
        "model": model,
        "allreduce": allreduce,
        "modelled": {"decode_step_ms": hw["decode_step_ms"], "token_ms": hw["token_ms"],
                     "draft_step_ms": hw["draft_step_ms"], "draft_token_ms": hw["draft_token_ms"],
                     "tree_draft_ms": hw["tree_draft_ms"],
                     "source": "the simulator's hardware model (%s)" % named},
        "message": None,
    }
