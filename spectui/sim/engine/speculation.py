"""One decode step of one request: plain decoding, or draft + exact verification.

A speculator proposes a draft tree, the target's own tokens are walked through it, and the
request commits the accepted drafts plus the target's token after them (the bonus token).
What a step accepted is what the counters count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from spectui.sim.engine.drafter import Drafter
from spectui.sim.engine.ngram import NgramCache, verify_tree
from spectui.sim.engine.request import Request
from spectui.sim.model.markov import TargetModel

EAGLE_FAMILY = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "DFLASH", "DSPARK", "UNO")


@dataclass
class SpecConfig:
    algorithm: str = "NONE"  # NONE, NGRAM or one of EAGLE_FAMILY
    num_steps: int = 0
    eagle_topk: int = 1
    num_draft_tokens: int = 1
    agreement: float = 0.6
    decay: float = 0.85
    ngram_min_bfs_breadth: int = 1
    ngram_max_bfs_breadth: int = 10
    ngram_match_type: str = "BFS"
    ngram_max_trie_depth: int = 18
    ngram_capacity: int = 10_000_000
    ngram_min_match_window: int = 1
    ngram_max_match_window: int = 0  # 0: the trie depth
    era: str = "0.5.23"  # the release whose NGRAM matching rules apply (see ngram.NgramCache)
    adaptive_slots: Optional[dict] = None  # --speculative-adaptive: the config's slots (engine.adaptive)

    @property
    def enabled(self) -> bool:
        return self.algorithm != "NONE"


class Speculator:
    """Plain decoding: one token per step, no drafts."""

    def __init__(self, model: TargetModel, config: SpecConfig):
        self.model = model
        self.config = config

    def on_prefill(self, req: Request, first_tokens) -> None:
        pass

    def step(self, req: Request) -> Tuple[list, int]:
        """Returns (committed tokens, correct drafts)."""
        return req.commit(1, self.model.vocab), 0

    def step_batch(self, batch: Sequence[Request]) -> List[Tuple[list, int]]:
        """One decode step of every request of a batch, in order."""
        return [self.step(req) for req in batch]

    def reset(self) -> None:
        pass


class NgramSpeculator(Speculator):
    """SGLang's NGRAM worker: no draft model, drafts from the shared trie (see ``ngram``).

    A decode step drafts for every request of the batch first, then verifies, then inserts
    each request's tail (the last ``max_trie_depth`` tokens it was matched on), as
    ``NGRAMWorker.forward_batch_generation`` does (sglang 0.5.23 wheel,
    sglang/srt/speculative/ngram_worker.py:430-527): nothing is inserted at prefill.
    """

    def __init__(self, model: TargetModel, config: SpecConfig):
        super().__init__(model, config)
        self.cache = NgramCache(
            max_trie_depth=config.ngram_max_trie_depth,
            min_bfs_breadth=config.ngram_min_bfs_breadth,
            max_bfs_breadth=config.ngram_max_bfs_breadth,
            num_draft_tokens=config.num_draft_tokens,
            match_type=config.ngram_match_type,
            capacity=config.ngram_capacity,
            min_match_window=config.ngram_min_match_window,
            max_match_window=config.ngram_max_match_window,
            era=config.era,
        )

    def on_prefill(self, req: Request, first_tokens) -> None:
        req.spec_state = self.cache.new_stream()

    def _tail(self, req: Request) -> List[int]:
        """The request's last ``max_trie_depth`` tokens (``_efficient_concat_last_n``)."""
        n = self.cache.depth
        out = req.output_ids
        if len(out) >= n:
            return out[-n:]
        return req.prompt_ids[-(n - len(out)):] + out

    def step(self, req: Request) -> Tuple[list, int]:
        return self.step_batch([req])[0]

    def step_batch(self, batch: Sequence[Request]) -> List[Tuple[list, int]]:
        cache = self.cache
        tails = [self._tail(req) for req in batch]
        trees = [cache.draft(req.spec_state, tail, req.seq_len) for req, tail in zip(batch, tails)]
        results = []
        vocab = self.model.vocab
        for req, tree in zip(batch, trees):
            correct = verify_tree(tree, req.peek)
            out = req.commit(correct + 1, vocab)
            results.append((out, min(correct, max(0, len(out) - 1))))
        for tail in tails:
            cache.insert(tail)
        return results

    def reset(self) -> None:
        self.cache.reset()


class DrafterSpeculator(Speculator):
    def __init__(self, model: TargetModel, config: SpecConfig):
        super().__init__(model, config)
        self.drafters = {}
        self.drafter = self._drafter(config.num_steps, config.num_draft_tokens)

    def _drafter(self, num_steps: int, num_draft_tokens: int) -> Drafter:
        key = (num_steps, num_draft_tokens)
        if key not in self.drafters:
            self.drafters[key] = Drafter(self.model, num_steps=num_steps, topk=self.config.eagle_topk,
                                         num_draft_tokens=num_draft_tokens, agreement=self.config.agreement,
                                         decay=self.config.decay)
        return self.drafters[key]

    def set_steps(self, num_steps: int) -> None:
        """Adaptive speculation switched to a chain of ``num_steps`` (0: no drafting)."""
        self.config.num_steps, self.config.num_draft_tokens = num_steps, num_steps + 1
        if num_steps > 0:
            self.drafter = self._drafter(num_steps, num_steps + 1)

    def step(self, req: Request) -> Tuple[list, int]:
        if self.config.num_steps == 0:  # adaptive speculation at 0 steps: the target's token alone
            return req.commit(1, self.model.vocab), 0
        last = req.output_ids[-1] if req.output_ids else (req.prompt_ids[-1] if req.prompt_ids else 0)
        tree = self.drafter.draft(last, req.peek, req.ctx.seed, len(req.output_ids))
        correct = verify_tree(tree, req.peek)
        out = req.commit(correct + 1, self.model.vocab)
        return out, min(correct, max(0, len(out) - 1))


def make_speculator(model: TargetModel, config: Optional[SpecConfig]) -> Speculator:
    config = config or SpecConfig()
    if config.algorithm == "NGRAM":
        return NgramSpeculator(model, config)
    if config.algorithm in EAGLE_FAMILY:
        return DrafterSpeculator(model, config)
    return Speculator(model, config)
