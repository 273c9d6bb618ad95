"""The launch flags: SGLang's (the ones profiles use, per release era) plus ``--sim-*`` knobs.

Unknown flags are refused as argparse refuses them (usage on stderr, exit 2). The set of
speculative flags follows the era chosen with ``--sim-log-format``, as ``--help`` of that
release would list them: ``0.4`` has no NGRAM, ``2025`` has the match-window n-gram flags,
``0.5.23`` the trie-depth ones.
"""

from __future__ import annotations

import argparse
import os
from typing import List, Optional, Sequence

from spectui.sim.hardware import DEFAULT_PRESET, PRESETS
from spectui.sim.logfmt import DEFAULT_ERA, ERAS

PROG = "launch_server.py"

ALGORITHMS = {
    "0.4": ["EAGLE", "EAGLE3", "NEXTN"],
    "2025": ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"],
    "0.5.23": None,  # free-form in 0.5.23 (registered names); checked at start-up
}
SUPPORTED_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "UNO")
QUANTIZATIONS = ["awq", "fp8", "gptq", "marlin", "gptq_marlin", "awq_marlin", "bitsandbytes", "gguf",
                 "modelopt", "modelopt_fp4", "w8a8_int8", "w8a8_fp8", "moe_wna16", "compressed-tensors", "mxfp4"]
ATTENTION_BACKENDS = ["triton", "torch_native", "flashinfer", "fa3", "flashmla", "cutlass_mla", "trtllm_mla",
                      "trtllm_mha", "aiter", "ascend", "intel_amx", "flex_attention"]


def default_state_dir() -> str:
    return os.environ.get("SPECTUI_STATE_DIR") or "~/.cache/spectui"


def _era_of(argv: Sequence[str]) -> str:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--sim-log-format", default=DEFAULT_ERA)
    ns, _ = pre.parse_known_args(list(argv))
    return ns.sim_log_format if ns.sim_log_format in ERAS else DEFAULT_ERA


def build_parser(era: str = DEFAULT_ERA) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Launch an SGLang server (spectui's simulated GPU host: same flags, HTTP API, "
        "logs and metrics; model and GPUs are simulated).",
    )
    a = p.add_argument

    # Model and tokenizer
    a("--model-path", "--model", dest="model_path", required=True,
      help="The path of the model weights. This can be a local folder or a Hugging Face repo ID.")
    a("--tokenizer-path", help="The path of the tokenizer.")
    a("--tokenizer-mode", default="auto", choices=["auto", "slow"], help="Tokenizer mode.")
    a("--skip-tokenizer-init", action="store_true", help="Skip init tokenizer and pass input_ids in generate request.")
    a("--load-format", default="auto",
      choices=["auto", "pt", "safetensors", "npcache", "dummy", "sharded_state", "gguf", "bitsandbytes", "layered"],
      help="The format of the model weights to load.")
    a("--trust-remote-code", action="store_true", help="Whether or not to allow custom models defined on the Hub in their own modeling files.")
    a("--context-length", type=int, help="The model's maximum context length. Defaults to the model's config.")
    a("--revision", help="The specific model version to use (branch name, tag name, or commit id).")
    a("--dtype", default="auto", choices=["auto", "half", "float16", "bfloat16", "float", "float32"], help="Data type for model weights and activations.")
    a("--quantization", choices=QUANTIZATIONS, help="The quantization method.")
    a("--kv-cache-dtype", default="auto", choices=["auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16"], help="Data type for kv cache storage.")
    a("--served-model-name", help="Override the model name returned by the v1/models endpoint in OpenAI API server.")
    a("--chat-template", help="The builtin chat template name or the path of the chat template file.")
    a("--is-embedding", action="store_true", help="Whether to use a CausalLM as an embedding model.")
    a("--reasoning-parser", help="Specify the parser for reasoning models.")
    a("--tool-call-parser", help="Specify the parser for handling tool-call interactions.")

    # HTTP server
    a("--host", default="127.0.0.1", help="The host of the HTTP server.")
    a("--port", type=int, default=30000, help="The port of the HTTP server.")
    a("--api-key", help="Set API key of the server. It is also used in the OpenAI API compatible server.")
    a("--skip-server-warmup", action="store_true", help="If set, skip warmup.")
    a("--warmups", help="Specify custom warmup functions (csv) to run before server starts.")

    # Memory and scheduling
    a("--mem-fraction-static", type=float,
      help="The fraction of the memory used for static allocation (model weights and KV cache memory pool). "
      "Use a smaller value if you see out-of-memory errors.")
    a("--max-running-requests", type=int, help="The maximum number of running requests.")
    a("--max-queued-requests", type=int, help="The maximum number of queued requests.")
    a("--max-total-tokens", type=int, help="The maximum number of tokens in the memory pool.")
    a("--chunked-prefill-size", type=int, help="The maximum number of tokens in a chunk for the chunked prefill.")
    a("--max-prefill-tokens", type=int, default=16384, help="The maximum number of tokens in a prefill batch.")
    a("--schedule-policy", default="fcfs", choices=["lpm", "random", "fcfs", "dfs-weight", "lof", "priority"],
      help="The scheduling policy of the requests.")
    a("--schedule-conservativeness", type=float, default=1.0, help="How conservative the schedule policy is.")
    a("--page-size", type=int, default=1, help="The number of tokens in a page.")
    a("--disable-radix-cache", action="store_true", help="Disable RadixAttention for prefix caching.")
    a("--enable-mixed-chunk", action="store_true", help="Enabling mixing prefill and decode in a batch when using chunked prefill.")

    # Parallelism
    a("--tp-size", "--tensor-parallel-size", dest="tp_size", type=int, default=1, help="The tensor parallelism size.")
    a("--dp-size", "--data-parallel-size", dest="dp_size", type=int, default=1, help="The data parallelism size.")
    a("--pp-size", "--pipeline-parallel-size", dest="pp_size", type=int, default=1, help="The pipeline parallelism size.")
    a("--ep-size", "--expert-parallel-size", "--ep", dest="ep_size", type=int, default=1, help="The expert parallelism size.")
    a("--enable-dp-attention", action="store_true", help="Enabling data parallelism for attention and tensor parallelism for FFN.")
    a("--nnodes", type=int, default=1, help="The number of nodes.")
    a("--node-rank", type=int, default=0, help="The node rank.")
    a("--dist-init-addr", "--nccl-init-addr", dest="dist_init_addr", help="The host address for initializing distributed backend.")
    a("--base-gpu-id", type=int, default=0, help="The base GPU ID to start allocating GPUs from.")
    a("--gpu-id-step", type=int, default=1, help="The delta between consecutive GPU IDs that are used.")

    # Logging and metrics
    a("--log-level", default="info", help="The logging level of all loggers.")
    a("--log-level-http", help="The logging level of HTTP server. If not set, reuse --log-level by default.")
    a("--log-requests", action="store_true", help="Log metadata, inputs, outputs of all requests.")
    a("--log-requests-level", type=int, default=2, choices=[0, 1, 2, 3], help="Verbosity of --log-requests.")
    a("--show-time-cost", action="store_true", help="Show time cost of custom marks.")
    a("--enable-metrics", action="store_true", help="Enable log prometheus metrics.")
    a("--decode-log-interval", type=int, default=40,
      help="The log and metrics reporting interval (in decode iterations) for decode batches.")
    a("--incremental-streaming-output", action="store_true",
      help="Stream only the new text and token ids in each chunk of /generate (default: cumulative).")
    a("--enable-cache-report", action="store_true", help="Return number of cached tokens in usage.prompt_tokens_details for each openai request.")

    # Kernels and runtime
    a("--attention-backend", choices=ATTENTION_BACKENDS, help="Choose the kernels for attention layers.")
    a("--sampling-backend", choices=["flashinfer", "pytorch"], help="Choose the kernels for sampling layers.")
    a("--disable-cuda-graph", action="store_true", help="Disable cuda graph.")
    a("--cuda-graph-max-bs", type=int, help="Set the maximum batch size for cuda graph.")
    a("--cuda-graph-bs", type=int, nargs="+", help="Set the list of batch sizes for cuda graph.")
    a("--enable-torch-compile", action="store_true", help="Optimize the model with torch.compile.")
    a("--torch-compile-max-bs", type=int, default=32, help="Set the maximum batch size when using torch compile.")
    a("--disable-overlap-schedule", action="store_true", help="Disable the overlap scheduler.")
    a("--disable-custom-all-reduce", action="store_true", help="Disable the custom all-reduce kernel and fall back to NCCL.")
    a("--enable-nccl-nvls", action="store_true", help="Enable NCCL NVLS for prefill heavy requests when available.")
    a("--moe-runner-backend", default="auto", help="Choose the runner backend for MoE.")
    a("--random-seed", type=int, help="The random seed.")
    a("--watchdog-timeout", type=float, default=300, help="Set watchdog timeout in seconds.")
    a("--device", default="cuda", help="The device to use ('cuda', 'xpu', 'hpu', 'npu', 'cpu').")

    # Speculative decoding
    algos = ALGORITHMS[era]
    a("--speculative-algorithm", type=str.upper if algos is None else str, choices=algos,
      help="Speculative algorithm. Builtins: " + ", ".join(algos or SUPPORTED_ALGORITHMS) + ".")
    draft_flags = ["--speculative-draft-model-path"] + (["--speculative-draft-model"] if era == "0.5.23" else [])
    a(*draft_flags, dest="speculative_draft_model_path",
      help="The path of the draft model weights. This can be a local folder or a Hugging Face repo ID.")
    a("--speculative-draft-model-revision", help="The specific draft model version to use.")
    a("--speculative-num-steps", type=int, help="The number of steps sampled from draft model in Speculative Decoding.")
    a("--speculative-eagle-topk", type=int, help="The number of tokens sampled from the draft model in eagle2 each step.")
    a("--speculative-num-draft-tokens", type=int, help="The number of tokens sampled from the draft model in Speculative Decoding.")
    a("--speculative-accept-threshold-single", type=float, default=1.0,
      help="Accept a draft token if its probability in the target model is greater than this threshold.")
    a("--speculative-accept-threshold-acc", type=float, default=1.0,
      help="The accept probability of a draft token is raised from its target probability p to min(1, p / threshold_acc).")
    a("--speculative-token-map", help="The path of the draft model's small vocab table.")
    if era != "0.4":
        a("--speculative-attention-mode", default="prefill", choices=["prefill", "decode"],
          help="Attention backend for speculative decoding operations (both target verify and draft extend).")
    if era == "2025":
        a("--speculative-ngram-min-match-window-size", type=int, default=1, help="The minimum window size for pattern matching in ngram speculative decoding.")
        a("--speculative-ngram-max-match-window-size", type=int, default=12, help="The maximum window size for pattern matching in ngram speculative decoding.")
        a("--speculative-ngram-min-bfs-breadth", type=int, default=1, help="The minimum breadth for BFS (Breadth-First Search) in ngram speculative decoding.")
        a("--speculative-ngram-max-bfs-breadth", type=int, default=10, help="The maximum breadth for BFS (Breadth-First Search) in ngram speculative decoding.")
        a("--speculative-ngram-match-type", default="BFS", choices=["BFS", "PROB"], help="The match type for cache tree.")
        a("--speculative-ngram-branch-length", type=int, default=18, help="The branch length for ngram speculative decoding.")
        a("--speculative-ngram-capacity", type=int, default=10_000_000, help="The cache capacity for ngram speculative decoding.")
    if era == "0.5.23":
        a("--speculative-ngram-min-bfs-breadth", type=int, default=1, help="The minimum breadth for BFS (Breadth-First Search) in ngram speculative decoding.")
        a("--speculative-ngram-max-bfs-breadth", type=int, default=10, help="The maximum breadth for BFS (Breadth-First Search) in ngram speculative decoding.")
        a("--speculative-ngram-match-type", default="BFS", choices=["BFS", "PROB"], help="The match type for cache tree.")
        a("--speculative-ngram-max-trie-depth", type=int, default=18, help="The max trie depth for ngram speculative decoding.")
        a("--speculative-ngram-capacity", type=int, default=10_000_000, help="The cache capacity for ngram speculative decoding.")
        a("--speculative-ngram-external-corpus-path", help="Path to an external JSONL corpus to pre-load into SAM at startup.")
        a("--speculative-ngram-external-sam-budget", type=int, default=0, help="Number of draft nodes reserved for the external SAM subtree in ngram speculative decoding.")

    # The simulator's own knobs
    s = p.add_argument_group("simulator", "Knobs of spectui's simulated host (not SGLang flags).")
    s.add_argument("--sim-state", default=None, metavar="DIR",
                   help="Host state folder holding the virtual GPUs (default: $SPECTUI_STATE_DIR, else ~/.cache/spectui).")
    s.add_argument("--sim-load-time", type=float, default=4.0, metavar="S", help="Seconds from launch to ready (default 4).")
    s.add_argument("--sim-hardware", default=DEFAULT_PRESET, choices=sorted(PRESETS),
                   help="Hardware cost model preset (default %s)." % DEFAULT_PRESET)
    s.add_argument("--sim-log-format", default=DEFAULT_ERA, choices=list(ERAS),
                   help="Which SGLang release's log lines and field names to write (default %s)." % DEFAULT_ERA)
    s.add_argument("--sim-draft-agreement", type=float, metavar="P",
                   help="Probability that the drafter's first token is the target's (default: from the draft model path).")
    s.add_argument("--sim-draft-decay", type=float, default=0.85, metavar="R",
                   help="Per-depth decay of the drafter's agreement (default 0.85).")
    s.add_argument("--sim-weights-gb", type=float, metavar="GB", help="Total model weight size (default: from the model path).")
    s.add_argument("--sim-seed", type=int, default=0,
                   help="Base seed of greedy requests (a sampled request without sampling_seed draws a fresh seed; default 0).")
    s.add_argument("--sim-fail-load", choices=["oom"], help="Fail during weight loading: 'oom' = CUDA out of memory, then exit 1.")
    s.add_argument("--sim-crash-after", type=float, metavar="S", help="Crash with a traceback S seconds after becoming ready.")
    s.add_argument("--sim-hang-after", type=float, metavar="S", help="Stop answering (even /health) S seconds after becoming ready.")
    s.add_argument("--sim-orphan-timeout", type=float, default=60.0, metavar="S",
                   help="Seconds TP ranks outlive a killed leader, holding their memory (default 60).")
    return p


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    era = _era_of(argv)
    ns = build_parser(era).parse_args(argv)
    ns.sim_log_format = era
    if ns.sim_state is None:
        ns.sim_state = default_state_dir()
    if era == "2025":  # the older names of the same knobs
        ns.speculative_ngram_max_trie_depth = ns.speculative_ngram_branch_length
    elif era == "0.4":
        for name, value in (("speculative_ngram_min_bfs_breadth", 1), ("speculative_ngram_max_bfs_breadth", 10),
                            ("speculative_ngram_match_type", "BFS"), ("speculative_ngram_max_trie_depth", 18),
                            ("speculative_ngram_capacity", 10_000_000)):
            setattr(ns, name, value)
    return ns
