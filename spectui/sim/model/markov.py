"""The target model: a seeded word-level text model with the habits that matter to speculation.

Each next token is drawn, deterministically from the request's seed and position, from:

* **copy** -- when the context's last tokens occurred earlier (in the prompt or the output),
  the model continues that earlier passage with a probability that grows with the length of
  the match (as the induction heads of a real model do), and wears off over a long copy run,
  unless the passage has been said three times already: then it is said again (and again);
* **text** -- otherwise an interpolated trigram/bigram/unigram model of the corpus;
* **noise** -- a model continues in the register of its prompt: the share of text draws is the
  prompt's *text-likeness* (the fraction of its adjacent token pairs the corpus knows), so a
  prompt of random tokens gets random tokens back.

The output of a request is a function of its prompt, seed and sampling knobs only: speculation
never changes it (verification is exact), which the tests check.
"""

from __future__ import annotations

import bisect
import functools
import zlib
from array import array
from importlib import resources
from typing import Dict, List, Optional, Sequence, Tuple

from spectui.sim.model.tokenizer import EOS_ID, Vocab, normalize_corpus, split_tokens

MASK64 = (1 << 64) - 1
KEY = 1 << 21  # pair key = a * KEY + b (vocab ids stay below 2**20)

# Copy probability by match length (index = length of the matched suffix, capped).
COPY_P = (0.0, 0.0, 0.28, 0.52, 0.66, 0.76, 0.78, 0.84, 0.88, 0.91, 0.93, 0.94, 0.95)
COPY_RUN_DECAY = 0.985  # per token already copied in the current run
REPEAT_MIN_MATCH = 6  # a match this long makes a position a copy of the earlier one
REPEAT_LEVEL = 2  # a passage said this many times before (3 in all) ...
REPEAT_P = 0.985  # ... is continued with this probability, however long the run
REPEAT_REENTRY_P = 0.8  # a shorter match into such a passage
MIN_COPY_DISTANCE = 24  # copying from closer than this many tokens back ...
SHORT_LOOP_FACTOR = 0.15  # ... is this much less likely
MAX_MATCH = len(COPY_P) - 1
# Mixture of the text component.
LAMBDA_TRI = 0.60
LAMBDA_BI = 0.28  # the rest is unigram
P_EOS_AFTER_SENTENCE = 0.04
P_EOS_NOISE = 0.002
TEXT_LIKENESS_FULL = 0.30  # share of known pairs at which a prompt counts as fully text-like


def _mix(x: int) -> int:
    x &= MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def uniforms(seed: int, pos: int, salt: int = 0) -> Tuple[float, float, float]:
    """Three independent-looking uniforms in [0, 1) for (seed, position, salt)."""
    h = _mix(seed * 0x9E3779B97F4A7C15 + pos * 0xD1B54A32D192ED03 + salt * 0x8CB92BA72F3D8DD7)
    return ((h & 0x1FFFFF) / 2097152.0, ((h >> 21) & 0x1FFFFF) / 2097152.0, ((h >> 42) & 0x1FFFFF) / 2097152.0)


class Table:
    """Continuation counts of one context, sampled by inverse CDF."""

    __slots__ = ("tokens", "cum", "total")

    def __init__(self, counts: Dict[int, int]):
        items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        self.tokens = [t for t, _ in items]
        cum, acc = [], 0
        for _, c in items:
            acc += c
            cum.append(acc)
        self.cum = cum
        self.total = acc

    def sample(self, u: float) -> int:
        return self.tokens[bisect.bisect_right(self.cum, u * self.total)]


class ContextState:
    """What the model knows about one sequence: its tokens and an index of their pairs."""

    __slots__ = (
        "tokens", "repeats", "seed", "pos0", "style", "ignore_eos", "index",
        "match_pos", "match_len", "copy_run", "resume",
    )

    def __init__(self, seed: int, style: float, ignore_eos: bool):
        self.tokens: List[int] = []
        self.repeats: List[int] = []  # per position: how many earlier copies of its passage precede it
        self.seed = seed
        self.pos0 = 0
        self.style = style
        self.ignore_eos = ignore_eos
        self.index: Dict[int, int] = {}
        self.match_pos = -1
        self.match_len = 0
        self.copy_run = 0
        self.resume = -1  # where a repeated passage picks up again after a slip


class TargetModel:
    def __init__(self, corpus_text: str):
        text = normalize_corpus(corpus_text)
        strings = split_tokens(text)
        self.vocab = Vocab(strings)
        ids = [self.vocab.str_to_id[s] for s in strings]
        self.corpus_ids = ids
        uni: Dict[int, int] = {}
        bi: Dict[int, Dict[int, int]] = {}
        tri: Dict[int, Dict[int, int]] = {}
        for i, t in enumerate(ids):
            uni[t] = uni.get(t, 0) + 1
            if i >= 1:
                d = bi.setdefault(ids[i - 1], {})
                d[t] = d.get(t, 0) + 1
            if i >= 2:
                d = tri.setdefault(ids[i - 2] * KEY + ids[i - 1], {})
                d[t] = d.get(t, 0) + 1
        self.uni = Table(uni)
        self.bi = {a: Table(c) for a, c in bi.items()}
        self.tri = {k: Table(c) for k, c in tri.items()}
        self.pairs = {ids[i - 1] * KEY + ids[i] for i in range(1, len(ids))}
        self.sentence_end = {self.vocab.str_to_id[s] for s in (".", "!", "?") if s in self.vocab.str_to_id}
        self.first_word_id = 1

    # -- prompts -------------------------------------------------------------------------
    def text_likeness(self, ids: Sequence[int]) -> float:
        """Share of the prompt's adjacent pairs of corpus words that the corpus knows, scaled.

        Words the corpus never saw (chat markup, other topics) do not count either way."""
        pairs = self.pairs
        size = self.vocab.corpus_size
        seen = known = 0
        for i in range(1, min(len(ids), 1025)):
            a, b = ids[i - 1], ids[i]
            if 0 < a < size and 0 < b < size:
                seen += 1
                if a * KEY + b in pairs:
                    known += 1
        if seen == 0:
            return 1.0
        return min(1.0, (known / seen) / TEXT_LIKENESS_FULL)

    @staticmethod
    def prompt_seed(ids: Sequence[int], base_seed: int = 0) -> int:
        return zlib.crc32(array("l", ids).tobytes(), base_seed & 0xFFFFFFFF)

    def new_context(self, prompt_ids: Sequence[int], seed: int, ignore_eos: bool = False) -> ContextState:
        ctx = ContextState(seed, self.text_likeness(prompt_ids), ignore_eos)
        for t in prompt_ids:
            self.append(ctx, t)
        ctx.pos0 = len(ctx.tokens)
        ctx.copy_run = 0
        return ctx

    # -- the sequence ----------------------------------------------------------------------
    def append(self, ctx: ContextState, tok: int) -> None:
        tokens = ctx.tokens
        p = len(tokens)
        tokens.append(tok)
        if p == 0:
            ctx.repeats.append(0)
            return
        key = tokens[p - 1] * KEY + tok
        mp = ctx.match_pos
        if mp >= 0 and mp + 1 < p and tokens[mp + 1] == tok:
            ctx.match_pos = mp + 1
            if ctx.match_len < MAX_MATCH:
                ctx.match_len += 1
        else:
            prev = ctx.index.get(key)
            if prev is None:
                if mp >= 0 and mp + 2 < p and ctx.repeats[mp] >= REPEAT_LEVEL:
                    ctx.resume = mp + 2  # one odd token inside a repeated passage
                ctx.match_pos = -1
                ctx.match_len = 0
            else:
                n = 2
                while n < MAX_MATCH and prev - n >= 0 and tokens[prev - n] == tokens[p - n]:
                    n += 1
                ctx.match_pos = prev
                ctx.match_len = n
        ctx.index[key] = p
        mp = ctx.match_pos
        ctx.repeats.append(ctx.repeats[mp] + 1 if mp >= 0 and ctx.match_len >= REPEAT_MIN_MATCH else 0)

    def step(self, ctx: ContextState) -> int:
        """Draw the next token, append it to the context and return it."""
        tokens = ctx.tokens
        i = len(tokens) - ctx.pos0
        u_copy, u_style, u_comp = uniforms(ctx.seed, i, 0)
        u_pick, u_eos, _ = uniforms(ctx.seed, i, 1)
        last = tokens[-1] if tokens else EOS_ID
        if not ctx.ignore_eos and i > 0:
            if ctx.style >= 0.5:
                if last in self.sentence_end and u_eos < P_EOS_AFTER_SENTENCE:
                    self.append(ctx, EOS_ID)
                    return EOS_ID
            elif u_eos < P_EOS_NOISE:
                self.append(ctx, EOS_ID)
                return EOS_ID
        resume = ctx.resume
        if resume >= 0:
            ctx.resume = -1
            if resume < len(tokens) and u_copy < REPEAT_P and tokens[resume] != EOS_ID:
                # Back on the repeated passage after a one-token slip.
                ctx.match_pos = resume - 1
                ctx.match_len = MAX_MATCH
                tok = tokens[resume]
                ctx.copy_run += 1
                self.append(ctx, tok)
                return tok
        mp = ctx.match_pos
        if mp >= 0 and mp + 1 < len(tokens):
            strong = ctx.repeats[mp] >= REPEAT_LEVEL  # the passage has been said several times
            if strong:
                # A passage said at least twice already: keep repeating it, and fall back into
                # it from any matching pair of words.
                p = REPEAT_P if ctx.match_len >= REPEAT_MIN_MATCH else REPEAT_REENTRY_P
            else:
                p = COPY_P[ctx.match_len] * (COPY_RUN_DECAY ** ctx.copy_run)
            if len(tokens) - mp < MIN_COPY_DISTANCE:
                p *= SHORT_LOOP_FACTOR  # a model rarely loops on what it said a moment ago
            if u_copy < p:
                tok = tokens[mp + 1]
                if tok != EOS_ID:
                    ctx.copy_run += 1
                    self.append(ctx, tok)
                    return tok
            if strong and mp + 2 < len(tokens):
                ctx.resume = mp + 2
        ctx.copy_run = 0
        if u_style < ctx.style:
            table = None
            if len(tokens) >= 2 and u_comp < LAMBDA_TRI:
                table = self.tri.get(tokens[-2] * KEY + last)
            if table is None and u_comp < LAMBDA_TRI + LAMBDA_BI:
                table = self.bi.get(last)
            if table is None:
                table = self.uni
            tok = table.sample(u_pick)
        else:
            tok = self.first_word_id + int(u_pick * (self.vocab.corpus_size - self.first_word_id))
        self.append(ctx, tok)
        return tok

    # -- for the drafter -------------------------------------------------------------------
    def likely_next(self, last: int, limit: int = 8) -> List[int]:
        table = self.bi.get(last)
        src = table.tokens if table is not None else self.uni.tokens
        return src[:limit]

    def sample_text(self, n_tokens: int, seed: int, start: Optional[Sequence[int]] = None) -> List[int]:
        """Corpus-like text from the text component alone (for prompts)."""
        ctx = ContextState(seed, 1.0, True)
        for t in start or ():
            self.append(ctx, t)
        ctx.pos0 = len(ctx.tokens)
        out = []
        for i in range(n_tokens):
            u_pick, u_comp, _ = uniforms(seed, i, 7)
            last = ctx.tokens[-1] if ctx.tokens else EOS_ID
            table = None
            if len(ctx.tokens) >= 2 and u_comp < LAMBDA_TRI:
                table = self.tri.get(ctx.tokens[-2] * KEY + last)
            if table is None and u_comp < LAMBDA_TRI + LAMBDA_BI:
                table = self.bi.get(last)
            tok = (table or self.uni).sample(u_pick)
            self.append(ctx, tok)
            out.append(tok)
        return out


@functools.lru_cache(maxsize=1)
def _corpus_text() -> str:
    return resources.files("spectui.sim.model").joinpath("corpus.txt").read_text(encoding="utf-8")


def get_model() -> TargetModel:
    """A fresh model per server (its vocabulary grows with the prompts it meets)."""
    return TargetModel(_corpus_text())
