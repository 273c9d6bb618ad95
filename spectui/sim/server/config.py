"""From launch flags to the resolved configuration, as SGLang resolves its server args.

Speculative defaults follow SGLang: an EAGLE-family drafter without ``--speculative-num-steps``
gets (3 steps, top-k 1, 4 draft tokens); top-k 1 forces ``num_draft_tokens = num_steps + 1``;
NGRAM gets 12 draft tokens, top-k = ``--speculative-ngram-max-bfs-breadth`` and at most 48
running requests unless told otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List

from spectui.sim.engine.drafter import default_agreement
from spectui.sim.engine.speculation import EAGLE_FAMILY, SpecConfig
from spectui.sim.server.cli import SUPPORTED_ALGORITHMS

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
    warnings: List[str] = field(default_factory=list)

    def server_args(self) -> Dict[str, Any]:
        """The resolved server args, as /server_info lists them at top level."""
        a = vars(self.args)
        out = {k: v for k, v in a.items() if not k.startswith("sim_")}
        spec = self.spec
        out.update(
            model_path=self.model_path,
            tokenizer_path=self.args.tokenizer_path or self.model_path,
            served_model_name=self.served_model_name,
            tp_size=self.tp_size,
            mem_fraction_static=self.mem_fraction_static,
            max_running_requests=self.max_running_requests,
            chunked_prefill_size=self.chunked_prefill_size,
            context_length=self.args.context_length,
            cuda_graph_max_bs=self.cuda_graph_max_bs,
            speculative_algorithm=spec.algorithm if spec.enabled else None,
            speculative_num_steps=spec.num_steps if spec.enabled else None,
            speculative_eagle_topk=spec.eagle_topk if spec.enabled else None,
            speculative_num_draft_tokens=spec.num_draft_tokens if spec.enabled else None,
            random_seed=self.args.random_seed if self.args.random_seed is not None else self.args.sim_seed,
        )
        return out


def resolve(ns: argparse.Namespace) -> ServerConfig:
    warnings: List[str] = []
    if ns.tp_size < 1:
        raise ConfigError("tp_size must be at least 1, got %d" % ns.tp_size)
    if ns.mem_fraction_static is not None and not 0.0 < ns.mem_fraction_static < 1.0:
        raise ConfigError("mem_fraction_static must be in (0, 1), got %s" % ns.mem_fraction_static)
    if ns.decode_log_interval is not None and ns.decode_log_interval < 1:
        raise ConfigError("decode_log_interval must be at least 1, got %d" % ns.decode_log_interval)
    weights = ns.sim_weights_gb if ns.sim_weights_gb is not None else weights_gb_for(ns.model_path)
    algo = (ns.speculative_algorithm or "").upper() or "NONE"
    if algo != "NONE" and algo not in SUPPORTED_ALGORITHMS:
        raise ConfigError("Unknown speculative algorithm name: %s" % ns.speculative_algorithm)
    spec = SpecConfig(algorithm=algo, era=ns.sim_log_format)
    draft_gb = 0.0
    max_running = ns.max_running_requests
    if algo in EAGLE_FAMILY:
        if algo in ("EAGLE", "EAGLE3", "STANDALONE") and not ns.speculative_draft_model_path:
            raise ConfigError("speculative_draft_model_path is required for %s speculative decoding." % algo)
        steps, topk, ntok = ns.speculative_num_steps, ns.speculative_eagle_topk, ns.speculative_num_draft_tokens
        if steps is None:
            if topk is not None or ntok is not None:
                raise ConfigError(
                    "Please set --speculative-num-steps together with --speculative-eagle-topk and "
                    "--speculative-num-draft-tokens (or none of them)."
                )
            steps, topk, ntok = 3, 1, 4
        topk = topk or 1
        if ntok is None:
            ntok = steps + 1 if topk == 1 else min(steps * topk, 64) + 1
        if topk == 1 and ntok != steps + 1:
            warnings.append("speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1")
            ntok = steps + 1
        if steps < 1 or ntok < 2:
            raise ConfigError("speculative_num_steps must be >= 1 and speculative_num_draft_tokens >= 2")
        agreement = ns.sim_draft_agreement
        if agreement is None:
            agreement = default_agreement(algo, ns.model_path, ns.speculative_draft_model_path)
        spec.num_steps, spec.eagle_topk, spec.num_draft_tokens = steps, topk, ntok
        spec.agreement, spec.decay = agreement, ns.sim_draft_decay
        draft_gb = weights * (0.10 if algo == "STANDALONE" else 0.015)
        if max_running is None:
            max_running = 48
            warnings.append("Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests.")
    elif algo == "NGRAM":
        if ns.sim_log_format == "0.4":
            raise ConfigError("NGRAM speculative decoding is not available in this release.")
        spec.ngram_min_bfs_breadth = ns.speculative_ngram_min_bfs_breadth
        spec.ngram_max_bfs_breadth = ns.speculative_ngram_max_bfs_breadth
        spec.ngram_match_type = ns.speculative_ngram_match_type
        spec.ngram_max_trie_depth = ns.speculative_ngram_max_trie_depth
        spec.ngram_capacity = ns.speculative_ngram_capacity
        spec.ngram_min_match_window = getattr(ns, "speculative_ngram_min_match_window_size", 1) or 1
        spec.ngram_max_match_window = getattr(ns, "speculative_ngram_max_match_window_size", 0) or 0
        spec.eagle_topk = ns.speculative_ngram_max_bfs_breadth
        ntok = ns.speculative_num_draft_tokens
        if ntok is None:
            ntok = 12
            warnings.append("speculative_num_draft_tokens is set to 12 by default for ngram speculative decoding. "
                            "You can override this by explicitly setting --speculative-num-draft-tokens.")
        if ntok < 2:
            raise ConfigError("speculative_num_draft_tokens must be >= 2 for ngram speculative decoding")
        spec.num_draft_tokens = ntok
        spec.num_steps = ns.speculative_num_steps or max(1, ntok // max(1, spec.eagle_topk))
        if max_running is None:
            max_running = 48
            warnings.append("Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests.")
    if max_running is None:
        max_running = 1024
    cuda_graph_max_bs = 0 if ns.disable_cuda_graph else (ns.cuda_graph_max_bs or (max(ns.cuda_graph_bs) if ns.cuda_graph_bs else 256))
    return ServerConfig(
        args=ns,
        era=ns.sim_log_format,
        model_path=ns.model_path,
        served_model_name=ns.served_model_name or ns.model_path,
        tp_size=ns.tp_size,
        weights_gb=weights,
        draft_weights_gb=draft_gb,
        architecture=architecture_for(ns.model_path),
        mem_fraction_static=ns.mem_fraction_static if ns.mem_fraction_static is not None else DEFAULT_MEM_FRACTION,
        max_running_requests=max(1, max_running),
        chunked_prefill_size=ns.chunked_prefill_size or 8192,
        context_len=ns.context_length or (131072 if weights >= 100 else 32768),
        cuda_graph_max_bs=cuda_graph_max_bs,
        spec=spec,
        warnings=warnings,
    )


def state_dir_of(ns: argparse.Namespace) -> str:
    return os.path.expanduser(ns.sim_state)
