"""SGLang's resolution of the speculative server args, release by release.

What the server does with ``--speculative-*`` before it starts, as the release's code does it:

``0.5.23``: sglang 0.5.23 wheel, sglang/srt/arg_groups/speculative_hook.py
    the name is upper-cased (136-143) and NEXTN becomes EAGLE (109-116; an unknown name is
    refused by ``SpeculativeAlgorithm.from_string``, sglang/srt/speculative/spec_info.py:50-65);
    a draft path gets revision ``main`` (123-131). EAGLE, EAGLE3 and STANDALONE
    (``_handle_eagle_family``, 1072-1283): at most 48 running requests unless set (1086-1093);
    the MTP architectures use the target as their draft (1120-1156); without
    ``--speculative-num-steps`` the triple comes from ``_auto_choose_speculative_params``
    (1430-1461: STANDALONE (3, 1, 4); Llama and Grok (5, 4, 8); the others (3, 1, 4)); top-k 1
    forces ``num_draft_tokens = num_steps + 1`` (1256-1267). NGRAM (``_handle_ngram``,
    1285-1371): 48 running requests, mixed chunked prefill off (1304-1308, 1350-1353), top-k =
    ``--speculative-ngram-max-bfs-breadth``, 12 draft tokens unless set, ``num_steps =
    num_draft_tokens // topk`` (12 // 10 = 1 by default; a breadth of 0 divides by zero); an
    external corpus wants a positive SAM budget and token limit and a budget of at most
    ``num_draft_tokens - 1`` (1331-1349); top-k above 1 with ``--page-size`` above 1 needs the
    flashinfer backend (1355-1366: an unset backend resolves to another one on the GPUs
    simulated here); attention data parallelism is refused (1367-1371, ``attn_dp_size > 1``, or
    ``--enable-dp-attention`` with ``--dp-size`` above 1: parallel_hook.py:39-61,
    runtime_context.py:191-199). The corpus itself then checks its settings at start
    (``ngram.ngram_settings_problem``).
``2025`` (0.5.6): sglang 0.5.6 wheel, sglang/srt/server_args.py:1661-1790 and 4525-4553
    no upper-casing (the flag's choices are upper case); NEXTN becomes EAGLE; the same EAGLE
    rules with a shorter MTP list and other auto triples (Llama, Grok and the others (5, 4, 8);
    DeepSeek, GPT-OSS, Bailing and STANDALONE (3, 1, 4)); NGRAM takes
    ``--speculative-ngram-max-match-window-size`` draft tokens unless set and leaves
    ``num_steps`` unset.
``0.4`` (0.4.6.post5): sglang 0.4.6.post5 wheel, sglang/srt/server_args.py:377-431 and 1588-1604
    NEXTN becomes EAGLE; EAGLE and EAGLE3 only; 48 running requests; DeepseekV3 uses the target
    as its draft; every architecture's auto triple is (5, 4, 8); ``page_size > 1`` forces top-k 1.

Adaptive speculation (``--speculative-adaptive``, 0.5.23): sglang/srt/arg_groups/speculative_hook.py
    261-264 runs before the algorithm's handler: ``_maybe_disable_adaptive`` (1374-1389) turns it
    off with a warning unless the algorithm is EAGLE or EAGLE3 with top-k 1
    (``adaptive_unsupported_reason``, sglang/srt/speculative/adaptive_spec_params.py:56-100);
    ``_init_adaptive_speculative_params`` (1392-1427) sets top-k 1, the middle candidate as
    ``num_steps`` when unset, refuses a ``num_steps`` that is no candidate, and verifies
    ``num_steps + 1`` tokens.

DFLASH, DSPARK and UNO have handlers of their own in 0.5.23; the simulator drafts for them as for
EAGLE and resolves them by the EAGLE rules. A drafter algorithm without a draft model (where the
architecture does not supply one) is refused here with one sentence; SGLang fails later, loading it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from spectui.sim.engine.adaptive import candidate_steps, load_config

MAX_RUNNING_WARNING = ("Max running requests is reset to 48 for speculative decoding. "
                       "You can override this by explicitly setting --max-running-requests.")
TOPK1_WARNING = ("speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 "
                 "when speculative_eagle_topk == 1")
NGRAM_MIXED_CHUNK_WARNING = "The mixed chunked prefill are disabled because of using ngram speculative decoding."
NGRAM_TOKENS_WARNING = ("speculative_num_draft_tokens is set to 12 by default for ngram speculative decoding. "
                        "You can override this by explicitly setting --speculative-num-draft-tokens.")

# Architectures whose checkpoint carries its own MTP draft layers.
MTP_ARCHS = {
    "0.5.23": ("DeepseekV32ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV4ForCausalLM", "Glm4MoeForCausalLM",
               "Glm4MoeLiteForCausalLM", "GlmMoeDsaForCausalLM", "BailingMoeForCausalLM", "BailingMoeV2ForCausalLM",
               "BailingMoeV2_5ForCausalLM", "MistralLarge3ForCausalLM", "PixtralForConditionalGeneration",
               "HYV3ForCausalLM", "HYV4ForCausalLM", "Qwen4ExpForConditionalGeneration"),
    "2025": ("DeepseekV32ForCausalLM", "DeepseekV3ForCausalLM", "Glm4MoeForCausalLM", "BailingMoeForCausalLM",
             "BailingMoeV2ForCausalLM"),
    "0.4": ("DeepseekV3ForCausalLM",),
}
EAGLE_HANDLED = {
    "0.5.23": ("EAGLE", "EAGLE3", "STANDALONE", "DFLASH", "DSPARK", "UNO"),
    "2025": ("EAGLE", "EAGLE3", "STANDALONE"),
    "0.4": ("EAGLE", "EAGLE3"),
}
KNOWN = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "UNO")


class SpeculativeArgsError(Exception):
    """Speculative flags the release refuses."""


@dataclass
class ResolvedSpeculative:
    algorithm: Optional[str] = None  # None: no speculation
    draft_model_path: Optional[str] = None
    draft_model_revision: Optional[str] = None
    num_steps: Optional[int] = None
    eagle_topk: Optional[int] = None
    num_draft_tokens: Optional[int] = None
    max_running_requests: Optional[int] = None
    warnings: List[str] = field(default_factory=list)
    adaptive: bool = False
    adaptive_slots: Optional[Dict[int, dict]] = None  # the adaptive config's slots by batch size
    enable_mixed_chunk: Optional[bool] = None  # None: as launched


def auto_params(era: str, algorithm: str, arch: str) -> Tuple[int, int, int]:
    """``auto_choose_speculative_params`` of the release: (num_steps, eagle_topk, num_draft_tokens)."""
    if era == "0.4":
        return (5, 4, 8)
    if algorithm == "STANDALONE":
        return (3, 1, 4)
    if arch in ("LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM"):
        return (5, 4, 8)
    if era == "2025":
        chained = ("DeepseekV32ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM", "GptOssForCausalLM",
                   "BailingMoeForCausalLM", "BailingMoeV2ForCausalLM")
        return (3, 1, 4) if arch in chained else (5, 4, 8)
    return (3, 1, 4)


def resolve_speculative(ns: argparse.Namespace, era: str, arch: str) -> ResolvedSpeculative:
    out = ResolvedSpeculative(
        draft_model_path=ns.speculative_draft_model_path,
        draft_model_revision=getattr(ns, "speculative_draft_model_revision", None),
        num_steps=ns.speculative_num_steps, eagle_topk=ns.speculative_eagle_topk,
        num_draft_tokens=ns.speculative_num_draft_tokens, max_running_requests=ns.max_running_requests,
    )
    name = ns.speculative_algorithm
    if name is None:
        return out
    if era == "0.5.23":
        name = name.upper()
        if name not in KNOWN:
            raise SpeculativeArgsError("Unknown speculative algorithm name: %s" % ns.speculative_algorithm)
        if out.draft_model_path is not None and out.draft_model_revision is None:
            out.draft_model_revision = "main"
    elif era == "2025" and out.draft_model_path is not None and out.draft_model_revision is None:
        out.draft_model_revision = "main"
    if name == "NEXTN":
        name = "EAGLE"
    out.algorithm = name
    if getattr(ns, "speculative_adaptive", False):
        _adaptive(ns, out)
    if name in EAGLE_HANDLED[era]:
        _eagle_family(ns, era, arch, out)
    elif name == "NGRAM":
        _ngram(ns, era, out)
    return out


def _eagle_family(ns: argparse.Namespace, era: str, arch: str, out: ResolvedSpeculative) -> None:
    if out.max_running_requests is None:
        out.max_running_requests = 48
        if era != "0.4":
            out.warnings.append(MAX_RUNNING_WARNING)
    if arch in MTP_ARCHS[era] and out.draft_model_path is None:
        out.draft_model_path = ns.model_path
        if era != "0.4":
            out.draft_model_revision = getattr(ns, "revision", None)
    if out.algorithm in ("EAGLE", "EAGLE3", "STANDALONE") and not out.draft_model_path:
        raise SpeculativeArgsError("speculative_draft_model_path is required for %s speculative decoding: "
                                   "pass --speculative-draft-model-path." % out.algorithm)
    if out.num_steps is None:
        if out.eagle_topk is not None or out.num_draft_tokens is not None:
            # SGLang asserts here; the same condition, said in a sentence.
            raise SpeculativeArgsError("Please set --speculative-num-steps together with --speculative-eagle-topk and "
                                       "--speculative-num-draft-tokens (or none of them).")
        out.num_steps, out.eagle_topk, out.num_draft_tokens = auto_params(era, out.algorithm, arch)
    if out.eagle_topk is None:
        out.eagle_topk = 1  # SGLang leaves it unset (and fails on it later); the simulator drafts a chain
    if era == "0.4" and getattr(ns, "page_size", 1) and ns.page_size > 1 and out.eagle_topk > 1:
        out.eagle_topk = 1
        out.warnings.append("speculative_eagle_topk is adjusted to 1 when page_size > 1")
    if out.eagle_topk == 1 and out.num_draft_tokens != out.num_steps + 1:
        out.warnings.append(TOPK1_WARNING)
        out.num_draft_tokens = out.num_steps + 1
    if out.num_draft_tokens is None:
        out.num_draft_tokens = min(out.num_steps * out.eagle_topk, 64) + 1  # unset with top-k > 1: the simulator's choice


def _ngram(ns: argparse.Namespace, era: str, out: ResolvedSpeculative) -> None:
    if out.max_running_requests is None:
        out.max_running_requests = 48
        out.warnings.append(MAX_RUNNING_WARNING)
    out.eagle_topk = ns.speculative_ngram_max_bfs_breadth
    if era == "2025":
        if out.num_draft_tokens is None:
            out.num_draft_tokens = ns.speculative_ngram_max_match_window_size
        return
    out.enable_mixed_chunk = False
    if out.num_draft_tokens is None:
        out.num_draft_tokens = 12
        out.warnings.append(NGRAM_TOKENS_WARNING)
    if out.num_steps is None:
        if out.eagle_topk == 0:
            raise SpeculativeArgsError("integer division or modulo by zero: speculative_num_steps is "
                                       "speculative_num_draft_tokens // speculative_ngram_max_bfs_breadth, "
                                       "and --speculative-ngram-max-bfs-breadth is 0.")
        out.num_steps = out.num_draft_tokens // out.eagle_topk
    if getattr(ns, "speculative_ngram_external_corpus_path", None) is not None:
        budget = ns.speculative_ngram_external_sam_budget
        if budget <= 0:
            raise SpeculativeArgsError("--speculative-ngram-external-sam-budget must be positive when "
                                       "--speculative-ngram-external-corpus-path is set.")
        if ns.speculative_ngram_external_corpus_max_tokens <= 0:
            raise SpeculativeArgsError("--speculative-ngram-external-corpus-max-tokens must be positive when "
                                       "--speculative-ngram-external-corpus-path is set.")
        if budget > out.num_draft_tokens - 1:
            raise SpeculativeArgsError("speculative_ngram_external_sam_budget must be less than or equal to "
                                       "speculative_num_draft_tokens - 1 (%d)." % (out.num_draft_tokens - 1))
    out.warnings.append(NGRAM_MIXED_CHUNK_WARNING)
    page_size = getattr(ns, "page_size", None) or 1
    if out.eagle_topk > 1 and page_size > 1 and getattr(ns, "attention_backend", None) != "flashinfer":
        raise SpeculativeArgsError(
            "speculative_eagle_topk(%d) > 1 with page_size(%d) > 1 is unstable and produces incorrect results for "
            "paged attention backends. This combination is only supported for the 'flashinfer' backend."
            % (out.eagle_topk, page_size))
    attn_dp = getattr(ns, "attn_dp_size", 1) or 1
    if getattr(ns, "enable_dp_attention", False) and attn_dp == 1:
        attn_dp = getattr(ns, "dp_size", 1) or 1
    if attn_dp > 1:
        raise SpeculativeArgsError("Currently ngram speculative decoding does not support dp attention.")


def _adaptive(ns: argparse.Namespace, out: ResolvedSpeculative) -> None:
    """``_maybe_disable_adaptive`` then ``_init_adaptive_speculative_params`` (see the module docstring)."""
    reason = None
    if out.algorithm not in ("EAGLE", "EAGLE3"):
        reason = "speculative_algorithm=%s (only EAGLE/EAGLE3 are supported)" % out.algorithm
    elif out.eagle_topk is not None and out.eagle_topk != 1:
        reason = "speculative_eagle_topk=%s (only topk=1 is supported)" % out.eagle_topk
    if reason is not None:
        out.warnings.append("speculative_adaptive disabled: %s. Falling back to static speculative params." % reason)
        return
    try:
        slots = load_config(getattr(ns, "speculative_adaptive_config", None))
    except (OSError, ValueError) as exc:
        raise SpeculativeArgsError(str(exc))
    candidates = candidate_steps(slots)
    if out.eagle_topk is None:
        out.eagle_topk = 1
    if out.num_steps is None:
        out.num_steps = candidates[len(candidates) // 2]
    if out.num_steps not in candidates:
        raise SpeculativeArgsError("--speculative-num-steps=%s is not in the adaptive config candidate_steps %s. "
                                   "Pass one of those values." % (out.num_steps, candidates))
    out.num_draft_tokens = out.num_steps + 1
    out.adaptive, out.adaptive_slots = True, slots
