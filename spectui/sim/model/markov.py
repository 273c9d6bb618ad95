"""The target model: a seeded word-level text model with the habits that matter to speculation.

Each next token is drawn, deterministically from the request's seed and position, from:

* **copy** -- when the context's last tokens occurred earlier (in the prompt or the output),
  the model continues that earlier passage with a probability that grows with the length of
  the match (as the induction heads of a real model do), and wears off over a long copy run,
  unless the passage has been said three times already: then it is said again (and again);
* **text** -- otherwise an interpolated trigram/bigram/unigram model of the corpus; the
  trigram is used only where the corpus saw more than one continuation, so that the model
  does not recite the corpus (which an n-gram trie would soon know by heart);
* **noise** -- a model continues in the register of its prompt: the share of text draws is the
  prompt's *text-likeness* (the fraction of its adjacent token pairs the corpus knows), so a
  prompt of random tokens gets random tokens back.

A real model's next word depends on the whole conversation, not only on the last two words:
here each request (by its prompt) prefers its own spot in each context's table and draws
close to it, and after a content word often has a word of its own (its subject matter). So
two requests go on differently from the same words, while one request, meeting the same words
again, tends to say the same thing again. An n-gram trie shared by all requests therefore
learns common turns of phrase within a minute or so, not the answers, and its acceptance
levels off instead of climbing.

Sampling knobs shape the draws. Every choice is an inverse-CDF draw over options ordered most
likely first (copy before invention, the trigram before the bigram, a table's tokens from the
request's preferred one on), so temperature T is applied by drawing ``u ** (1 / T)`` instead of
``u``: more peaked below 1 (more copying, closer to the preferred word, with a ceiling so that
low temperatures do not collapse into loops), flatter decisions above; ``top_p`` keeps a table's
draws within that share of its mass. Greedy decoding (temperature 0 or top_k 1) is a draw at
``GREEDY_TEMPERATURE`` from a seed fixed by the prompt: the same prompt gives the same output
(a word-level n-gram model's true argmax would loop on a handful of words, which a real
model's greedy output does not). A sampled request without ``sampling_seed`` draws from a
fresh seed; the register (text or noise) and the end of text are not sharpened.

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
TRI_MIN_DISTINCT = 2  # a trigram context with fewer different continuations backs off to the bigram
PREFERENCE_SHARP = 4.0  # a table draw stays this much closer to the request's preferred spot ...
PICK_SHARP_MAX = 6.0  # ... up to this exponent (greedy included)
OWN_WORD_MIN_ID = 100  # corpus words rarer than the 99 commonest are content words
OWN_WORD_SHARE_RARE = 0.9  # after a content word, a request has a word of its own (its subject) ...
OWN_WORD_SHARE = 0.0  # ... this often after a common one ...
OWN_WORD_WIDTH = 0.7  # ... which it says when the draw falls within this share of its preferred spot
LAMBDA_TRI = 0.60
LAMBDA_BI = 0.28  # the rest is unigram
P_EOS_AFTER_SENTENCE = 0.04
P_EOS_NOISE = 0.002
TEXT_LIKENESS_FULL = 0.30  # share of known pairs at which a prompt counts as fully text-like
GREEDY_TEMPERATURE = 0.4  # how peaked greedy draws are (see the module docstring)
MIN_TEMPERATURE = 0.05
DECISION_SHARP_MAX = 1.5  # copy-or-not and trigram-or-not sharpen at most this much (else greedy loops)


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
        "match_pos", "match_len", "copy_run", "resume", "sharp", "top_p", "topic", "fix",
    )

    def __init__(self, seed: int, style: float, ignore_eos: bool, temperature: float = 1.0, top_p: float = 1.0):
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
        self.sharp = 1.0 / max(MIN_TEMPERATURE, float(temperature))  # draws are u ** sharp
        self.top_p = min(1.0, max(1e-3, float(top_p)))
        self.topic = 0  # the request's subject matter (from its prompt)
        self.fix: Dict[int, int] = {}  # slip position -> the position of the token it replaced


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
        self.tri = {k: Table(c) for k, c in tri.items() if len(c) >= TRI_MIN_DISTINCT}
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

    @staticmethod
    def seeded(ids: Sequence[int], sampling_seed: int) -> int:
        """The draw seed of a request with a ``sampling_seed``: fixed by (prompt, seed)."""
        return _mix(zlib.crc32(array("l", ids).tobytes()) ^ (int(sampling_seed) * 0x9E3779B97F4A7C15)) >> 1

    def new_context(self, prompt_ids: Sequence[int], seed: int, ignore_eos: bool = False,
                    temperature: float = 1.0, top_p: float = 1.0) -> ContextState:
        ctx = ContextState(seed, self.text_likeness(prompt_ids), ignore_eos, temperature, top_p)
        ctx.topic = _mix(self.prompt_seed(prompt_ids, 0x7091C) + 1)
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
        src = ctx.fix.get(mp + 1, mp + 1) if mp >= 0 else -1
        if mp >= 0 and src < p and tokens[src] == tok:
            ctx.match_pos = src
            if ctx.match_len < MAX_MATCH:
                ctx.match_len += 1
        else:
            if mp >= 0 and src + 1 < p and ctx.repeats[mp] >= REPEAT_LEVEL:
                # One odd token inside a repeated passage: the passage picks up again after
                # it, and whoever repeats this stretch later repeats the passage, not the slip.
                ctx.resume = src + 1
                ctx.fix[p] = src
                if p >= 2:
                    ctx.index[tokens[p - 2] * KEY + tokens[p - 1]] = mp
            prev = ctx.index.get(key)
            if prev is None:
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
        k = ctx.sharp
        if k != 1.0:
            kd = min(k, DECISION_SHARP_MAX)
            u_copy **= kd
            u_comp **= kd
        last = tokens[-1] if tokens else EOS_ID
        mp = ctx.match_pos
        repeating = mp >= 0 and ctx.repeats[mp] >= REPEAT_LEVEL  # inside a passage said several times
        if not ctx.ignore_eos and i > 0 and not repeating:
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
            resume = ctx.fix.get(resume, resume)
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
            if len(tokens) - mp < MIN_COPY_DISTANCE and not strong:
                p *= SHORT_LOOP_FACTOR  # a model rarely loops on what it said a moment ago
            if u_copy < p:
                tok = tokens[ctx.fix.get(mp + 1, mp + 1)]
                if tok != EOS_ID:
                    ctx.copy_run += 1
                    self.append(ctx, tok)
                    return tok
            src = ctx.fix.get(mp + 1, mp + 1)
            if strong and src + 1 < len(tokens):
                ctx.resume = src + 1
        ctx.copy_run = 0
        if u_style < ctx.style:
            table = None
            key = 0
            if len(tokens) >= 2 and u_comp < LAMBDA_TRI:
                key = tokens[-2] * KEY + last
                table = self.tri.get(key)
            if table is None and u_comp < LAMBDA_TRI + LAMBDA_BI:
                key = last + 1
                table = self.bi.get(last)
            if table is None:
                key = 0
                table = self.uni
            tok = self._own_word(ctx, key, u_pick, last)
            if tok < 0:
                tok = table.sample(self._pick(ctx, key, u_pick))
        else:
            tok = self.first_word_id + int(u_pick * (self.vocab.corpus_size - self.first_word_id))
        self.append(ctx, tok)
        return tok

    def _own_word(self, ctx: ContextState, key: int, u: float, last: int) -> int:
        """The request's own word for this context (or -1): what it talks about, unlike others."""
        h = _mix(ctx.topic ^ (key * 0x9FB21C651E98DF25) ^ 0x5BD1E995)
        share = OWN_WORD_SHARE_RARE if last >= OWN_WORD_MIN_ID else OWN_WORD_SHARE
        if h >= share * 18446744073709551616.0:
            return -1
        k = ctx.sharp if ctx.sharp > 1.0 else 1.0
        if (u ** k if k != 1.0 else u) >= OWN_WORD_WIDTH:
            return -1
        return OWN_WORD_MIN_ID + (h >> 11) % (self.vocab.corpus_size - OWN_WORD_MIN_ID)

    @staticmethod
    def _pick(ctx: ContextState, key: int, u: float) -> float:
        """Where in a table's CDF this draw lands: ``u ** k`` (times ``top_p``) past the request's
        own preferred spot for this context (a fixed offset per prompt and context), wrapping
        around; ``k = max(1, 1 / T) * PREFERENCE_SHARP``, at most ``PICK_SHARP_MAX``."""
        offset = _mix(ctx.topic ^ (key * 0xD6E8FEB86659FD93)) / 18446744073709551616.0
        k = min((ctx.sharp if ctx.sharp > 1.0 else 1.0) * PREFERENCE_SHARP, PICK_SHARP_MAX)
        v = offset + (u ** k if k != 1.0 else u) * ctx.top_p
        return v - 1.0 if v >= 1.0 else v

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
