"""A probe request: what the agent's ``probe.run`` needs, from a profile and options."""

from __future__ import annotations

from dataclasses import dataclass, field

from spectui.core.probe.predict import DEFAULT_TOKENS, NGRAM_DEFAULT_DRAFT_TOKENS
from spectui.core.profiles import Profile
from spectui.core.servers import profile_gpus

TP_KEYS = ("tp-size", "tp", "tensor-parallel-size")
HUB_ENV = ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")
DEFAULT_SIM_HARDWARE = "pcie-8gpu"
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


def tp_size(profile: Profile | None) -> int:
    if profile is None:
        return 1
    for key in TP_KEYS:
        value = profile.args.get(key)
        if value not in (None, False, True):
            try:
                return max(1, int(value))
            except (TypeError, ValueError):
                pass
    return len(profile.gpus) if profile.gpus else 1


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
    env = {}
    if profile is not None:
        env = {k: v for k, v in profile.env.items() if k in HUB_ENV}
    sim_hw = opts.sim_hardware or (profile.sim.get("hardware") if profile is not None else None) \
        or DEFAULT_SIM_HARDWARE
    ordered = sorted(tokens)
    if gpus is None and profile is not None:
        gpus = profile_gpus(profile)
    return {
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
