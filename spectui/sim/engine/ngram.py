"""N-gram speculation as SGLang's NGRAM worker does it: a trie of recent token runs, suffix
matching, and a BFS draft tree.

* Every prompt and every committed output token goes into one trie shared by all requests:
  for each position, the run of up to ``max_trie_depth`` tokens starting there. A request keeps
  the trie nodes of its current suffixes (lengths 1..depth), so inserting a token and finding
  the matches of the context are one pass over at most ``depth`` nodes.
* Drafting walks the matched suffixes longest first (lengths ``min_match_window`` to
  ``max_match_window``, the trie depth unless an older release's window flags say otherwise). From each it expands continuations
  breadth first, most recently seen first (``BFS``) or most frequent first (``PROB``), with a
  breadth that is wide for short matches and narrows for long ones and with depth, until the
  tree holds ``num_draft_tokens - 1`` tokens (the root is the last committed token).
* Memory is bounded: when the trie outgrows its capacity it starts over empty.
"""

from __future__ import annotations

from collections import deque
from typing import List

# The simulator's own ceiling on trie nodes (about 150 bytes each in CPython).
SIM_MAX_NODES = 300_000
_COUNT = -1  # key of a node's visit count (PROB ordering); token ids are >= 0


class DraftTree:
    """Draft tokens as a tree: node 0 is the root (the last committed token)."""

    __slots__ = ("tokens", "parents", "children")

    def __init__(self):
        self.tokens: List[int] = [-1]
        self.parents: List[int] = [-1]
        self.children: List[dict] = [{}]

    def add(self, parent: int, token: int) -> int:
        idx = self.children[parent].get(token)
        if idx is None:
            idx = len(self.tokens)
            self.tokens.append(token)
            self.parents.append(parent)
            self.children.append({})
            self.children[parent][token] = idx
        return idx

    def __len__(self) -> int:  # draft tokens, root excluded
        return len(self.tokens) - 1


class NgramStream:
    """One request's place in the trie: the nodes of its current suffixes, shortest first."""

    __slots__ = ("pointers", "generation")

    def __init__(self, generation: int):
        self.pointers: List[dict] = []
        self.generation = generation


class NgramCache:
    def __init__(
        self,
        max_trie_depth: int = 18,
        min_bfs_breadth: int = 1,
        max_bfs_breadth: int = 10,
        num_draft_tokens: int = 8,
        match_type: str = "BFS",
        capacity: int = 10_000_000,
        min_match_window: int = 1,
        max_match_window: int = 0,
    ):
        self.depth = max(2, int(max_trie_depth))
        self.min_window = max(1, int(min_match_window))
        self.max_window = min(self.depth, int(max_match_window)) if max_match_window else self.depth
        self.min_breadth = max(1, int(min_bfs_breadth))
        self.max_breadth = max(self.min_breadth, int(max_bfs_breadth))
        self.slots = max(0, int(num_draft_tokens) - 1)
        self.by_count = str(match_type).upper() == "PROB"
        self.capacity = max(1000, min(int(capacity), SIM_MAX_NODES))
        windows = max(1, self.max_window - self.min_window + 1)
        self.scale = (self.max_breadth - self.min_breadth) / float(windows)
        self.root: dict = {}
        self.nodes = 0
        self.generation = 0
        self.resets = 0

    def reset(self) -> None:
        self.root = {}
        self.nodes = 0
        self.generation += 1
        self.resets += 1

    def new_stream(self) -> NgramStream:
        return NgramStream(self.generation)

    def insert(self, stream: NgramStream, tokens) -> None:
        """Append ``tokens`` to a request's sequence, recording every run they end."""
        if stream.generation != self.generation:
            stream.pointers = []  # the trie started over; only new runs count
            stream.generation = self.generation
        depth = self.depth
        by_count = self.by_count
        for tok in tokens:
            ptrs = stream.pointers
            new = []
            node = self.root
            parents = [node]
            parents.extend(ptrs[: depth - 1])
            for node in parents:
                child = node.get(tok)
                if child is None:
                    child = {}
                    node[tok] = child
                    self.nodes += 1
                else:
                    del node[tok]  # most recent continuation last
                    node[tok] = child
                if by_count:
                    child[_COUNT] = child.get(_COUNT, 0) + 1
                new.append(child)
            stream.pointers = new
        if self.nodes > self.capacity:
            self.reset()

    def _ordered(self, node: dict):
        if self.by_count:
            keys = [k for k in node if k != _COUNT]
            keys.sort(key=lambda k: -node[k].get(_COUNT, 0))
            return keys
        return reversed(node)

    def draft(self, stream: NgramStream) -> DraftTree:
        tree = DraftTree()
        slots = self.slots
        if slots <= 0 or stream.generation != self.generation:
            return tree
        ptrs = stream.pointers
        scale = self.scale
        for w in range(min(len(ptrs), self.max_window), self.min_window - 1, -1):
            start = ptrs[w - 1]
            if not start or (self.by_count and len(start) == 1 and _COUNT in start):
                continue
            queue = deque(((0, (self.max_window - w) * scale + self.min_breadth, start),))
            while queue and len(tree.tokens) <= slots:
                parent, breadth_f, tnode = queue.popleft()
                breadth = max(1, int(breadth_f))
                taken = 0
                for tok in self._ordered(tnode):
                    if tok == _COUNT:
                        continue
                    if taken >= breadth or len(tree.tokens) > slots:
                        break
                    idx = tree.add(parent, tok)
                    queue.append((idx, breadth_f - scale, tnode[tok]))
                    taken += 1
            if len(tree.tokens) > slots:
                break
        return tree


def verify_tree(tree: DraftTree, peek) -> int:
    """Walk the tree along the target's own tokens; return the number of correct drafts.

    ``peek(k)`` is the target's token k positions past the last committed one.
    """
    node = 0
    depth = 0
    children = tree.children
    while True:
        nxt = children[node].get(peek(depth))
        if nxt is None:
            return depth
        node = nxt
        depth += 1


def draft_depth(tree: DraftTree, idx: int) -> int:
    d = 0
    while idx > 0:
        idx = tree.parents[idx]
        d += 1
    return d


__all__ = ["DraftTree", "NgramCache", "NgramStream", "verify_tree", "draft_depth", "SIM_MAX_NODES"]
