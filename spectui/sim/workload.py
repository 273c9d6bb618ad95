"""Prompt workloads for the simulated server (tests, calibration, capacity benchmark).

* ``text``: corpus-like prose drawn from the model's text component (the default workload, of
  the cost-model calibration; the story's NGRAM figures come from the demo traffic);
* ``repetitive``: one passage said several times over (n-gram speculation's best case);
* ``random``: uniformly random corpus words (bench_serving's ``random`` dataset; no structure
  for speculation to exploit).

All are deterministic in their seed.
"""

from __future__ import annotations

from typing import List

from spectui.sim.model.markov import TargetModel, get_model, uniforms

KINDS = ("text", "repetitive", "random")


def text_prompt(model: TargetModel, seed: int, n_tokens: int = 200) -> str:
    return model.vocab.decode(model.sample_text(n_tokens, seed=seed * 7919 + 1))


def repetitive_prompt(model: TargetModel, seed: int, n_tokens: int = 200, passage_tokens: int = 40) -> str:
    passage = model.sample_text(passage_tokens, seed=seed * 7919 + 2)
    ids: List[int] = []
    while len(ids) < n_tokens:
        ids.extend(passage)
    return model.vocab.decode(ids[:n_tokens])


def random_prompt(model: TargetModel, seed: int, n_tokens: int = 200) -> str:
    first = 1
    span = model.vocab.corpus_size - first
    ids = [first + int(uniforms(seed * 104729 + 3, i, 5)[0] * span) for i in range(n_tokens)]
    return model.vocab.decode(ids)


def prompts(kind: str, count: int, n_tokens: int = 200, seed: int = 0, model: TargetModel = None) -> List[str]:
    model = model or get_model()
    make = {"text": text_prompt, "repetitive": repetitive_prompt, "random": random_prompt}.get(kind)
    if make is None:
        raise ValueError("unknown workload %r (choose from %s)" % (kind, ", ".join(KINDS)))
    return [make(model, seed + i, n_tokens) for i in range(count)]
