"""Reading a server's ``--help`` into a FlagSet, checking profiles against it, and the flag cache."""

from __future__ import annotations

import argparse
import json
import textwrap

import pytest

from spectui.core.profiles import (
    FlagCache,
    FlagSet,
    ProfileError,
    check_against,
    load_profile,
    load_profiles,
    parse_help_flags,
)
from spectui.core.profiles.discovery import ProfileLayer

# A trimmed excerpt of the real ``python -m sglang.launch_server --help`` of SGLang 0.5.23 (the
# PyPI wheel sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl). It was produced by running
# that wheel's own argparse definitions (``ServerArgs.add_cli_args`` in
# ``sglang/srt/server_args.py`` and the dataclass fields of ``sglang/srt/arg_groups/fields/``)
# with ``prepare_server_args``'s program name "sglang serve" at COLUMNS=80, with torch and the
# other heavy imports stubbed out. Kept: the first usage line and one usage line showing a
# ``--x | --no-x`` pair, then whole, unedited option entries: the flags spectui writes itself,
# a few general ones, and the speculative-decoding options (the DSPARK/MoE ones left out).
SGLANG_0_5_23_HELP = r"""
usage: sglang serve [-h] --model-path MODEL_PATH
                    [--enable-tf32-matmul | --no-enable-tf32-matmul]

options:
  -h, --help            show this help message and exit
  --model-path MODEL_PATH, --model MODEL_PATH
                        The path of the model weights. This can be a local
                        folder or a Hugging Face repo ID.
  --tokenizer-mode {auto,slow}
                        Tokenizer mode. 'auto' will use the fast tokenizer if
                        available, and 'slow' will always use the slow
                        tokenizer.
  --trust-remote-code   Whether or not to allow for custom models defined on
                        the Hub in their own modeling files.
  --context-length CONTEXT_LENGTH
                        The model's maximum context length. Defaults to None
                        (will use the value from the model's config.json
                        instead). Supports standard SI suffixes (k, M, G, T)
                        and IEC suffixes (Ki, Mi, Gi, Ti). Suffixes are case-
                        sensitive. Decimals are allowed for SI suffixes only.
                        Examples: '1k' -> 1000 '1M' -> 1000000 '25.6k' ->
                        25600 '1Ki' -> 1024 '1Mi' -> 1048576
  --json-model-override-args JSON_MODEL_OVERRIDE_ARGS
                        A dictionary in JSON string format used to override
                        default model configurations.
  --dtype {auto,half,float16,bfloat16,float,float32}
                        Data type for model weights and activations. * "auto"
                        will use FP16 precision for FP32 and FP16 models, and
                        BF16 precision for BF16 models. * "half" for FP16.
                        Recommended for AWQ quantization. * "float16" is the
                        same as "half". * "bfloat16" for a balance between
                        precision and range. * "float" is shorthand for FP32
                        precision. * "float32" for FP32 precision.
  --enable-tf32-matmul, --no-enable-tf32-matmul
                        Enable float32 matmuls to use TensorFloat32 precision
                        for better performance (via
                        torch.set_float32_matmul_precision). CUDA only.
                        Defaults to the model's preference, otherwise
                        disabled.
  --mem-fraction-static MEM_FRACTION_STATIC
                        The fraction of the memory used for static allocation
                        (model weights and KV cache memory pool). Use a
                        smaller value if you see out-of-memory errors.
  --tp-size TP_SIZE, --tensor-parallel-size TP_SIZE
                        The tensor parallelism size.
  --numa-node NUMA_NODE [NUMA_NODE ...]
                        Sets the numa node for the subprocesses. i-th element
                        corresponds to i-th subprocess. If unset, will be
                        automatically detected on NUMA systems.
  --host HOST           The host of the HTTP server.
  --port PORT           The port of the HTTP server.
  --enable-metrics      Enable log prometheus metrics.
  --decode-log-interval DECODE_LOG_INTERVAL
                        The log and metrics reporting interval (in decode
                        iterations) for decode batches.
  --cuda-graph-max-bs-decode CUDA_GRAPH_MAX_BS_DECODE
                        Maximum batch size captured for the decode cuda graph.
  --cuda-graph-bs-decode CUDA_GRAPH_BS_DECODE [CUDA_GRAPH_BS_DECODE ...]
                        Explicit list of batch sizes to capture for the decode
                        cuda graph.
  --speculative-algorithm SPECULATIVE_ALGORITHM
                        Speculative algorithm. Builtins: EAGLE, EAGLE3, NEXTN,
                        STANDALONE, NGRAM, DFLASH, DSPARK, UNO. Or any name
                        registered via `SpeculativeAlgorithm.register`.
  --speculative-draft-model-path SPECULATIVE_DRAFT_MODEL_PATH, --speculative-draft-model SPECULATIVE_DRAFT_MODEL_PATH
                        The path of the draft model weights. This can be a
                        local folder or a Hugging Face repo ID.
  --speculative-draft-model-revision SPECULATIVE_DRAFT_MODEL_REVISION
                        The specific draft model version to use. It can be a
                        branch name, a tag name, or a commit id. If
                        unspecified, will use the default version.
  --speculative-draft-load-format {auto,pt,safetensors,instanttensor,npcache,dummy,sharded_state,presharded,gguf,expert_pack,bitsandbytes,mistral,layered,flash_rl,remote,remote_instance,fastsafetensors,private,runai_streamer}
                        The format of the draft model weights to load. If not
                        specified, will use the same format as --load-format.
                        Use 'dummy' to initialize draft model weights with
                        random values for profiling.
  --speculative-num-steps SPECULATIVE_NUM_STEPS
                        The number of steps sampled from draft model in
                        Speculative Decoding.
  --speculative-eagle-topk SPECULATIVE_EAGLE_TOPK
                        The number of tokens sampled from the draft model in
                        eagle2 each step.
  --speculative-num-draft-tokens SPECULATIVE_NUM_DRAFT_TOKENS
                        The number of tokens sampled from the draft model in
                        Speculative Decoding.
  --speculative-dflash-block-size SPECULATIVE_DFLASH_BLOCK_SIZE
                        DFLASH only. Block size (verify window length). Alias
                        of --speculative-num-draft-tokens for DFLASH.
  --speculative-accept-threshold-single SPECULATIVE_ACCEPT_THRESHOLD_SINGLE
                        Accept a draft token if its probability in the target
                        model is greater than this threshold.
  --speculative-accept-threshold-acc SPECULATIVE_ACCEPT_THRESHOLD_ACC
                        The accept probability of a draft token is raised from
                        its target probability p to min(1, p / threshold_acc).
  --speculative-use-rejection-sampling
                        Use rejection sampling for speculative decoding
                        (requires topk=1).
  --speculative-token-map SPECULATIVE_TOKEN_MAP
                        The path of the draft model's small vocab table.
  --speculative-attention-mode {prefill,decode}
                        Attention backend for speculative decoding operations
                        (both target verify and draft extend). Can be one of
                        'prefill' (default) or 'decode'.
  --speculative-draft-attention-backend SPECULATIVE_DRAFT_ATTENTION_BACKEND
                        Attention backend for speculative decoding drafting.
  --speculative-dsa-topk-backend {sgl-kernel,torch,flashinfer}
                        DSA indexer top-k backend for speculative draft
                        workers. Options: 'sgl-kernel', 'torch', 'flashinfer'.
                        The 'torch' backend currently requires
                        SGLANG_DSA_FUSE_TOPK=false.
  --speculative-draft-kv-cache-dtype {auto,fp8_e5m2,fp8_e4m3,bf16,bfloat16}
                        KV cache dtype for the speculative draft model only.
                        The draft pool is allocated with one slot per target
                        token (draft and target share a slot index space), so
                        for a small draft it can still rival the target pool:
                        a 5-layer DFLASH draft costs 10240 bytes/token in
                        bf16. Setting fp8_e4m3 halves the draft pool; the
                        saving shows up as free device memory, so raise --mem-
                        fraction-static to convert it into KV capacity.
                        Default follows --kv-cache-dtype.
  --speculative-draft-window-size SPECULATIVE_DRAFT_WINDOW_SIZE
                        Sliding window size for the draft model. Honored by
                        Llama EAGLE-3 (`LlamaForCausalLMEagle3`), DFLASH, and
                        the built-in EAGLE/MTP draft-decode path on the Triton
                        and FlashInfer draft backends; other EAGLE-3 backends
                        (e.g. MLA-based drafters) silently ignore it. For
                        Llama EAGLE-3, the drafter only attends to the most
                        recent N keys (verifier hidden states + its own
                        outputs); the verifier is unaffected. For DFLASH, the
                        draft worker keeps a recent target-token window in its
                        local KV cache (paged backends may retain up to one
                        extra page on the left for alignment). For the built-
                        in EAGLE/MTP draft, each draft-decode step attends to
                        a --speculative-draft-sink-size sink plus the most
                        recent N tokens, leaving the target verify pass
                        unchanged; it is ignored (with a warning) if the draft
                        model has a native sliding window of its own. Default
                        is full attention/context.
  --speculative-draft-model-quantization {awq,fp8,mxfp8,gptq,gptq_marlin,awq_marlin,bitsandbytes,gguf,modelopt,modelopt_fp8,modelopt_fp4,nvfp4_online,modelopt_mixed,petit_nvfp4,w8a8_int8,w8a8_fp8,moe_wna16,w4afp8,mxfp4,auto-round,auto-round-int8,compressed-tensors,modelslim,mxfp_w4a8,quark,quark_int4fp8_moe,quark_mxfp4,mlx_q4,mlx_q8,unquant,humming}
                        The quantization method for speculative model.
  --enable-multi-layer-eagle
                        Enable multi-layer Eagle speculative decoding.
  --speculative-adaptive
                        Enable adaptive speculative decoding that dynamically
                        adjusts num_steps based on acceptance rate.
  --speculative-adaptive-config SPECULATIVE_ADAPTIVE_CONFIG
                        Path to a JSON config file for adaptive speculative
                        decoding tuning knobs.
  --speculative-ngram-min-bfs-breadth SPECULATIVE_NGRAM_MIN_BFS_BREADTH
                        The minimum breadth for BFS (Breadth-First Search) in
                        ngram speculative decoding.
  --speculative-ngram-max-bfs-breadth SPECULATIVE_NGRAM_MAX_BFS_BREADTH
                        The maximum breadth for BFS (Breadth-First Search) in
                        ngram speculative decoding.
  --speculative-ngram-match-type {BFS,PROB}
                        The match type for cache tree.
  --speculative-ngram-max-trie-depth SPECULATIVE_NGRAM_MAX_TRIE_DEPTH
                        The max trie depth for ngram speculative decoding.
  --speculative-ngram-capacity SPECULATIVE_NGRAM_CAPACITY
                        The cache capacity for ngram speculative decoding.
  --speculative-ngram-external-corpus-path SPECULATIVE_NGRAM_EXTERNAL_CORPUS_PATH
                        Path to an external JSONL corpus to pre-load into SAM
                        at startup. Additional corpora can be added at runtime
                        via POST /add_external_corpus.
  --speculative-ngram-external-sam-budget SPECULATIVE_NGRAM_EXTERNAL_SAM_BUDGET
                        Number of draft nodes reserved for the external SAM
                        subtree in ngram speculative decoding.
  --speculative-ngram-external-corpus-max-tokens SPECULATIVE_NGRAM_EXTERNAL_CORPUS_MAX_TOKENS
                        Fail startup if the tokenized external ngram corpus
                        exceeds this many tokens. Tune this based on your CPU
                        memory budget.
  --speculative-domino-candidate-pool-size SPECULATIVE_DOMINO_CANDIDATE_POOL_SIZE
                        Domino only. Size of the approximate block-shared
                        base-logit candidate pool. Set to 0 to score the full
                        vocabulary.
  --speculative-use-block-verification
                        Use block verification for EAGLE/EAGLE3/NEXTN
                        (requires topk=1) or for sampled DFLASH/DSPARK drafts,
                        on CUDA or ROCm.
  --speculative-draft-sink-size SPECULATIVE_DRAFT_SINK_SIZE
                        Number of leading 'attention sink' tokens the draft
                        always attends to, in addition to the --speculative-
                        draft-window-size recent window (StreamingLLM-style).
                        Honored only by the built-in EAGLE/MTP draft-decode
                        path on the Triton and FlashInfer draft backends; the
                        Llama EAGLE-3 and DFLASH windows ignore it. 0/unset =>
                        pure recent window. Requires --speculative-draft-
                        window-size.
  --disable-cuda-graph  Deprecated. Use --cuda-graph-
                        backend-{decode,prefill}=disabled instead.
"""

SPECULATIVE_FLAGS_0_5_23 = {
    "--speculative-algorithm",
    "--speculative-draft-model-path",
    "--speculative-draft-model",
    "--speculative-draft-model-revision",
    "--speculative-draft-load-format",
    "--speculative-num-steps",
    "--speculative-eagle-topk",
    "--speculative-num-draft-tokens",
    "--speculative-dflash-block-size",
    "--speculative-accept-threshold-single",
    "--speculative-accept-threshold-acc",
    "--speculative-use-rejection-sampling",
    "--speculative-token-map",
    "--speculative-attention-mode",
    "--speculative-draft-attention-backend",
    "--speculative-dsa-topk-backend",
    "--speculative-draft-kv-cache-dtype",
    "--speculative-draft-window-size",
    "--speculative-draft-model-quantization",
    "--speculative-adaptive",
    "--speculative-adaptive-config",
    "--speculative-ngram-min-bfs-breadth",
    "--speculative-ngram-max-bfs-breadth",
    "--speculative-ngram-match-type",
    "--speculative-ngram-max-trie-depth",
    "--speculative-ngram-capacity",
    "--speculative-ngram-external-corpus-path",
    "--speculative-ngram-external-sam-budget",
    "--speculative-ngram-external-corpus-max-tokens",
    "--speculative-domino-candidate-pool-size",
    "--speculative-use-block-verification",
    "--speculative-draft-sink-size",
}


@pytest.fixture(scope="module")
def sglang_flags() -> FlagSet:
    return parse_help_flags(SGLANG_0_5_23_HELP)


def _library(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    return load_profiles(layers=[ProfileLayer("test", (tmp_path,))])


def _profile(tmp_path, text: str, name: str = "p.yaml"):
    (tmp_path / name).write_text(textwrap.dedent(text))
    return load_profile(tmp_path / name, layers=[ProfileLayer("test", (tmp_path,))])


# -- parsing ----------------------------------------------------------------------------------


def test_real_help_lists_the_speculative_flags(sglang_flags):
    found = {n for n in sglang_flags.names() if n.startswith("--speculative")}
    assert found == SPECULATIVE_FLAGS_0_5_23


def test_real_help_flag_shapes(sglang_flags):
    tp = sglang_flags.get("--tp-size")
    assert tp is sglang_flags.get("--tensor-parallel-size")
    assert tp.takes_value and not tp.multiple and tp.choices is None
    assert sglang_flags.get("--model").name == "--model-path"
    assert sglang_flags.get("--speculative-draft-model").name == "--speculative-draft-model-path"
    metrics = sglang_flags.get("--enable-metrics")  # help text on the same line as the flag
    assert metrics is not None and not metrics.takes_value
    assert not sglang_flags.get("--trust-remote-code").takes_value
    assert sglang_flags.get("--numa-node").multiple
    assert sglang_flags.get("--cuda-graph-bs-decode").multiple
    assert sglang_flags.get("--no-enable-tf32-matmul") is sglang_flags.get("--enable-tf32-matmul")
    assert sglang_flags.get("-h").name == "--help"
    assert "--host" in sglang_flags and "--port" in sglang_flags


def test_real_help_choices(sglang_flags):
    algo = sglang_flags.get("--speculative-algorithm")
    # 0.5.23 has no argparse choices here: the builtins are listed in the help prose.
    assert algo.choices == ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "UNO")
    assert algo.choices_open
    assert sglang_flags.choices("--speculative-attention-mode") == ("prefill", "decode")
    assert sglang_flags.choices("--speculative-ngram-match-type") == ("BFS", "PROB")
    quant = sglang_flags.choices("--speculative-draft-model-quantization")
    assert quant[0] == "awq" and quant[-1] == "humming" and "fp8" in quant and len(quant) == 31
    assert not sglang_flags.get("--speculative-attention-mode").choices_open


def _older_sglang_parser() -> argparse.ArgumentParser:
    """Option shapes of older SGLang releases, through the running Python's own argparse."""
    p = argparse.ArgumentParser(prog="launch_server.py")
    p.add_argument("--model-path", "--model", type=str, required=True, help="The path of the model weights.")
    p.add_argument("--host", type=str, default="127.0.0.1", help="The host of the HTTP server.")
    p.add_argument("--port", type=int, default=30000, help="The port of the HTTP server.")
    p.add_argument("--tp-size", "--tensor-parallel-size", type=int, default=1, help="The tensor parallelism size.")
    p.add_argument("--enable-metrics", action="store_true", help="Enable log prometheus metrics.")
    p.add_argument("--speculative-algorithm", type=str, choices=["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"],
                   help="Speculative algorithm.")
    p.add_argument("--speculative-num-steps", type=int, help="The number of steps sampled from draft model.")
    p.add_argument("--speculative-ngram-max-match-window-size", type=int, default=12,
                   help="The maximum window size for pattern matching in ngram speculative decoding.")
    p.add_argument("--cuda-graph-bs", type=int, nargs="+", help="Set the list of batch sizes for cuda graph.")
    p.add_argument("--lora-paths", type=str, nargs="*", default=None, help="The list of LoRA adapters.")
    p.add_argument("--enable-torch-compile", action=argparse.BooleanOptionalAction, help="Optimize with torch.compile.")
    p.add_argument("--json-model-override-args", type=str, default="{}", help="A dictionary in JSON string format.")
    p.add_argument("--sampling-backend", type=str, choices=["flashinfer", "pytorch"], help="Kernels for sampling.")
    return p


@pytest.mark.parametrize("columns", ["60", "200"])
def test_parse_matches_argparse_definitions(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)
    parser = _older_sglang_parser()
    flagset = parse_help_flags(parser.format_help())
    for action in parser._actions:
        for option in action.option_strings:
            info = flagset.get(option)
            assert info is not None, option
            assert info.takes_value == (action.nargs != 0), option
            assert info.multiple == (action.nargs in ("+", "*")), option
            expected = tuple(action.choices) if action.choices is not None else None
            assert info.choices == expected, option
    assert len(flagset.names()) == sum(
        1 for a in parser._actions for o in a.option_strings if o.startswith("--"))


def test_usage_only_help():
    text = ("usage: srv [-h] [--a A] [--b {x,y}] [--c C [C ...]] [--d | --no-d]\n"
            "           [--e [E ...]] [--f]\n")
    flagset = parse_help_flags(text)
    assert flagset.names() == ["--a", "--b", "--c", "--d", "--e", "--f", "--no-d"]
    assert flagset.get("--a").takes_value and not flagset.get("--a").multiple
    assert flagset.choices("--b") == ("x", "y")
    assert flagset.get("--c").multiple and not flagset.get("--c").optional_value
    assert not flagset.get("--d").takes_value and not flagset.get("--no-d").takes_value
    assert flagset.get("--e").multiple and flagset.get("--e").optional_value
    assert not flagset.get("--f").takes_value


def test_ansi_colours_are_ignored():
    text = "usage: x [-h]\n\noptions:\n  \x1b[32m--tp-size\x1b[0m \x1b[33mTP_SIZE\x1b[0m\n      The size.\n"
    flagset = parse_help_flags(text)
    assert flagset.get("--tp-size").takes_value


def test_flagset_json_round_trip(sglang_flags):
    again = FlagSet.from_json(json.loads(json.dumps(sglang_flags.to_json())))
    assert again.flags == sglang_flags.flags


# -- checking profiles ------------------------------------------------------------------------


def test_shipped_profiles_pass_against_real_help(sglang_flags):
    library = load_profiles()
    assert library.errors == []
    assert len(library) >= 5
    for profile in library:
        assert check_against(profile, sglang_flags) == [], profile.name


def test_unknown_flag_is_located_and_gets_suggestions(tmp_path, sglang_flags):
    profile = _profile(tmp_path, """\
        name: p
        model: org/m
        args:
          tp-size: 8
          speculative-num-stepz: 3
          speculative-eagle-top-k: 1
        """)
    issues = check_against(profile, sglang_flags)
    assert [i.field for i in issues] == ["args.speculative-num-stepz", "args.speculative-eagle-top-k"]
    first, second = issues
    assert isinstance(first, ProfileError)
    assert (first.path, first.line, first.column) == (str(tmp_path / "p.yaml"), 5, 3)
    assert first.suggestions[0] == "speculative-num-steps"
    assert str(first).startswith(f"{tmp_path / 'p.yaml'}:5:3: ")
    assert "--speculative-num-stepz" in str(first) and "did you mean 'speculative-num-steps'" in str(first)
    assert second.suggestions[0] == "speculative-eagle-topk" and second.line == 6


def test_unknown_algorithm_open_list(tmp_path, sglang_flags):
    profile = _profile(tmp_path, """\
        model: org/m
        args:
          speculative-algorithm: EAGEL3
        """)
    [issue] = check_against(profile, sglang_flags)
    assert issue.field == "args.speculative-algorithm"
    assert (issue.line, issue.column) == (3, 26)
    assert issue.suggestions[:1] == ["EAGLE3"]
    assert "'EAGEL3'" in str(issue) and "did you mean 'EAGLE3'" in str(issue)


def test_algorithm_case_follows_sglang(tmp_path, sglang_flags):
    """0.5.23 upper-cases the name itself; older releases' argparse choices are exact."""
    profile = _profile(tmp_path, """\
        model: org/m
        args:
          speculative-algorithm: eagle3
        """)
    assert check_against(profile, sglang_flags) == []
    older = parse_help_flags(_older_sglang_parser().format_help())
    [issue] = check_against(profile, older)
    assert issue.suggestions == ["EAGLE3"]
    assert "choose from EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM" in str(issue)


def test_flags_removed_in_newer_sglang(tmp_path, sglang_flags):
    profile = _profile(tmp_path, """\
        model: org/m
        args:
          speculative-algorithm: NGRAM
          speculative-ngram-max-match-window-size: 12
        """)
    older = parse_help_flags(_older_sglang_parser().format_help())
    assert check_against(profile, older) == []
    [issue] = check_against(profile, sglang_flags)
    assert issue.field == "args.speculative-ngram-max-match-window-size" and issue.line == 4


def test_inherited_argument_is_reported_in_the_parent_file(tmp_path, sglang_flags):
    library = _library(tmp_path, {
        "base.yaml": """\
            model: org/m
            args:
              speculative-algorithm: MEDUSA
            """,
        "child.yaml": """\
            extends: base
            args:
              speculative-num-steps: 2
            """,
    })
    [issue] = check_against(library.get("child"), sglang_flags)
    assert issue.path == str(tmp_path / "base.yaml") and issue.line == 3
    assert issue.profile == "child"


def test_value_shapes(tmp_path, sglang_flags):
    profile = _profile(tmp_path, """\
        model: org/m
        args:
          trust-remote-code: 1
          mem-fraction-static: true
          tp-size: [8, 8]
          cuda-graph-bs-decode: [1, 2, 4]
          speculative-attention-mode: decod
        """)
    issues = {i.field: i for i in check_against(profile, sglang_flags)}
    assert set(issues) == {"args.trust-remote-code", "args.mem-fraction-static", "args.tp-size",
                           "args.speculative-attention-mode"}
    assert "takes no value" in str(issues["args.trust-remote-code"])
    assert "needs a value" in str(issues["args.mem-fraction-static"])
    assert "not a list" in str(issues["args.tp-size"])
    assert issues["args.speculative-attention-mode"].suggestions == ["decode"]


def test_sim_knobs_checked_only_for_a_simulated_host(tmp_path):
    sim = argparse.ArgumentParser(prog="spectui.sim.server")
    for flag in ("--model-path", "--host", "--port", "--sim-hardware", "--sim-load-time", "--sim-draft-agreement"):
        sim.add_argument(flag)
    sim.add_argument("--enable-metrics", action="store_true")
    flagset = parse_help_flags(sim.format_help())
    profile = _profile(tmp_path, """\
        model: org/m
        sim:
          hardware: pcie-8gpu
          draft-agreemnt: 0.4
        """)
    assert check_against(profile, flagset) == []
    [issue] = check_against(profile, flagset, simulated=True)
    assert issue.field == "sim.draft-agreemnt" and issue.line == 4
    assert issue.suggestions == ["draft-agreement"]


def test_help_without_flags_is_one_clear_error(tmp_path):
    profile = _profile(tmp_path, "model: org/m\n")
    [issue] = check_against(profile, parse_help_flags("Traceback (most recent call last):\nImportError: torch\n"))
    assert "listed no flags" in str(issue)


def test_missing_enable_metrics_is_reported_on_the_metrics_field(tmp_path):
    bare = argparse.ArgumentParser()
    for flag in ("--model-path", "--host", "--port"):
        bare.add_argument(flag)
    flagset = parse_help_flags(bare.format_help())
    assert check_against(_profile(tmp_path, "model: org/m\nmetrics: false\n"), flagset) == []
    [issue] = check_against(_profile(tmp_path, "model: org/m\n", name="q.yaml"), flagset)
    assert issue.field == "metrics" and "--enable-metrics" in str(issue)


# -- the per-host cache -----------------------------------------------------------------------


def test_flag_cache_round_trip(tmp_path, sglang_flags):
    cache = FlagCache(tmp_path / "flags")
    assert cache.get("root@gpu-host", "0.5.23") is None
    path = cache.put("root@gpu-host", "0.5.23", sglang_flags)
    assert path.parent == tmp_path / "flags" and path.suffix == ".json"
    assert cache.get("root@gpu-host", "0.5.23").flags == sglang_flags.flags
    assert cache.get("root@gpu-host", "0.5.22") is None
    assert cache.get("other-host", "0.5.23") is None
    cache.put("root@gpu-host", "0.5.22", parse_help_flags(_older_sglang_parser().format_help()))
    assert "--speculative-ngram-max-match-window-size" in cache.get("root@gpu-host", "0.5.22")
    assert cache.forget("root@gpu-host") == 2
    assert cache.get("root@gpu-host", "0.5.23") is None


def test_flag_cache_ignores_damaged_files(tmp_path, sglang_flags):
    cache = FlagCache(tmp_path)
    path = cache.put("h", "1", sglang_flags)
    path.write_text("{not json")
    assert cache.get("h", "1") is None
    path.write_text(json.dumps({"format": 1, "host": "someone-else", "version": "1", "flags": []}))
    assert cache.get("h", "1") is None


def test_flag_cache_hostile_names_stay_in_the_folder(tmp_path, sglang_flags):
    cache = FlagCache(tmp_path / "c")
    path = cache.put("../../etc/x y", "0.5.23/../../z", sglang_flags)
    assert path.parent == tmp_path / "c"
    assert cache.get("../../etc/x y", "0.5.23/../../z") is not None


def test_flag_cache_default_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert FlagCache().root == tmp_path / "cache" / "spectui" / "flags"
