"""From launch flags to the resolved configuration, as SGLang resolves its server args.

The speculative args follow the imitated release's own rules (``speculative_args``); the rest is
the simulator's: memory, context length and cuda graph sizes for its cost model.

Several nodes (``--nnodes``, ``--node-rank``, ``--dist-init-addr``): ``--tp-size`` is the total over
the nodes, each runs ``tp_size / nnodes`` ranks, and SGLang's own checks apply (``tp_size must be
divisible by number of nodes``: sglang 0.5.23 wheel, sglang/srt/arg_groups/validation_hook.py:179;
0.5.6 server_args.py:3975; no data-parallel replicas across nodes, validation_hook.py:199 and 0.5.6
server_args.py:3985). Without ``--dist-init-addr`` each node meets at a port of its own host, as
SGLang's ``tcp://{host}:{nccl_port}`` (sglang/srt/distributed/bootstrap.py:233-246), so the nodes
never meet. The hardware preset must have a network between nodes; unset, it is
``pcie-2x8gpu-100gbe`` on several nodes and ``pcie-8gpu`` on one.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from spectui.sim.dist import DistAddrError, parse_dist_init_addr
from spectui.sim.engine.drafter import default_agreement
from spectui.sim.engine.ngram import ngram_settings_problem
from spectui.sim.hardware import DEFAULT_MULTINODE_PRESET, DEFAULT_PRESET, PRESETS, multinode_presets
from spectui.sim.engine.speculation import EAGLE_FAMILY, SpecConfig
from spectui.sim.server.speculative_args import ResolvedSpeculative, SpeculativeArgsError, resolve_speculative

REFERENCE_WEIGHTS_GB = 600.0
KV_KIB_PER_TOKEN = 160.0  # whole model, split over the TP ranks
CUDA_CONTEXT_MIB = 520.0
GRAPH_MIB = 1300.0
DEFAULT_MEM_FRACTION = 0.88


class ConfigError(Exception):
    """A launch configuration SGLang would refuse (exit 1 after a traceback-free message)."""


def weights_gb_for(model_path: str) -> float:
    """Total weight size guessed from the model path (override with --sim-weights-gb)."""
    name = model_path.lower()
    if any(k in name for k in ("kimi", "deepseek-v3", "deepseek-r1", "deepseek-v2")):
        return REFERENCE_WEIGHTS_GB
    m = re.search(r"(\d+(?:\.\d+)?)b(?![a-z])", name)
    if m:
        return max(1.0, float(m.group(1)) * 2.0)
    return 16.0


def architecture_for(model_path: str) -> str:
    name = model_path.lower()
    if "kimi" in name or "deepseek" in name:
        return "DeepseekV3ForCausalLM"
    if "qwen" in name:
        return "Qwen3MoeForCausalLM" if re.search(r"a\d+b", name) else "Qwen3ForCausalLM"
    if "mistral" in name or "mixtral" in name:
        return "MistralForCausalLM"
    if "glm" in name:
        return "Glm4MoeForCausalLM"
    if "gpt-oss" in name:
        return "GptOssForCausalLM"
    return "LlamaForCausalLM"


@dataclass
class ServerConfig:
    args: argparse.Namespace
    era: str
    model_path: str
    served_model_name: str
    tp_size: int
    weights_gb: float
    draft_weights_gb: float
    architecture: str
    mem_fraction_static: float
    max_running_requests: int
    chunked_prefill_size: int
    context_len: int
    cuda_graph_max_bs: int
    spec: SpecConfig
    speculative: ResolvedSpeculative = field(default_factory=ResolvedSpeculative)
    warnings: List[str] = field(default_factory=list)
    hardware: str = DEFAULT_PRESET
    nnodes: int = 1
    node_rank: int = 0
    dist_host: Optional[str] = None  # where the nodes meet (node 0 listens there)
    dist_port: Optional[int] = None
    dist_timeout_s: float = 600.0

    @property
    def tp_per_node(self) -> int:
        return self.tp_size // self.nnodes

    @property
    def first_rank(self) -> int:
        """The global TP rank of this node's first rank."""
        return self.node_rank * self.tp_per_node

    def server_args(self) -> Dict[str, Any]:
        """The resolved server args, as /server_info lists them at top level."""
        a = vars(self.args)
        filled = set(a.get("sim_filled", ()))
        out = {k: v for k, v in a.items() if not k.startswith("sim_") and k not in filled}
        if self.era == "0.5.23":  # --config only names a file of flags, no field (sglang 0.5.23 wheel,
            out.pop("config", None)  # sglang/srt/server_args.py:400-405 and 683-689)
        sp = self.speculative
        out.update(
            model_path=self.model_path,
            tokenizer_path=self.args.tokenizer_path or self.model_path,
            served_model_name=self.served_model_name,
            tp_size=self.tp_size,
            mem_fraction_static=self.mem_fraction_static,
            max_running_requests=self.max_running_requests,
            chunked_prefill_size=self.chunked_prefill_size,
            context_length=self.args.context_length,
            speculative_algorithm=sp.algorithm,
            speculative_draft_model_path=sp.draft_model_path,
            speculative_num_steps=sp.num_steps,
            speculative_eagle_topk=sp.eagle_topk,
            speculative_num_draft_tokens=sp.num_draft_tokens,
            random_seed=self.args.random_seed if self.args.random_seed is not None else self.args.sim_seed,
        )
        if sp.enable_mixed_chunk is not None:
            out["enable_mixed_chunk"] = sp.enable_mixed_chunk
        if "speculative_adaptive" in a:  # 0.5.23: False once SGLang turned it off (speculative_args)
            out["speculative_adaptive"] = sp.adaptive
        if "speculative_draft_model_revision" not in filled:
            out["speculative_draft_model_revision"] = sp.draft_model_revision
        if "cuda_graph_max_bs" not in filled:
            out["cuda_graph_max_bs"] = self.cuda_graph_max_bs
        return out


def _free_port(host: str) -> int:
    with socket.socket() as s:
        try:
            s.bind((host, 0))
        except OSError:
            s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _nodes(ns: argparse.Namespace) -> Dict[str, Any]:
    """The multi-node settings, checked as SGLang checks them."""
    nnodes, rank = int(ns.nnodes or 1), int(ns.node_rank or 0)
    if nnodes < 1:
        raise ConfigError("nnodes must be at least 1, got %d" % nnodes)
    if not 0 <= rank < nnodes:
        raise ConfigError("node_rank must be in [0, nnodes), got node_rank=%d with nnodes=%d" % (rank, nnodes))
    if (ns.tp_size * (ns.pp_size or 1)) % nnodes:
        raise ConfigError("tp_size must be divisible by number of nodes")
    if (ns.dp_size or 1) > 1 and nnodes != 1:
        if ns.sim_log_format == "0.5.23":
            raise ConfigError("multi-node data-parallel replicas are not supported; use attention DP "
                              "(--attn-dp-size) across nodes")
        if not getattr(ns, "enable_dp_attention", False):
            raise ConfigError("multi-node data parallel is not supported unless dp attention!")
    hardware = ns.sim_hardware or (DEFAULT_MULTINODE_PRESET if nnodes > 1 else DEFAULT_PRESET)
    if nnodes > 1 and PRESETS[hardware].network is None:
        raise ConfigError("hardware preset %s has no network between nodes; choose %s for --nnodes %d"
                          % (hardware, " or ".join(multinode_presets()), nnodes))
    if ns.dist_init_addr:
        try:
            host, port = parse_dist_init_addr(ns.dist_init_addr)
        except DistAddrError as exc:
            raise ConfigError(str(exc))
    else:
        host = ns.host or "127.0.0.1"
        port = _free_port(host) if nnodes > 1 else None
    timeout = float(ns.dist_timeout) if ns.dist_timeout is not None else float(ns.sim_dist_timeout)
    if not timeout > 0:
        raise ConfigError("timeout must be positive")
    return dict(hardware=hardware, nnodes=nnodes, node_rank=rank, dist_host=host, dist_port=port,
                dist_timeout_s=timeout)


def resolve(ns: argparse.Namespace) -> ServerConfig:
    warnings: List[str] = []
    if ns.tp_size < 1:
        raise ConfigError("tp_size must be at least 1, got %d" % ns.tp_size)
    nodes = _nodes(ns)
    if ns.mem_fraction_static is not None and not 0.0 < ns.mem_fraction_static < 1.0:
        raise ConfigError("mem_fraction_static must be in (0, 1), got %s" % ns.mem_fraction_static)
    if ns.decode_log_interval is not None and ns.decode_log_interval < 1:
        raise ConfigError("decode_log_interval must be at least 1, got %d" % ns.decode_log_interval)
    weights = ns.sim_weights_gb if ns.sim_weights_gb is not None else weights_gb_for(ns.model_path)
    arch = architecture_for(ns.model_path)
    try:
        sp = resolve_speculative(ns, ns.sim_log_format, arch)
    except SpeculativeArgsError as e:
        raise ConfigError(str(e))
    warnings.extend(sp.warnings)
    algo = sp.algorithm or "NONE"
    spec = SpecConfig(algorithm=algo, era=ns.sim_log_format)
    draft_gb = 0.0
    if algo in EAGLE_FAMILY:
        steps, topk, ntok = sp.num_steps, sp.eagle_topk, sp.num_draft_tokens
        if steps < 1 or ntok < 2:
            raise ConfigError("speculative_num_steps must be >= 1 and speculative_num_draft_tokens >= 2")
        agreement = ns.sim_draft_agreement
        if agreement is None:
            agreement = default_agreement(algo, ns.model_path, sp.draft_model_path)
        spec.num_steps, spec.eagle_topk, spec.num_draft_tokens = steps, topk, ntok
        spec.agreement, spec.decay = agreement, ns.sim_draft_decay
        spec.adaptive_slots = sp.adaptive_slots
        draft_gb = weights * (0.10 if algo == "STANDALONE" else 0.015)
    elif algo == "NGRAM":
        spec.ngram_min_bfs_breadth = ns.speculative_ngram_min_bfs_breadth
        spec.ngram_max_bfs_breadth = ns.speculative_ngram_max_bfs_breadth
        spec.ngram_match_type = ns.speculative_ngram_match_type
        spec.ngram_max_trie_depth = ns.speculative_ngram_max_trie_depth
        spec.ngram_capacity = ns.speculative_ngram_capacity
        spec.ngram_min_match_window = ns.speculative_ngram_min_match_window_size or 1
        spec.ngram_max_match_window = ns.speculative_ngram_max_match_window_size or 0
        spec.eagle_topk = sp.eagle_topk
        problem = ngram_settings_problem(spec.ngram_max_trie_depth, spec.ngram_min_bfs_breadth,
                                         spec.ngram_max_bfs_breadth, sp.num_draft_tokens, spec.ngram_capacity)
        if problem:  # the corpus refuses them when the NGRAM worker starts
            raise ConfigError(problem)
        spec.num_draft_tokens = sp.num_draft_tokens
        spec.num_steps = sp.num_steps or 0  # the NGRAM worker drafts from its trie: no draft steps
    max_running = sp.max_running_requests
    if max_running is None:
        max_running = 1024
    if ns.sim_cuda_graph_disabled:
        cuda_graph_max_bs = 0
    else:
        cuda_graph_max_bs = ns.sim_cuda_graph_max_bs or (max(ns.sim_cuda_graph_bs) if ns.sim_cuda_graph_bs else 256)
    return ServerConfig(
        args=ns,
        era=ns.sim_log_format,
        model_path=ns.model_path,
        served_model_name=ns.served_model_name or ns.model_path,
        tp_size=ns.tp_size,
        weights_gb=weights,
        draft_weights_gb=draft_gb,
        architecture=arch,
        mem_fraction_static=ns.mem_fraction_static if ns.mem_fraction_static is not None else DEFAULT_MEM_FRACTION,
        max_running_requests=max(1, max_running),
        chunked_prefill_size=ns.chunked_prefill_size or 8192,
        context_len=ns.context_length or (131072 if weights >= 100 else 32768),
        cuda_graph_max_bs=cuda_graph_max_bs,
        spec=spec,
        speculative=sp,
        warnings=warnings,
        **nodes,
    )


def state_dir_of(ns: argparse.Namespace) -> str:
    return os.path.expanduser(ns.sim_state)
