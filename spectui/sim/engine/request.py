"""One generation request: its sampling knobs, its tokens, its speculative counters, its clock."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
import uuid
import zlib
from array import array
from typing import Any, Dict, List, Optional, Sequence

from spectui.sim.model.markov import GREEDY_TEMPERATURE, ContextState, TargetModel
from spectui.sim.model.tokenizer import EOS_ID

DEFAULT_MAX_NEW_TOKENS = 128
GREEDY_EPS = 1e-6  # SGLang's _SAMPLING_EPS
_counter = itertools.count()
_fresh = random.SystemRandom()


class RequestError(ValueError):
    """A request the server refuses (HTTP 400)."""


class SamplingParams:
    """The sampling knobs the simulated model honours.

    As in SGLang (sglang 0.5.23 wheel, sglang/srt/sampling/sampling_params.py:245-248), a
    temperature below 1e-6 means greedy (top_k 1); the default temperature is 1.0 (sampling).
    """

    __slots__ = ("max_new_tokens", "min_new_tokens", "ignore_eos", "stop", "stop_token_ids", "temperature", "seed",
                 "top_p", "top_k")

    def __init__(
        self,
        max_new_tokens: Optional[int] = DEFAULT_MAX_NEW_TOKENS,
        min_new_tokens: int = 0,
        ignore_eos: bool = False,
        stop: Optional[Sequence[str]] = None,
        stop_token_ids: Optional[Sequence[int]] = None,
        temperature: float = 1.0,
        seed: Optional[int] = None,
        top_p: float = 1.0,
        top_k: int = -1,
    ):
        self.max_new_tokens = DEFAULT_MAX_NEW_TOKENS if max_new_tokens is None else int(max_new_tokens)
        self.min_new_tokens = int(min_new_tokens or 0)
        self.ignore_eos = bool(ignore_eos)
        if isinstance(stop, str):
            stop = [stop]
        self.stop = [s for s in (stop or []) if isinstance(s, str) and s]
        self.stop_token_ids = set(int(t) for t in (stop_token_ids or []))
        self.temperature = float(temperature if temperature is not None else 1.0)
        self.seed = None if seed is None else int(seed)
        self.top_p = float(1.0 if top_p is None else top_p)
        self.top_k = int(-1 if top_k is None else top_k)
        if self.max_new_tokens < 0:
            raise RequestError("max_new_tokens must be at least 0")
        if self.temperature < 0:
            raise RequestError("temperature must be non-negative, got %s." % self.temperature)
        if not 0.0 < self.top_p <= 1.0:
            raise RequestError("top_p must be in (0, 1], got %s." % self.top_p)

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_EPS or self.top_k == 1

    @classmethod
    def from_dict(cls, d: Optional[Dict[str, Any]]) -> "SamplingParams":
        d = dict(d or {})
        try:
            return cls(
                max_new_tokens=d.get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS),
                min_new_tokens=d.get("min_new_tokens", 0),
                ignore_eos=d.get("ignore_eos", False),
                stop=d.get("stop"),
                stop_token_ids=d.get("stop_token_ids"),
                temperature=d.get("temperature", 1.0),
                seed=d.get("sampling_seed", d.get("seed")),
                top_p=d.get("top_p", 1.0),
                top_k=d.get("top_k", -1),
            )
        except (TypeError, ValueError) as exc:
            if isinstance(exc, RequestError):
                raise
            raise RequestError("invalid sampling_params: %s" % exc)


class Request:
    def __init__(
        self,
        prompt_ids: List[int],
        params: SamplingParams,
        rid: Optional[str] = None,
        stream: bool = False,
        log_metrics: bool = True,
    ):
        self.rid = rid or uuid.uuid4().hex
        self.order = next(_counter)
        self.prompt_ids = prompt_ids
        self.params = params
        self.stream = stream
        self.log_metrics = log_metrics
        self.ctx: Optional[ContextState] = None
        self.lookahead: List[int] = []
        self.output_ids: List[int] = []
        self.visible = 0  # output tokens the client may see (those of finished forward passes)
        self.spec_state: Any = None  # the speculator's per-request state (e.g. n-gram stream)
        self.draw_seed = 0
        self.verify_ct = 0
        self.correct_drafts = 0
        self.histogram: List[int] = []
        self.cached_tokens = 0
        self.finish_reason: Optional[Dict[str, Any]] = None
        self.stop_trim: Optional[int] = None  # text length to keep when a stop string matched
        self.arrival = time.time()
        self.arrival_mono = time.monotonic()
        self.first_token_mono: Optional[float] = None
        self.last_token_mono: Optional[float] = None
        self.finished_mono: Optional[float] = None
        self.updated = asyncio.Event()
        self.done = asyncio.Event()
        self.aborted = False

    # -- the target's tokens -----------------------------------------------------------------
    def start(self, model: TargetModel, base_seed: int) -> None:
        """Fix the request's draws: a greedy request's by its prompt (and the server's seed), a
        sampled one's by its ``sampling_seed`` if it has one, else by a fresh random seed (so
        the same prompt sampled twice gives two answers, as on a real server)."""
        p = self.params
        if p.greedy:
            seed, temperature, top_p = model.prompt_seed(self.prompt_ids, base_seed), GREEDY_TEMPERATURE, 1.0
        else:
            seed = model.seeded(self.prompt_ids, p.seed) if p.seed is not None else _fresh.getrandbits(62)
            temperature, top_p = p.temperature, p.top_p
        self.draw_seed = seed
        self.ctx = model.new_context(self.prompt_ids, seed, ignore_eos=p.ignore_eos, temperature=temperature, top_p=top_p)
        self._model = model

    def peek(self, k: int) -> int:
        """The target's token ``k`` positions after the last committed one."""
        la = self.lookahead
        while len(la) <= k:
            la.append(self._model.step(self.ctx))
        return la[k]

    def prompt_hash(self) -> int:
        return zlib.crc32(array("l", self.prompt_ids).tobytes())

    @property
    def seq_len(self) -> int:
        return len(self.prompt_ids) + len(self.output_ids)

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    def commit(self, n: int, vocab=None) -> List[int]:
        """Commit the next ``n`` target tokens, stopping early at a stop condition."""
        out: List[int] = []
        p = self.params
        for _ in range(n):
            if self.finish_reason is not None:
                break
            tok = self.peek(0)
            self.lookahead.pop(0)
            if tok == EOS_ID and not p.ignore_eos:
                if len(self.output_ids) < p.min_new_tokens:
                    continue
                self.output_ids.append(tok)
                out.append(tok)
                self.finish_reason = {"type": "stop", "matched": EOS_ID}
                break
            self.output_ids.append(tok)
            out.append(tok)
            if tok in p.stop_token_ids:
                self.finish_reason = {"type": "stop", "matched": tok}
                break
            if p.stop and vocab is not None and self._match_stop(vocab):
                break
            if len(self.output_ids) >= p.max_new_tokens:
                self.finish_reason = {"type": "length", "length": p.max_new_tokens}
                break
        if self.finish_reason is not None:
            self.lookahead.clear()
        return out

    def _match_stop(self, vocab) -> bool:
        tail_ids = self.output_ids[-16:]
        tail = vocab.decode(tail_ids)
        for s in self.params.stop:
            pos = tail.find(s)
            if pos >= 0:
                full = vocab.decode(self.output_ids)
                self.stop_trim = len(full) - len(tail) + pos
                self.finish_reason = {"type": "stop", "matched": s}
                return True
        return False

    def finish_length_now(self) -> None:
        """A request asking for no new tokens finishes at prefill."""
        self.finish_reason = {"type": "length", "length": self.params.max_new_tokens}

    def abort(self, message: str = "Abort before finishing.") -> None:
        self.aborted = True
        if self.finish_reason is None:
            self.finish_reason = {"type": "abort", "message": message}

    # -- speculative counters -------------------------------------------------------------------
    def record_verify(self, correct: int) -> None:
        self.verify_ct += 1
        self.correct_drafts += correct
        h = self.histogram
        if len(h) <= correct:
            h.extend([0] * (correct - len(h) + 1))
        h[correct] += 1

    def text(self, vocab) -> str:
        t = vocab.decode(self.output_ids)
        if self.stop_trim is not None:
            t = t[: self.stop_trim]
        return t
