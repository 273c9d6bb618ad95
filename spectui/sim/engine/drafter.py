"""The EAGLE / EAGLE3 / STANDALONE drafter: proposes the target's next tokens as a chain or a
top-k tree, and is right with a probability that decays with depth.

At depth ``d`` (1-based) the drafter ranks the target's true next token first with
probability ``p_d = agreement * decay**(d-1)``; otherwise the true token sits at rank 2, 3, ...
with geometrically falling odds (or nowhere in its list). The shape of the draft tree is
SGLang's: ``num_steps`` expansions of the ``topk`` best nodes by cumulative drafter score,
keeping the ``num_draft_tokens - 1`` best nodes overall (with ``topk == 1`` a chain of
``num_steps`` tokens). Each step the tree is filled with real token ids: the target's own token
where the drafter got it right, the corpus model's other likely words elsewhere. Verification
then walks that tree against the target exactly like any other draft tree.
"""

from __future__ import annotations

import math
import re
from typing import Callable, Dict, List, Optional, Tuple

from spectui.sim.engine.ngram import DraftTree
from spectui.sim.model.markov import TargetModel, uniforms

SECOND_CHOICE = 0.35  # chance that the true token is the next rank down, given it is not this one
DEFAULT_DECAY = 0.85

# Default agreement by how the draft model relates to the target (see default_agreement).
AGREEMENT_MATCHED = 0.60
AGREEMENT_STANDALONE = 0.52
AGREEMENT_RELATED = 0.36
AGREEMENT_UNRELATED = 0.15
AGREEMENT_NEXTN = 0.66  # a model's own MTP head


def _name_key(path: Optional[str]) -> str:
    base = (path or "").rstrip("/").split("/")[-1].lower()
    return re.sub(r"[^a-z0-9.]", "", base)


def _family(path: Optional[str]) -> str:
    base = (path or "").rstrip("/").split("/")[-1].lower()
    m = re.match(r"[a-z]+", base.replace("meta-", ""))
    return m.group(0) if m else ""


def default_agreement(algorithm: str, target_path: Optional[str], draft_path: Optional[str]) -> float:
    """The drafter's depth-1 agreement, guessed from the model paths.

    A drafter trained for this target (its path names the target, e.g. ``Kimi-K2.5-eagle3``
    for ``Kimi-K2.5``) agrees most; one of the same family but another release (a K2 drafter
    on K2.5) much less; an unrelated one hardly at all. NEXTN uses the target's own head.
    """
    algo = (algorithm or "").upper()
    if algo == "NEXTN" or not draft_path:
        return AGREEMENT_NEXTN
    target_key = _name_key(target_path)
    draft_key = _name_key(draft_path)
    base = AGREEMENT_STANDALONE if algo == "STANDALONE" else AGREEMENT_MATCHED
    if target_key and target_key in draft_key:
        return base
    if _family(target_path) and _family(target_path) == _family(draft_path):
        return AGREEMENT_RELATED
    if algo == "STANDALONE":
        return AGREEMENT_RELATED
    return AGREEMENT_UNRELATED


class Drafter:
    def __init__(
        self,
        model: TargetModel,
        num_steps: int,
        topk: int,
        num_draft_tokens: int,
        agreement: float,
        decay: float = DEFAULT_DECAY,
    ):
        self.model = model
        self.steps = max(1, int(num_steps))
        self.topk = max(1, int(topk))
        self.agreement = max(0.0, min(1.0, float(agreement)))
        self.decay = max(0.0, min(1.0, float(decay)))
        self.parent: List[int] = [-1]
        self.rank: List[int] = [0]
        self.depth: List[int] = [0]
        self.child_by_rank: List[Dict[int, int]] = [{}]
        self._build_shape(max(1, int(num_draft_tokens) - 1))

    # -- the drafter's belief about where the true token sits --------------------------------
    def p_first(self, depth: int) -> float:
        return self.agreement * self.decay ** (depth - 1)

    def rank_prob(self, depth: int, rank: int) -> float:
        p = self.p_first(depth)
        if rank == 1:
            return p
        return (1.0 - p) * SECOND_CHOICE * (1.0 - SECOND_CHOICE) ** (rank - 2)

    def sample_rank(self, depth: int, seed: int, pos: int) -> int:
        u, v, _ = uniforms(seed, pos, 3)
        if u < self.p_first(depth):
            return 1
        if v <= 0.0:
            return 2
        return 2 + int(math.log(v) / math.log(1.0 - SECOND_CHOICE))

    # -- tree shape ----------------------------------------------------------------------------
    def _build_shape(self, budget: int) -> None:
        # Candidate paths (tuples of ranks) with their cumulative scores, as EAGLE expands them.
        frontier: List[Tuple[float, Tuple[int, ...]]] = [(1.0, ())]
        pool: List[Tuple[float, Tuple[int, ...]]] = []
        for d in range(1, self.steps + 1):
            expanded = [
                (score * self.rank_prob(d, r), path + (r,))
                for score, path in frontier
                for r in range(1, self.topk + 1)
            ]
            pool.extend(expanded)
            expanded.sort(key=lambda sp: (-sp[0], len(sp[1]), sp[1]))
            frontier = expanded[: self.topk]
        pool.sort(key=lambda sp: (-sp[0], len(sp[1]), sp[1]))
        chosen = {path for _, path in pool[:budget]}
        # Keep the chosen set closed under prefixes, then number nodes parents-first.
        closed = set()
        for path in chosen:
            for i in range(1, len(path) + 1):
                closed.add(path[:i])
        index = {(): 0}
        for path in sorted(closed, key=lambda p: (len(p), p)):
            parent = index[path[:-1]]
            idx = len(self.parent)
            index[path] = idx
            self.parent.append(parent)
            self.rank.append(path[-1])
            self.depth.append(len(path))
            self.child_by_rank.append({})
            self.child_by_rank[parent][path[-1]] = idx

    @property
    def size(self) -> int:
        return len(self.parent) - 1

    # -- one step --------------------------------------------------------------------------------
    def draft(self, last_token: int, peek: Callable[[int], int], seed: int, pos: int) -> DraftTree:
        """The draft tree for one request whose next target tokens ``peek`` reveals."""
        true_at: Dict[int, int] = {}  # node -> the target's token at that node
        below: Dict[int, int] = {}  # node on the true path -> the target's next token below it
        cur = 0
        for d in range(1, self.steps + 1):
            tok = peek(d - 1)
            below[cur] = tok
            idx = self.child_by_rank[cur].get(self.sample_rank(d, seed, pos + d))
            if idx is None:
                break
            true_at[idx] = tok
            cur = idx
        tree = DraftTree()
        tokens = [last_token]
        likely = self.model.likely_next
        for idx in range(1, len(self.parent)):
            parent = self.parent[idx]
            tok = true_at.get(idx)
            if tok is None:
                avoid = below.get(parent)
                siblings = tree.children[parent]
                tok = -1
                for cand in likely(tokens[parent], 16)[self.rank[idx] - 1:]:
                    if cand != avoid and cand not in siblings:
                        tok = cand
                        break
                if tok < 0:
                    tok = -1000 - idx  # an id the target never emits
            tokens.append(tok)
            new = len(tree.tokens)
            tree.tokens.append(tok)
            tree.parents.append(parent)
            tree.children.append({})
            tree.children[parent].setdefault(tok, new)
        return tree
