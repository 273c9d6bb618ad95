"""The hardware cost model: how long each forward pass of the simulated server takes.

Times are milliseconds for the reference deployment of a preset (a large MoE model at tensor
parallel 8). A forward pass costs

* ``weights_ms``: reading the weights once (independent of the token count), plus
  ``token_ms`` per token in the pass;
* an all-reduce term: plain decode runs inside CUDA graphs with the custom all-reduce
  (``ar_decode_ms + ar_decode_token_ms * tokens``); target verification of a draft tree falls
  back to NCCL (``ar_verify_ms`` + ``ar_verify_token_ms`` per token up to
  ``ar_verify_knee`` tokens, latency-bound, then ``ar_verify_token_bw_ms`` per token,
  bandwidth-bound);
* drafting: ``num_steps + 1`` small forwards of the draft head (``draft_step_ms`` +
  ``draft_token_ms`` per drafted token) for EAGLE-style drafters, a CPU trie lookup
  (``ngram_ms`` + ``ngram_seq_ms`` per sequence) for NGRAM;
* prefill: ``weights_ms`` + ``prefill_token_ms`` per new token + its all-reduce.

``pcie-8gpu`` is the deployment of the README's story: 12.2 ms per plain decode step (82 tok/s)
and about 30 ms per verify step, 25 ms of it all-reduce over PCIe, so speculation has to accept
about 2.7 tokens per step to break even. ``nvlink-8gpu`` has a cheap all-reduce, and the same
EAGLE-3 drafter beats the baseline there.

Other tensor-parallel sizes scale the weight terms by the weights each rank holds (relative to
the reference 75 GB per rank, within [0.35, 3]) and the all-reduce terms by ``(tp - 1) / 7``
(none at tp 1).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Dict

REFERENCE_GB_PER_RANK = 75.0


@dataclass(frozen=True)
class HardwarePreset:
    name: str
    description: str
    weights_ms: float
    token_ms: float
    ar_decode_ms: float
    ar_decode_token_ms: float
    ar_verify_ms: float
    ar_verify_token_ms: float
    ar_verify_knee: int
    ar_verify_token_bw_ms: float
    draft_step_ms: float
    draft_token_ms: float
    ngram_ms: float
    ngram_seq_ms: float
    prefill_token_ms: float
    ar_prefill_token_ms: float
    cuda_graph_max_bs: int = 256


PRESETS: Dict[str, HardwarePreset] = {
    "pcie-8gpu": HardwarePreset(
        name="pcie-8gpu",
        description="8 GPUs on PCIe: cheap decode, all-reduce-bound verification",
        weights_ms=9.0,
        token_ms=0.05,
        ar_decode_ms=3.14,
        ar_decode_token_ms=0.01,
        ar_verify_ms=15.94,
        ar_verify_token_ms=1.055,
        ar_verify_knee=8,
        ar_verify_token_bw_ms=0.12,
        draft_step_ms=1.15,
        draft_token_ms=0.01,
        ngram_ms=0.30,
        ngram_seq_ms=0.02,
        prefill_token_ms=0.10,
        ar_prefill_token_ms=0.02,
    ),
    "nvlink-8gpu": HardwarePreset(
        name="nvlink-8gpu",
        description="8 GPUs on NVLink: the all-reduce is cheap, speculation pays off",
        weights_ms=9.0,
        token_ms=0.05,
        ar_decode_ms=0.80,
        ar_decode_token_ms=0.003,
        ar_verify_ms=1.60,
        ar_verify_token_ms=0.12,
        ar_verify_knee=8,
        ar_verify_token_bw_ms=0.03,
        draft_step_ms=0.90,
        draft_token_ms=0.008,
        ngram_ms=0.30,
        ngram_seq_ms=0.02,
        prefill_token_ms=0.10,
        ar_prefill_token_ms=0.004,
    ),
}
DEFAULT_PRESET = "pcie-8gpu"


class CostModel:
    """Step times (ms) of one server: a preset adjusted to its TP size and model size."""

    def __init__(self, preset: HardwarePreset, tp_size: int = 8, weights_gb: float = 600.0):
        tp = max(1, int(tp_size))
        self.preset = preset
        self.tp_size = tp
        per_rank = float(weights_gb) / tp
        self.weight_scale = min(3.0, max(0.35, per_rank / REFERENCE_GB_PER_RANK))
        self.ar_scale = (tp - 1) / 7.0
        p = preset
        ws, ar = self.weight_scale, self.ar_scale
        self.p = replace(
            p,
            weights_ms=p.weights_ms * ws,
            token_ms=p.token_ms * ws,
            ar_decode_ms=p.ar_decode_ms * ar,
            ar_decode_token_ms=p.ar_decode_token_ms * ar,
            ar_verify_ms=p.ar_verify_ms * ar,
            ar_verify_token_ms=p.ar_verify_token_ms * ar,
            ar_verify_token_bw_ms=p.ar_verify_token_bw_ms * ar,
            draft_step_ms=p.draft_step_ms * max(ws, 0.5),
            prefill_token_ms=p.prefill_token_ms * ws,
            ar_prefill_token_ms=p.ar_prefill_token_ms * ar,
        )

    # -- forward passes -------------------------------------------------------------------
    def decode_ms(self, batch: int) -> float:
        p = self.p
        return p.weights_ms + batch * p.token_ms + p.ar_decode_ms + batch * p.ar_decode_token_ms

    def verify_ms(self, batch: int, draft_tokens: int) -> float:
        p = self.p
        tokens = batch * draft_tokens
        knee = min(tokens, p.ar_verify_knee)
        ar = p.ar_verify_ms + knee * p.ar_verify_token_ms + max(0, tokens - p.ar_verify_knee) * p.ar_verify_token_bw_ms
        return p.weights_ms + tokens * p.token_ms + ar

    def draft_ms(self, batch: int, num_steps: int, topk: int) -> float:
        p = self.p
        return (num_steps + 1) * (p.draft_step_ms + batch * topk * p.draft_token_ms)

    def ngram_ms(self, batch: int) -> float:
        return self.p.ngram_ms + batch * self.p.ngram_seq_ms

    def prefill_ms(self, new_tokens: int, extra_draft_extend: bool = False) -> float:
        p = self.p
        ms = p.weights_ms + new_tokens * p.prefill_token_ms + p.ar_decode_ms + new_tokens * p.ar_prefill_token_ms
        if extra_draft_extend:
            ms += p.draft_step_ms + new_tokens * p.draft_token_ms
        return ms

    # -- one scheduler step -----------------------------------------------------------------
    def step_ms(self, algorithm: str, batch: int, num_steps: int = 0, topk: int = 1, draft_tokens: int = 1) -> float:
        """A decode step of ``batch`` sequences under a speculative algorithm (or ``NONE``)."""
        algo = (algorithm or "NONE").upper()
        if algo == "NONE" or batch <= 0:
            return self.decode_ms(max(batch, 0))
        verify = self.verify_ms(batch, draft_tokens)
        if algo == "NGRAM":
            return verify + self.ngram_ms(batch)
        return verify + self.draft_ms(batch, num_steps, topk)

    def break_even_accept_length(self, algorithm: str, num_steps: int, topk: int, draft_tokens: int) -> float:
        """Accept length at which speculation matches plain decoding (batch 1)."""
        return self.step_ms(algorithm, 1, num_steps, topk, draft_tokens) / self.decode_ms(1)

    def describe(self) -> dict:
        d = asdict(self.p)
        d["tp_size"] = self.tp_size
        d["weight_scale"] = round(self.weight_scale, 3)
        d["ar_scale"] = round(self.ar_scale, 3)
        return d


def cost_model(name: str, tp_size: int = 8, weights_gb: float = 600.0) -> CostModel:
    try:
        preset = PRESETS[name]
    except KeyError:
        raise ValueError("unknown hardware preset %r (choose from %s)" % (name, ", ".join(sorted(PRESETS))))
    return CostModel(preset, tp_size, weights_gb)
