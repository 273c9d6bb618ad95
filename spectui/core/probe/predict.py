"""From a probe result to the break-even accept length L* of speculative decoding.

What is measured and what is modelled (see docs/probe.md):

* measured by the probe: the latency of one all-reduce of ``hidden x tokens x dtype bytes``
  across the tensor-parallel ranks, for each token count (its median);
* modelled here: a forward step of tensor parallel TP > 1 runs ``2 x layers + 1`` all-reduces
  (attention output and MLP/MoE output of each layer, plus the vocabulary-parallel embedding),
  so its communication time is that count times the latency at its token count;
* given or modelled: the plain decode step time ``T`` (batch 1), per-token compute, and the
  drafting cost. On a real host ``T`` comes from a benchmark (``--decode-step-ms``, e.g. a plain
  server's median inter-token latency at concurrency 1); on the simulated host all three come
  from the simulator's hardware model.

A speculative step verifies ``N`` positions per sequence, where ``N`` is SGLang's
``--speculative-num-draft-tokens`` (it counts the root: a chain of ``k`` draft steps verifies
``N = k + 1`` positions, a tree of ``N`` draft tokens verifies ``N``). Plain decoding emits one
token per step of time ``T``; speculation emits ``L`` (the accept length) per step of time
``S``, so it breaks even at ``L* = S / T`` with

    S = T + [comm(N) - comm_decode] + (N - 1) x token_ms + drafting

* ``comm_only`` (communication-only lower bound): drafting and extra compute taken as zero,
  ``1 + (comm(N) - comm_decode) / T``. Everything left out only adds time, so the real L* is at
  least this (a negative difference, which only noise can give, counts as zero);
* ``predicted``: with the per-token compute and the drafting cost, where known.

Drafting: a chain of ``k`` steps runs ``k + 1`` forwards of the draft model (``k`` drafting
forwards and the draft-extend forward after verification), each ``draft_step_ms +
topk x draft_token_ms``; a tree built without a draft model (NGRAM's trie) costs
``tree_draft_ms`` per step. The longest accept length a step can reach is ``k + 1`` for a chain
and ``N`` for an NGRAM tree, so an L* above that cannot be reached at all.

Across nodes (a result whose ``allreduce`` says ``nnodes`` above 1, so far the simulated host's): each
latency carries its inter-node part (``inter_node_ms``), reported apart as ``verify_inter_node_ms``.
``T`` is that deployment's own plain decode step, which pays NCCL and the inter-node all-reduce too
(SGLang builds no custom all-reduce for a group that spans nodes), so L* is against it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from spectui.core.breakeven import PredictionError, predicted_break_even
from spectui.core.server_frames import ServerFrame, settings_in_force

DEFAULT_TOKENS = (1, 2, 4, 8, 16)
ALLREDUCES_PER_LAYER = 2
EXTRA_ALLREDUCES = 1  # the vocabulary-parallel embedding's all-reduce
EAGLE_FAMILY = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "MTP")
NGRAM_DEFAULT_DRAFT_TOKENS = 12  # SGLang 0.5.23, srt/arg_groups/speculative_hook.py, _handle_ngram


def allreduces_per_forward(layers: int, world_size: int, *, per_layer: int = ALLREDUCES_PER_LAYER,
                           extra: int = EXTRA_ALLREDUCES) -> int:
    """All-reduces in one forward step: none at TP 1, else ``per_layer x layers + extra``."""
    if world_size <= 1:
        return 0
    return per_layer * int(layers) + extra


def _sizes(result: dict) -> list[dict]:
    sizes = sorted((result.get("allreduce") or {}).get("sizes") or [], key=lambda s: s["tokens"])
    if not sizes:
        raise PredictionError("the probe result has no all-reduce measurements")
    return sizes


def latency_ms(result: dict, tokens: int, stat: str = "median_ms") -> tuple[float, bool]:
    """One all-reduce's latency at ``tokens`` tokens, and whether it was interpolated.

    Between measured token counts: linear in the token count. Beyond the largest: extended
    along the line through the two largest (the bandwidth-bound end). Below the smallest: the
    smallest's.
    """
    sizes = _sizes(result)
    pts = [(int(s["tokens"]), float(s[stat])) for s in sizes]
    for t, v in pts:
        if t == tokens:
            return v, False
    if tokens < pts[0][0] or len(pts) == 1:
        return (pts[0][1] if tokens < pts[0][0] else pts[-1][1]), True
    for (t0, v0), (t1, v1) in zip(pts, pts[1:]):
        if t0 < tokens < t1:
            return v0 + (v1 - v0) * (tokens - t0) / (t1 - t0), True
    (t0, v0), (t1, v1) = pts[-2], pts[-1]
    return max(v1, v1 + (v1 - v0) * (tokens - t1) / (t1 - t0)), True


def forward_allreduces(result: dict) -> int:
    ar = result.get("allreduce") or {}
    world = int(ar.get("world_size") or (result.get("provenance") or {}).get("world_size") or 1)
    return allreduces_per_forward(int(result["model"]["layers"]), world)


def comm_ms(result: dict, tokens: int) -> float:
    """Communication time of one forward step over ``tokens`` positions (batch 1)."""
    return forward_allreduces(result) * latency_ms(result, tokens)[0]


def node_count(result: dict) -> int:
    """Nodes the probed ranks spanned (1 for one host)."""
    ar = result.get("allreduce") or {}
    return int(ar.get("nnodes") or (result.get("provenance") or {}).get("nnodes") or 1)


def inter_node_comm_ms(result: dict, tokens: int) -> float | None:
    """The inter-node part of a forward step's communication over ``tokens`` positions, where the result
    splits its latencies (a probe across nodes); else None."""
    sizes = (result.get("allreduce") or {}).get("sizes") or []
    if not sizes or any(s.get("inter_node_ms") is None for s in sizes):
        return None
    return forward_allreduces(result) * latency_ms(result, tokens, "inter_node_ms")[0]


def spread_text(result: dict) -> str:
    """``TP16 over 2 nodes, 100 GbE (simulated)``, or ``TP8`` on one host."""
    prov = result.get("provenance") or {}
    if prov.get("spread"):
        return str(prov["spread"])
    ar = result.get("allreduce") or {}
    world = int(ar.get("world_size") or prov.get("world_size") or 1)
    n = node_count(result)
    return f"TP{world}" + (f" over {n} nodes" if n > 1 else "")


def decode_comm_ms(result: dict) -> float:
    """Communication time of a plain decode step: the decode path's latency where the result
    has one (the simulator's model), else the 1-token latency."""
    path = (result.get("allreduce") or {}).get("decode_path")
    lat = float(path["median_ms"]) if path else latency_ms(result, 1)[0]
    return forward_allreduces(result) * lat


@dataclass(frozen=True)
class StepCosts:
    """What the prediction needs beyond the probe, each in ms."""

    decode_step_ms: float | None = None   # a plain decode step, batch 1 (measured or modelled)
    token_ms: float = 0.0                 # compute per verified position beyond the first
    draft_step_ms: float = 0.0            # one forward of the draft model
    draft_token_ms: float = 0.0           # per drafted token within a draft forward
    tree_draft_ms: float = 0.0            # building an NGRAM tree of drafts
    source: str | None = None             # where these came from, in words

    @classmethod
    def from_result(cls, result: dict, *, decode_step_ms: float | None = None, token_ms: float | None = None,
                    draft_step_ms: float | None = None, tree_draft_ms: float | None = None,
                    source: str | None = None) -> "StepCosts":
        """The result's modelled costs (the simulated host has them), overridden by what is given."""
        m = result.get("modelled") or {}
        given = [n for n, v in (("decode step", decode_step_ms), ("token", token_ms), ("draft step", draft_step_ms),
                                ("tree draft", tree_draft_ms)) if v is not None]
        parts = ["given: " + ", ".join(given)] if given else []
        if m.get("source") and len(given) < 4:
            parts.append(m["source"])
        src = source or ("; ".join(parts) or None)
        return cls(
            decode_step_ms=decode_step_ms if decode_step_ms is not None else m.get("decode_step_ms"),
            token_ms=token_ms if token_ms is not None else float(m.get("token_ms") or 0.0),
            draft_step_ms=draft_step_ms if draft_step_ms is not None else float(m.get("draft_step_ms") or 0.0),
            draft_token_ms=float(m.get("draft_token_ms") or 0.0) if draft_step_ms is None else 0.0,
            tree_draft_ms=tree_draft_ms if tree_draft_ms is not None else float(m.get("tree_draft_ms") or 0.0),
            source=src,
        )

    def chain_drafting_ms(self, num_steps: int, topk: int = 1) -> float:
        return (num_steps + 1) * (self.draft_step_ms + topk * self.draft_token_ms)


@dataclass(frozen=True)
class BreakEven:
    """L* of one speculative shape."""

    shape: str                   # "chain" (EAGLE-style, topk 1), "tree" (NGRAM) or "eagle-tree" (topk > 1)
    draft_tokens: int            # SGLang's --speculative-num-draft-tokens: positions verified per step
    num_steps: int | None        # draft forwards of a chain / EAGLE tree
    topk: int | None
    verify_comm_ms: float        # communication of the verify step
    extra_comm_ms: float         # verify communication minus plain decode communication
    extra_compute_ms: float      # (N - 1) x token_ms
    drafting_ms: float
    comm_only: float | None      # communication-only lower bound (needs the decode step time)
    predicted: float | None      # with compute and drafting (needs the decode step time)
    max_accept: int              # the longest accept length one step can reach
    interpolated: bool           # the verify size was not measured, but interpolated
    verify_inter_node_ms: float | None = None  # of verify_comm_ms, what crosses between nodes (None: one node)
    width_source: str | None = None  # of a server's settings: the width in force or the launch flag (server_frames)

    @property
    def reachable(self) -> bool | None:
        value = self.predicted if self.predicted is not None else self.comm_only
        return None if value is None else value <= self.max_accept

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["reachable"] = self.reachable
        return d


@dataclass(frozen=True)
class Prediction:
    allreduces_per_forward: int
    decode_comm_ms: float
    decode_step_ms: float | None
    costs: StepCosts
    rows: tuple[BreakEven, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    nnodes: int = 1                            # nodes the probed ranks spanned
    decode_inter_node_ms: float | None = None  # of decode_comm_ms, what crosses between nodes

    def row(self, shape: str, draft_tokens: int) -> BreakEven | None:
        for r in self.rows:
            if r.shape == shape and r.draft_tokens == draft_tokens:
                return r
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"allreduces_per_forward": self.allreduces_per_forward, "decode_comm_ms": self.decode_comm_ms,
                "decode_step_ms": self.decode_step_ms, "costs": asdict(self.costs),
                "rows": [r.to_dict() for r in self.rows], "notes": list(self.notes), "nnodes": self.nnodes,
                "decode_inter_node_ms": self.decode_inter_node_ms}


def _row(result: dict, costs: StepCosts, decode_comm: float, shape: str, n: int, num_steps: int | None,
         topk: int | None) -> BreakEven:
    lat, interp = latency_ms(result, n)
    verify = forward_allreduces(result) * lat
    extra = verify - decode_comm
    compute = (n - 1) * costs.token_ms
    if shape == "tree":
        drafting, max_accept = costs.tree_draft_ms, n
    else:
        drafting = costs.chain_drafting_ms(num_steps or 0, topk or 1)
        max_accept = (num_steps or 0) + 1
    t = costs.decode_step_ms
    # A verify step does a decode step's work and more: a measured verify all-reduce faster than
    # the decode one is noise, and counts as no extra communication.
    counted = max(0.0, extra)
    return BreakEven(shape=shape, draft_tokens=n, num_steps=num_steps, topk=topk, verify_comm_ms=verify,
                     extra_comm_ms=extra, extra_compute_ms=compute, drafting_ms=drafting,
                     comm_only=predicted_break_even(t, counted) if t else None,
                     predicted=predicted_break_even(t, counted, compute, drafting) if t else None,
                     max_accept=max_accept, interpolated=interp,
                     verify_inter_node_ms=inter_node_comm_ms(result, n))


def predict(result: dict, costs: StepCosts | None = None, *, draft_tokens: list[int] | None = None) -> Prediction:
    """L* for a chain and an NGRAM tree at each verify width the probe measured (2 or more)."""
    costs = costs or StepCosts.from_result(result)
    widths = draft_tokens or [int(s["tokens"]) for s in _sizes(result) if int(s["tokens"]) >= 2]
    dc = decode_comm_ms(result)
    rows = []
    for n in widths:
        rows.append(_row(result, costs, dc, "chain", n, n - 1, 1))
        rows.append(_row(result, costs, dc, "tree", n, None, None))
    notes = []
    if not costs.decode_step_ms:
        notes.append("L* needs the plain decode step time: give --decode-step-ms (a plain server's median "
                     "inter-token latency at concurrency 1)")
    elif not (costs.draft_step_ms or costs.tree_draft_ms or costs.token_ms):
        notes.append("drafting and extra compute are not known, so the prediction equals the "
                     "communication-only lower bound")
    if costs.decode_step_ms and dc > costs.decode_step_ms:
        why = (" (CUDA graphs or SGLang's custom all-reduce)"
               if (result.get("allreduce") or {}).get("device") == "cuda" else "")
        notes.append("the plain decode step (%.2f ms) is shorter than the probe's all-reduce time for it "
                     "(%.2f ms): the server's decode all-reduce is cheaper than what the probe measured%s"
                     % (costs.decode_step_ms, dc, why))
    nodes = node_count(result)
    decode_inter = None
    if nodes > 1:
        path = (result.get("allreduce") or {}).get("decode_path") or {}
        if path.get("inter_node_ms") is not None:
            decode_inter = forward_allreduces(result) * float(path["inter_node_ms"])
        else:
            decode_inter = inter_node_comm_ms(result, 1)
        if costs.decode_step_ms:
            notes.append(f"{spread_text(result)}: L* is against this deployment's own plain decode step "
                         f"({costs.decode_step_ms:.2f} ms), which pays NCCL and the inter-node all-reduce too "
                         "(SGLang builds no custom all-reduce for a group that spans nodes), not against one node's")
    return Prediction(allreduces_per_forward=forward_allreduces(result), decode_comm_ms=dc,
                      decode_step_ms=costs.decode_step_ms, costs=costs, rows=tuple(rows), notes=tuple(notes),
                      nnodes=nodes, decode_inter_node_ms=decode_inter)


def predict_for_settings(result: dict, settings: dict, costs: StepCosts | None = None, *,
                         frame: ServerFrame | None = None) -> BreakEven | None:
    """L* of one profile's speculative settings (``Profile.speculative_settings()``), or None
    for a plain server or settings that do not say how many positions a step verifies. ``frame``, a live frame of
    the profile's server: the width it runs now replaces the launch flag where it carries one; the row names which
    (``width_source``)."""
    settings, source = settings_in_force(settings, frame)
    row = _settings_row(result, settings, costs)
    return replace(row, width_source=source) if row is not None else None


def _settings_row(result: dict, settings: dict, costs: StepCosts | None) -> BreakEven | None:
    algo = (settings.get("algorithm") or "").upper()
    if not algo or algo == "NONE":
        return None
    costs = costs or StepCosts.from_result(result)
    dc = decode_comm_ms(result)
    if algo == "NGRAM":
        n = int(settings.get("draft_tokens") or NGRAM_DEFAULT_DRAFT_TOKENS)
        return _row(result, costs, dc, "tree", n, None, None)
    steps = settings.get("num_steps")
    if steps is None:
        return None
    steps = int(steps)
    topk = int(settings.get("topk") or 1)
    if topk == 1:
        return _row(result, costs, dc, "chain", steps + 1, steps, 1)
    n = settings.get("draft_tokens")
    if n is None:
        return None
    return _row(result, costs, dc, "eagle-tree", int(n), steps, topk)
