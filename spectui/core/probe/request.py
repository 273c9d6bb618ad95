"""A probe request: what the agent's ``probe.run`` needs, from a profile and options.

A multi-node profile (``nodes:``, or a node's own profile with ``--nnodes N``) asks for a probe of its
``--tp-size`` ranks (the total) over ``nnodes`` nodes: on the simulated host the multi-node hardware
model (the profile's ``sim.hardware``, else ``pcie-2x8gpu-100gbe`` as the simulator's default); on a real
host every node's agent would start its own ranks (``nnodes``, ``node_rank``, ``dist_init_addr``, see
docs/probe.md), which the console does not do yet.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from spectui.core.probe.predict import DEFAULT_TOKENS, NGRAM_DEFAULT_DRAFT_TOKENS
from spectui.core.profiles import Profile
from spectui.core.servers import profile_gpus

TP_KEYS = ("tp-size", "tp", "tensor-parallel-size")
HUB_ENV = ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")
DEFAULT_SIM_HARDWARE = "pcie-8gpu"
# The simulator's default for --nnodes above 1 (spectui.sim.hardware.DEFAULT_MULTINODE_PRESET).
DEFAULT_SIM_HARDWARE_MULTINODE = "pcie-2x8gpu-100gbe"
NNODES_KEYS = ("nnodes",)
# Per size: warmup + iterations, capped in time.
DEFAULT_ITERS = 200
DEFAULT_WARMUP = 20
DEFAULT_MAX_SECONDS = 10.0


@dataclass
class ProbeOptions:
    """Command-line choices; None means "from the profile" or the default."""

    backend: str = "auto"             # auto | nccl | gloo
    device: str = "auto"              # auto | cuda | cpu
    ranks: int | None = None          # default: the profile's tensor-parallel size
    model: str | None = None          # default: the profile's model
    hidden_size: int | None = None
    layers: int | None = None
    dtype_bytes: int | None = None
    tokens: list[int] = field(default_factory=lambda: list(DEFAULT_TOKENS))
    iters: int = DEFAULT_ITERS
    warmup: int = DEFAULT_WARMUP
    max_seconds: float = DEFAULT_MAX_SECONDS
    python: str | None = None         # the interpreter with torch; default: the profile's, else the agent's
    sim_hardware: str | None = None   # the simulated host's hardware model; default: the profile's sim.hardware
    timeout_s: float | None = None
    nnodes: int | None = None         # nodes the ranks span; default: the profile's (its nodes, or --nnodes)


def _int_arg(profile: Profile, keys) -> int | None:
    """The first of ``keys`` the profile's args give as a whole number (at least 1); None when none does."""
    for key in keys:
        value = profile.args.get(key)
        if value not in (None, False, True):
            try:
                return max(1, int(value))
            except (TypeError, ValueError):
                pass
    return None


def tp_size(profile: Profile | None) -> int:
    if profile is None:
        return 1
    tp = _int_arg(profile, TP_KEYS)
    if tp is not None:
        return tp
    return len(profile.gpus) if profile.gpus else 1


def node_count(profile: Profile | None) -> int:
    """Nodes the profile's server spans: its ``nodes``, else an ``--nnodes`` in its args (a node's own
    profile), else 1."""
    if profile is None:
        return 1
    if profile.nodes:
        return len(profile.nodes)
    return _int_arg(profile, NNODES_KEYS) or 1


def verify_tokens(profile: Profile | None) -> int | None:
    """Positions one verify step of the profile checks (SGLang's num-draft-tokens), if speculative."""
    if profile is None or not profile.algorithm:
        return None
    s = profile.speculative_settings()
    if (s.get("topk") in (None, 1)) and s.get("num_steps") is not None and profile.algorithm.upper() != "NGRAM":
        return int(s["num_steps"]) + 1
    if s.get("draft_tokens") is not None:
        return int(s["draft_tokens"])
    return NGRAM_DEFAULT_DRAFT_TOKENS if profile.algorithm.upper() == "NGRAM" else None


def timeout_for(opts: ProbeOptions, n_sizes: int) -> float:
    """Start-up (torch import, rendezvous) plus each size's cap, with room to spare."""
    return 180.0 + n_sizes * (opts.max_seconds * 2.0 + 10.0)


def probe_params(profile: Profile | None, opts: ProbeOptions, *, agent_python: str | None = None,
                 gpus: list[int] | None = None) -> dict:
    """The ``probe.run`` parameters."""
    tokens = set(int(t) for t in opts.tokens)
    n = verify_tokens(profile)
    if n:
        tokens.add(n)
    world = opts.ranks or tp_size(profile)
    nnodes = opts.nnodes or node_count(profile)
    env = {}
    if profile is not None:
        env = {k: v for k, v in profile.env.items() if k in HUB_ENV}
    sim_hw = opts.sim_hardware or (profile.sim.get("hardware") if profile is not None else None) \
        or (DEFAULT_SIM_HARDWARE_MULTINODE if nnodes > 1 else DEFAULT_SIM_HARDWARE)
    ordered = sorted(tokens)
    if gpus is None and profile is not None:
        # each node runs tp-size / nnodes ranks on the same GPUs
        gpus = profile_gpus(profile) if nnodes == 1 or profile.gpus is not None else list(range(world // nnodes))
    params = {
        "python": opts.python or (profile.python if profile is not None else None) or agent_python,
        "backend": opts.backend,
        "device": opts.device,
        "world_size": world,
        "gpus": list(gpus) if gpus is not None else None,
        "model": opts.model or (profile.model if profile is not None else None),
        "hidden_size": opts.hidden_size,
        "layers": opts.layers,
        "dtype_bytes": opts.dtype_bytes,
        "tokens": ordered,
        "iters": opts.iters,
        "warmup": opts.warmup,
        "max_seconds": opts.max_seconds,
        "env": env,
        "sim_hardware": sim_hw,
        "timeout_s": opts.timeout_s or timeout_for(opts, len(ordered)),
    }
    if nnodes > 1:
        params["nnodes"] = nnodes
    return params
