"""A server's speculative settings, read from its ``/server_info`` answer: the one reader used by
live telemetry frames, benchmark results and imported ``sglang.bench_serving`` rows.

``/server_info`` carries every server argument, the speculative ones with their defaults even when
nothing speculates (``speculative_algorithm`` None beside ``speculative_num_steps``,
``speculative_eagle_topk`` and ``speculative_num_draft_tokens`` defaults: sglang 0.5.23 wheel,
sglang/srt/server_args.py): no algorithm, or ``NONE``, is no speculation whatever the rest says. A
disaggregated deployment's router answers with a ``decode`` list (and a ``prefill`` one): the decode
servers speculate, so the first of them is read.
"""

from __future__ import annotations

ALGORITHM = "speculative_algorithm"
NUM_STEPS = "speculative_num_steps"
TOPK = "speculative_eagle_topk"
DRAFT_TOKENS = "speculative_num_draft_tokens"
DRAFT_MODEL = "speculative_draft_model_path"
# the server arguments read here, in the order a benchmark's /server_info capture keeps them
SERVER_INFO_KEYS = (ALGORITHM, NUM_STEPS, TOPK, DRAFT_TOKENS, DRAFT_MODEL)


def decode_server_info(info):
    """``info``, or its first decode server's where a disaggregated deployment's router answered; {} for none."""
    info = info or {}
    decode = info.get("decode") if isinstance(info, dict) else None
    if isinstance(decode, list) and decode and isinstance(decode[0], dict):
        return decode[0]
    return info if isinstance(info, dict) else {}


def speculates(algorithm):
    """Whether ``speculative_algorithm`` names an algorithm (None, empty and ``NONE`` do not)."""
    return algorithm is not None and str(algorithm).strip().upper() not in ("", "NONE")


def launch_settings(info):
    """The speculative settings a server was launched with, from its ``/server_info`` answer:
    ``{"algorithm", "num_steps", "topk", "draft_tokens", "draft_model"}``, or None when nothing speculates."""
    info = decode_server_info(info)
    if not speculates(info.get(ALGORITHM)):
        return None
    return {"algorithm": info.get(ALGORITHM), "num_steps": info.get(NUM_STEPS), "topk": info.get(TOPK),
            "draft_tokens": info.get(DRAFT_TOKENS), "draft_model": info.get(DRAFT_MODEL)}
