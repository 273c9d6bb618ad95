"""N-gram speculation as SGLang's NGRAM worker does it: one trie of recent token runs shared
by all requests, suffix matching, and a breadth-first draft tree.

What goes into the trie, and when (sglang 0.5.23 wheel, sglang/srt/speculative/ngram_worker.py):

* Nothing at prefill: the prompt is not inserted (the FIXME at ngram_worker.py:403-407).
* After each verify step, ``_update_ngram_corpus`` (ngram_worker.py:396-420) inserts, per request,
  the last ``max_trie_depth`` tokens of prompt + output (``_efficient_concat_last_n``,
  ngram_worker.py:166-172): the same tail the step's drafts were matched on
  (``_prepare_draft_tokens``, ngram_worker.py:250-298). So a step's accepted tokens reach the
  trie at the request's next step, a request's last step never does, and a prompt counts only
  through its last ``max_trie_depth`` tokens.
* ``/flush_cache`` empties the trie (``clear_cache_pool``, ngram_worker.py:150-152).

The trie (sglang 0.5.23 wheel, sglang/kernels/jit/csrc/ngram_corpus/trie.cpp):

* ``Trie::insert`` (trie.cpp:23-67): for every start position of the inserted tail, the run of
  up to ``max_trie_depth`` tokens from there is walked from the root; a new child goes to the
  front of its parent's recency list, a visited one moves there and its frequency grows by
  one (overlapping tails revisit the same runs), and the whole path becomes most recently
  used in one global LRU list.
* Capacity: a pool of ``capacity`` nodes, the root included (``--speculative-ngram-capacity``,
  10 million by default: sglang/srt/arg_groups/fields/spec.py:268-271); when a run needs more
  nodes than are free, ``Trie::squeeze`` (trie.cpp:69-93) frees the least recently used ones
  (always leaves). The simulator honours the same capacity: a node takes about 100 bytes here,
  so a full default trie holds about 1 GB, as SGLang's own pool holds its 10 million nodes.
* Matching (``Trie::match``, trie.cpp:204-218, with ``advanceMatchState_`` trie.cpp:152-190 and
  ``getExpandableAnchors_`` trie.cpp:192-202): per request, the trie nodes of the suffixes of its
  tail of lengths 1..``max_trie_depth``, advanced token by token from the previous step (a
  suffix missing then stays missing) and rebuilt from the tail when a node was evicted or the
  trie was reset; those with children are the anchors, longest first.
* Drafting, ``BFS`` (``Trie::buildRecency``, trie.cpp:220-264): from each anchor in turn,
  breadth first, most recent continuation first, ``max(1, int(b))`` children per node, where b
  starts at ``(D - depth) * s + min_bfs_breadth`` (``D = max_trie_depth - 1``,
  ``s = (max_bfs_breadth - min_bfs_breadth) / D``) and drops by s per level; until the tree holds
  ``num_draft_tokens - 1`` tokens (``Param::get_draft_token_num``, param.h:30-38). A token already
  under the same parent takes no new slot. ``PROB`` (``Trie::buildFrequency``, trie.cpp:266-331):
  best first by the product of frequency shares among each node's ``max_bfs_breadth`` most
  frequent children. A tree left short is padded with token 0 under the root
  (``fillResult``, result.cpp:34-38), which the target may then accept like any draft.

The 2025 releases (sglang 0.5.6 wheel, sglang/srt/speculative/ngram_worker.py:123-135 and
:280-292, cpp_ngram/ngram.cpp:138-163, :195-245, :257-294) differ: matching walks the windows
``max_match_window_size`` down to ``min_match_window_size`` from the root every step, leaves
included; the breadth scale is ``(max_bfs_breadth - min_bfs_breadth) / (max_window - min_window
+ 1)`` with b starting at ``(max_window - window) * s + min_bfs_breadth``; and run starts stop
``min_match_window_size`` tokens before the end of the inserted tail.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import List, Optional, Sequence

ERA_0523 = "0.5.23"
ERA_2025 = "2025"
SIZE_T = 1 << 64


def ngram_settings_problem(max_trie_depth: int, min_bfs_breadth: int, max_bfs_breadth: int, num_draft_tokens: int,
                           capacity: int) -> Optional[str]:
    """Why SGLang's n-gram corpus refuses these settings at start, or None.

    The checks of ``Ngram::Ngram`` (sglang 0.5.23 wheel, sglang/kernels/jit/csrc/ngram_corpus/ngram.cpp:13-30),
    on the values as it holds them: ``size_t`` casts of the Python ints
    (ngram_corpus_ffi.cpp:34-37), so a negative breadth counts as a huge one. A negative trie depth
    passes them there and a capacity below 1 leaves the node pool without a root (trie.cpp:14-20);
    the simulator refuses both, in a sentence of its own.
    """
    depth, low, high, tokens = (int(v) % SIZE_T for v in (max_trie_depth, min_bfs_breadth, max_bfs_breadth,
                                                          num_draft_tokens))
    if not depth > 1:
        return "param_.max_trie_depth must be greater than 1, current value: %d" % depth
    if not low > 0:
        return "min_bfs_breadth must be greater than 0, current value: %d" % low
    if not low <= high:
        return ("min_bfs_breadth must be less than or equal to max_bfs_breadth, current min_bfs_breadth: %d, "
                "max_bfs_breadth: %d" % (low, high))
    if not tokens > 0:
        return "draft_token_num must be greater than 0, current value: %d" % tokens
    if int(max_trie_depth) < 0 or int(num_draft_tokens) < 0:
        return ("speculative_ngram_max_trie_depth and speculative_num_draft_tokens must not be negative "
                "(SGLang would read them as %d and %d)" % (depth, tokens))
    if int(capacity) < 1:
        return "speculative_ngram_capacity must be at least 1 (the trie's root is one of its nodes)"
    return None


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


class TrieNode:
    """One token of a run.

    ``kids`` is None (a leaf), the only child itself, or a dict of two or more children whose
    insertion order is their recency (most recent last): most trie nodes have one child, and a
    dict each would triple the memory a full trie of SGLang's default 10 million nodes takes.
    ``prev``/``next`` link the node into the trie's global LRU list.
    """

    __slots__ = ("kids", "parent", "token", "freq", "alive", "prev", "next")

    def __init__(self, token: int, parent: Optional["TrieNode"]):
        self.kids = None
        self.parent = parent
        self.token = token
        self.freq = 1
        self.alive = True
        self.prev = self.next = self


def child_of(node: TrieNode, tok: int) -> Optional[TrieNode]:
    kids = node.kids
    if kids is None:
        return None
    if kids.__class__ is TrieNode:
        return kids if kids.token == tok else None
    return kids.get(tok)


def kids_recent_first(node: TrieNode) -> List[TrieNode]:
    kids = node.kids
    if kids is None:
        return []
    if kids.__class__ is TrieNode:
        return [kids]
    return list(reversed(kids.values()))


def _add_kid(parent: TrieNode, child: TrieNode) -> None:
    kids = parent.kids
    if kids is None:
        parent.kids = child
    elif kids.__class__ is TrieNode:
        parent.kids = {kids.token: kids, child.token: child}
    else:
        kids[child.token] = child


def _touch_kid(parent: TrieNode, child: TrieNode) -> None:
    """``child`` becomes its parent's most recent continuation."""
    kids = parent.kids
    if kids.__class__ is not TrieNode:
        del kids[child.token]
        kids[child.token] = child


def _drop_kid(parent: TrieNode, child: TrieNode) -> None:
    kids = parent.kids
    if kids is None:
        return
    if kids.__class__ is TrieNode:
        if kids is child:
            parent.kids = None
        return
    if kids.get(child.token) is child:
        del kids[child.token]
        if len(kids) == 1:
            parent.kids = next(iter(kids.values()))


class NgramStream:
    """One request's match state: its anchors (trie nodes of its suffixes, shortest first)."""

    __slots__ = ("anchors", "processed", "epoch")

    def __init__(self):
        self.anchors: List[Optional[TrieNode]] = []
        self.processed = 0  # the request length the anchors cover
        self.epoch = 0


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
        era: str = ERA_0523,
    ):
        self.era = ERA_2025 if era in (ERA_2025, "0.4") else ERA_0523
        problem = ngram_settings_problem(max_trie_depth, min_bfs_breadth, max_bfs_breadth, num_draft_tokens, capacity)
        if problem:
            raise ValueError(problem)
        self.depth = int(max_trie_depth)
        self.min_breadth = int(min_bfs_breadth)
        self.max_breadth = int(max_bfs_breadth)
        self.slots = int(num_draft_tokens) - 1
        self.by_count = str(match_type).upper() == "PROB"
        self.capacity = int(capacity)
        if self.era == ERA_2025:
            self.min_window = max(1, int(min_match_window))
            self.max_window = min(self.depth - 1, int(max_match_window)) if max_match_window else self.depth - 1
            self.max_window = max(self.min_window, self.max_window)
            self.scale = (self.max_breadth - self.min_breadth) / float(self.max_window - self.min_window + 1)
            self.top = float(self.max_window)
            self.start_gap = self.min_window  # run starts i with i + min_window < len
        else:
            self.min_window = 1
            self.max_window = self.depth
            top = max(1, self.depth - 1)
            self.scale = (self.max_breadth - self.min_breadth) / float(top)
            self.top = float(top)
            self.start_gap = 0
        self.root = TrieNode(-1, None)
        self.lru = TrieNode(-2, None)  # the LRU list's sentinel: .next least, .prev most recently used
        self.nodes = 0
        self.epoch = 1
        self.resets = 0
        self.evicted = 0
        self.inserted_tokens = 0

    # -- life ------------------------------------------------------------------------------
    def reset(self) -> None:
        """``/flush_cache``: an empty trie; every request's anchors are rebuilt."""
        self.root = TrieNode(-1, None)
        self.lru = TrieNode(-2, None)
        self.nodes = 0
        self.epoch += 1
        self.resets += 1

    def new_stream(self) -> NgramStream:
        return NgramStream()

    # -- insertion --------------------------------------------------------------------------
    def insert(self, tokens: Sequence[int]) -> None:
        """Insert one request's tail (``Trie::insert``): every run starting in it."""
        n = len(tokens)
        depth = self.depth
        head = self.lru
        self.inserted_tokens += n
        for i in range(0, n - self.start_gap):
            run = tokens[i:i + depth]
            free = self.capacity - 1 - self.nodes
            if len(run) > free:
                self._squeeze(len(run) - free)
            cur = self.root
            path = []
            for tok in run:
                child = child_of(cur, tok)
                if child is None:
                    child = TrieNode(tok, cur)
                    _add_kid(cur, child)
                    self.nodes += 1
                else:
                    child.freq += 1
                    _touch_kid(cur, child)
                path.append(child)
                cur = child
            for node in reversed(path):  # the shortest prefix ends up most recent
                if node.prev is not node:  # a node already in the list leaves its place
                    node.prev.next = node.next
                    node.next.prev = node.prev
                last = head.prev
                node.prev, node.next = last, head
                last.next = head.prev = node

    def _squeeze(self, count: int) -> None:
        head = self.lru
        while count > 0 and head.next is not head:
            node = head.next
            head.next = node.next
            node.next.prev = head
            node.prev = node.next = node
            if node.parent is not None:
                _drop_kid(node.parent, node)
            node.alive = False
            self.nodes -= 1
            self.evicted += 1
            count -= 1

    # -- matching ---------------------------------------------------------------------------
    def _walk(self, tokens: Sequence[int]) -> Optional[TrieNode]:
        cur = self.root
        for tok in tokens:
            cur = child_of(cur, tok)
            if cur is None:
                return None
        return cur

    def _rebuild(self, stream: NgramStream, tail: Sequence[int], total_len: int) -> None:
        n = min(len(tail), self.depth)
        stream.anchors = [self._walk(tail[len(tail) - d:]) for d in range(1, n + 1)]
        stream.processed = total_len
        stream.epoch = self.epoch

    def _advance(self, stream: NgramStream, new_tokens: Sequence[int], total_len: int) -> bool:
        anchors = stream.anchors
        for node in anchors:
            if node is not None and not node.alive:
                return False
        depth = self.depth
        root = self.root
        for tok in new_tokens:
            size = min(len(anchors) + 1, depth)
            nxt: List[Optional[TrieNode]] = [None] * size
            nxt[0] = child_of(root, tok)
            for d in range(1, size):
                prev = anchors[d - 1]
                if prev is not None and prev.kids is not None:
                    nxt[d] = child_of(prev, tok)
            anchors = nxt
        stream.anchors = anchors
        stream.processed = total_len
        return True

    def anchors(self, stream: NgramStream, tail: Sequence[int], total_len: int):
        """(node, suffix length) pairs to draft from, longest first."""
        if self.era == ERA_2025:
            out = []
            tail = tail[-self.max_window:]
            for w in range(min(len(tail), self.max_window), self.min_window - 1, -1):
                node = self._walk(tail[len(tail) - w:])
                if node is not None:
                    out.append((node, w))
            return out
        appended = total_len - stream.processed
        can_advance = (stream.epoch == self.epoch and appended >= 0 and appended <= len(tail)
                       and len(stream.anchors) == min(stream.processed, self.depth))
        if not (can_advance and self._advance(stream, tail[len(tail) - appended:] if appended else (), total_len)):
            self._rebuild(stream, tail, total_len)
        out = []
        anchors = stream.anchors
        for d in range(len(anchors), 0, -1):
            node = anchors[d - 1]
            if node is not None and node.alive and node.kids:
                out.append((node, d))
        return out

    # -- drafting -----------------------------------------------------------------------------
    def draft(self, stream: NgramStream, tail: Sequence[int], total_len: int) -> DraftTree:
        """The draft tree for a request whose last tokens are ``tail`` (``total_len`` in all)."""
        tree = DraftTree()
        if self.slots <= 0 or not tail:
            return tree
        found = self.anchors(stream, tail, total_len)
        if self.by_count:
            self._draft_prob(tree, found)
        else:
            self._draft_bfs(tree, found)
        if len(tree) < self.slots:
            tree.add(0, 0)  # fillResult's zero padding: token 0 under the root
        return tree

    def _draft_bfs(self, tree: DraftTree, found) -> None:
        slots = self.slots
        scale = self.scale
        for start, depth in found:
            if len(tree) >= slots:
                break
            queue = deque(((0, (self.top - depth) * scale + self.min_breadth, start),))
            while queue and len(tree) < slots:
                parent, breadth_f, tnode = queue.popleft()
                if tnode.kids is None:
                    continue
                breadth = max(1, int(breadth_f))
                taken = 0
                for kid in kids_recent_first(tnode):
                    if taken >= breadth or len(tree) >= slots:
                        break
                    idx = tree.add(parent, kid.token)
                    queue.append((idx, breadth_f - scale, kid))
                    taken += 1

    def _draft_prob(self, tree: DraftTree, found) -> None:
        slots = self.slots
        top_k = self.max_breadth
        heap: list = []
        order = 0

        def push(parent: int, tnode: TrieNode, prob: float) -> None:
            nonlocal order
            if tnode.kids is None:
                return
            best = sorted(kids_recent_first(tnode), key=lambda c: (-c.freq, c.token))[:top_k]
            total = float(sum(c.freq for c in best)) or 1.0
            for c in best:
                order += 1
                heapq.heappush(heap, (-c.freq / total * prob, order, parent, c))

        for start, _ in found:
            push(0, start, 1.0)
            while heap and len(tree) < slots:
                neg, _, parent, tnode = heapq.heappop(heap)
                idx = tree.add(parent, tnode.token)
                push(idx, tnode, -neg)


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


__all__ = ["DraftTree", "NgramCache", "NgramStream", "verify_tree", "draft_depth", "ngram_settings_problem"]
