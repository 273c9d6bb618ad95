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

Several nodes (``--nnodes``): a TP group that spans hosts all-reduces hierarchically, as NCCL's
tree does across nodes: a reduce-scatter and an all-gather among the ``tp / nnodes`` ranks of each
host over its PCIe (together, what an all-reduce among those ranks costs, so the intra-node terms
scale by ``(tp / nnodes - 1) / 7``), and between them an all-reduce of the node's data over the
NIC: ``2 (N - 1)`` messages of ``msg_us`` each and ``2 (N - 1) / N`` of the message bytes through
the NIC at its achieved bandwidth, for each of the ``ALLREDUCES_PER_FORWARD`` all-reduces of a
target forward (``DRAFT_ALLREDUCES`` of a draft forward). SGLang builds no custom all-reduce for a
group that spans nodes (sglang 0.5.23 wheel, sglang/srt/distributed/device_communicators/
custom_all_reduce_utils.py:459-464: "CustomAllreduce is disabled because this process group spans
across nodes."; 0.5.6 custom_all_reduce.py:93-99), so plain decode, prefill and the draft forwards
pay NCCL's intra-node cost (the ``ar_verify`` curve) instead of ``ar_decode``. The multi-node
presets are two ``pcie-8gpu`` boxes joined by 100 GbE or by NDR InfiniBand: TP16 over them halves
the weights each rank reads but verifies more slowly than TP8 on one box (an EAGLE-3 step of
41.9 ms over 100 GbE, 35.6 ms over NDR, against 34.0 ms) and decodes at less than half its speed
(33.8 and 28.6 ms against 12.2 ms); ``tests/sim/test_sim_multinode.py`` pins the bands.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Dict, Optional

REFERENCE_GB_PER_RANK = 75.0

# The reference model's all-reduces: Kimi-K2.5 and DeepSeek-V3 (public config.json: hidden_size
# 7168, num_hidden_layers 61) all-reduce after attention and after the MoE in every layer, plus
# once after the vocab-parallel embedding; an EAGLE-3 draft forward runs one decoder layer.
REFERENCE_HIDDEN = 7168
REFERENCE_LAYERS = 61
ALLREDUCES_PER_FORWARD = 2 * REFERENCE_LAYERS + 1
DRAFT_ALLREDUCES = 2
ACTIVATION_BYTES = 2  # bf16 hidden states

# One PCIe hop of the preset's NCCL all-reduce: pcie-8gpu's latency-bound 15.94 ms per verify
# forward is ALLREDUCES_PER_FORWARD ring all-reduces of 2 x 7 hops each (9.26 us a hop).
PCIE_HOP_US = 15.94 * 1000.0 / (ALLREDUCES_PER_FORWARD * 2 * 7)


@dataclass(frozen=True)
class Network:
    """The link between the nodes of a multi-node server: one NIC per node.

    ``line_gbytes_s`` is the line rate in GB/s, ``efficiency`` the share of it an NCCL all-reduce
    achieves, ``msg_us`` the time of one message from a GPU on one node to a GPU on the other
    (the wire, the NICs, NCCL's proxy threads and, without GPUDirect RDMA, the copies through
    host memory at both ends)."""

    name: str
    line_gbytes_s: float
    efficiency: float
    msg_us: float

    @property
    def gbytes_s(self) -> float:
        return self.line_gbytes_s * self.efficiency


# A PCIe box's GPUs hang off the CPU's root ports, farther from the NIC than NCCL's default
# GPUDirect RDMA distance (NCCL src/graph/paths.cc, ncclTopoCheckGdr: netGdrLevel = PATH_PXB,
# "GPU Direct RDMA Disabled ... (distance %d > %d)"), so every inter-node message is staged through
# host memory: one PCIe hop on each side on top of the network's own latency.
STAGING_US = 2 * PCIE_HOP_US

ETHERNET_100G = Network(
    name="100 GbE (NCCL NET/Socket over TCP)",
    # 100 Gb/s = 12.5 GB/s line rate. NCCL's socket transport reaches well under it: 4-6 GB/s
    # bus bandwidth between 8-GPU nodes on 100 Gb/s TCP (NVIDIA/nccl#450), at most about 60% of
    # wire speed (NVIDIA/nccl#209); 0.45 of line rate here.
    line_gbytes_s=12.5,
    efficiency=0.45,
    # The simulator's assumption for a kernel TCP message with NCCL's socket proxy threads at both
    # ends (30 us, three times InfiniBand's), plus the host-memory staging.
    msg_us=30.0 + STAGING_US,
)
INFINIBAND_NDR = Network(
    name="NDR InfiniBand 400 Gb/s (NCCL NET/IB)",
    # 400 Gb/s = 50 GB/s line rate; NCCL over IB gets close to it (12.2 GB/s on a 100 Gb/s EDR
    # card, "as good as you can get": NVIDIA/nccl-tests#29), 0.95 here.
    line_gbytes_s=50.0,
    efficiency=0.95,
    # A 2-rank 8-byte all-reduce between two nodes over HDR InfiniBand takes about 20 us
    # (NVIDIA/nccl-tests#150): 10 us for each of its two messages, plus the host-memory staging.
    msg_us=10.0 + STAGING_US,
)


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
    gpus_per_node: int = 8
    network: Optional[Network] = None  # between nodes; None: a single-host preset


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
PRESETS["pcie-2x8gpu-100gbe"] = replace(
    PRESETS["pcie-8gpu"], name="pcie-2x8gpu-100gbe",
    description="two 8-GPU PCIe nodes over 100 GbE: TP16 across them verifies slower than TP8 on one",
    network=ETHERNET_100G)
PRESETS["pcie-2x8gpu-ndr400"] = replace(
    PRESETS["pcie-8gpu"], name="pcie-2x8gpu-ndr400",
    description="two 8-GPU PCIe nodes over NDR InfiniBand: faster than 100 GbE, still slower than one node",
    network=INFINIBAND_NDR)
DEFAULT_PRESET = "pcie-8gpu"
DEFAULT_MULTINODE_PRESET = "pcie-2x8gpu-100gbe"


class CostModel:
    """Step times (ms) of one server: a preset adjusted to its TP size, model size and node count."""

    def __init__(self, preset: HardwarePreset, tp_size: int = 8, weights_gb: float = 600.0, nnodes: int = 1):
        tp = max(1, int(tp_size))
        nodes = max(1, int(nnodes))
        if nodes > 1 and preset.network is None:
            raise ValueError("hardware preset %r has no network between nodes (choose %s for --nnodes %d)"
                             % (preset.name, " or ".join(multinode_presets()), nodes))
        if tp % nodes:
            raise ValueError("tp_size %d does not split over %d nodes" % (tp, nodes))
        self.preset = preset
        self.tp_size = tp
        self.nnodes = nodes
        self.tp_per_node = tp // nodes
        per_rank = float(weights_gb) / tp
        self.weight_scale = min(3.0, max(0.35, per_rank / REFERENCE_GB_PER_RANK))
        self.ar_scale = (self.tp_per_node - 1) / 7.0
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

    @property
    def spans_nodes(self) -> bool:
        return self.nnodes > 1

    # -- all-reduce terms -----------------------------------------------------------------
    def _nccl_ms(self, tokens: int) -> float:
        """NCCL's intra-node all-reduces of one target forward of ``tokens`` tokens."""
        p = self.p
        knee = min(tokens, p.ar_verify_knee)
        return p.ar_verify_ms + knee * p.ar_verify_token_ms + max(0, tokens - p.ar_verify_knee) * p.ar_verify_token_bw_ms

    def inter_node_ms(self, tokens: int, allreduces: int = ALLREDUCES_PER_FORWARD) -> float:
        """The inter-node part of ``allreduces`` all-reduces of ``tokens`` hidden states (0 on one node)."""
        if not self.spans_nodes:
            return 0.0
        net, n = self.preset.network, self.nnodes
        steps = 2 * (n - 1)
        nic_bytes = 2.0 * (n - 1) / n * max(0, tokens) * REFERENCE_HIDDEN * ACTIVATION_BYTES
        per_allreduce_ms = steps * net.msg_us / 1000.0 + nic_bytes / (net.gbytes_s * 1e9) * 1000.0
        return allreduces * per_allreduce_ms

    def _draft_cross_node_ms(self, tokens: int) -> float:
        """What one draft forward pays more when its TP group spans nodes: NCCL instead of the custom
        all-reduce inside the node, and the inter-node part."""
        if not self.spans_nodes:
            return 0.0
        p = self.p
        nccl_instead = (p.ar_verify_ms - p.ar_decode_ms) / ALLREDUCES_PER_FORWARD
        return DRAFT_ALLREDUCES * nccl_instead + self.inter_node_ms(tokens, DRAFT_ALLREDUCES)

    # -- forward passes -------------------------------------------------------------------
    def decode_ms(self, batch: int) -> float:
        p = self.p
        if self.spans_nodes:
            return p.weights_ms + batch * p.token_ms + self._nccl_ms(batch) + self.inter_node_ms(batch)
        return p.weights_ms + batch * p.token_ms + p.ar_decode_ms + batch * p.ar_decode_token_ms

    def verify_ms(self, batch: int, draft_tokens: int) -> float:
        p = self.p
        tokens = batch * draft_tokens
        return p.weights_ms + tokens * p.token_ms + self._nccl_ms(tokens) + self.inter_node_ms(tokens)

    def draft_ms(self, batch: int, num_steps: int, topk: int) -> float:
        p = self.p
        return (num_steps + 1) * (p.draft_step_ms + batch * topk * p.draft_token_ms
                                  + self._draft_cross_node_ms(batch * topk))

    def ngram_ms(self, batch: int) -> float:
        return self.p.ngram_ms + batch * self.p.ngram_seq_ms

    def prefill_ms(self, new_tokens: int, extra_draft_extend: bool = False) -> float:
        p = self.p
        ar = p.ar_verify_ms if self.spans_nodes else p.ar_decode_ms
        ms = p.weights_ms + new_tokens * p.prefill_token_ms + ar + new_tokens * p.ar_prefill_token_ms
        ms += self.inter_node_ms(new_tokens)
        if extra_draft_extend:
            ms += p.draft_step_ms + new_tokens * p.draft_token_ms + self._draft_cross_node_ms(new_tokens)
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

    def forward_parts(self, algorithm: str, batch: int, num_steps: int = 0, topk: int = 1, draft_tokens: int = 1,
                      cuda_graph: bool = True) -> Dict[str, float]:
        """The device time (ms) of one decode step's forwards, by the category SGLang 0.5.23's device timer
        files each under (docs/step-costs.md): ``decode`` for a plain step; ``target_verify`` for the
        verify forward; an EAGLE-style chain's ``num_steps`` draft forwards as one ``eagle_draft`` graph and
        its draft-extend forward as ``eagle_draft_extend`` (sglang 0.5.23 wheel,
        sglang/srt/speculative/eagle_draft_cuda_graph_runner.py:748,
        eagle_draft_extend_cuda_graph_runner.py:676), or, without CUDA graphs, as eager DECODE and EXTEND
        forwards (``decode``, ``extend``: sglang/srt/model_executor/runner/eager_runner.py:261, :343-350).
        NGRAM's trie lookup runs on the CPU and is timed by nothing. The parts add up to :meth:`step_ms`
        less that lookup."""
        algo = (algorithm or "NONE").upper()
        if algo == "NONE" or batch <= 0:
            return {"decode": self.decode_ms(max(batch, 0))}
        parts = {"target_verify": self.verify_ms(batch, draft_tokens)}
        if algo != "NGRAM":
            forward = self.draft_ms(batch, 0, topk)  # one forward of the draft model
            draft, extend = ("eagle_draft", "eagle_draft_extend") if cuda_graph else ("decode", "extend")
            if num_steps > 0:  # at 0 steps (adaptive speculation) nothing is drafted; the extend still runs
                parts[draft] = num_steps * forward
            parts[extend] = forward
        return parts

    def break_even_accept_length(self, algorithm: str, num_steps: int, topk: int, draft_tokens: int) -> float:
        """Accept length at which speculation matches plain decoding (batch 1)."""
        return self.step_ms(algorithm, 1, num_steps, topk, draft_tokens) / self.decode_ms(1)

    def describe(self) -> dict:
        d = asdict(self.p)
        d["tp_size"] = self.tp_size
        d["weight_scale"] = round(self.weight_scale, 3)
        d["ar_scale"] = round(self.ar_scale, 3)
        d["nnodes"] = self.nnodes
        if self.spans_nodes:
            d["tp_per_node"] = self.tp_per_node
            d["custom_all_reduce"] = False
            d["inter_node_ms_per_forward"] = round(self.inter_node_ms(1), 3)
        return d


def multinode_presets():
    return sorted(name for name, p in PRESETS.items() if p.network is not None)


def cost_model(name: str, tp_size: int = 8, weights_gb: float = 600.0, nnodes: int = 1) -> CostModel:
    try:
        preset = PRESETS[name]
    except KeyError:
        raise ValueError("unknown hardware preset %r (choose from %s)" % (name, ", ".join(sorted(PRESETS))))
    return CostModel(preset, tp_size, weights_gb, nnodes)
