"""Proposing an adaptive speculation config (``--speculative-adaptive-config``) from predictions.

SGLang 0.5.23 can change ``speculative_num_steps`` at run time (``--speculative-adaptive``, with
``--speculative-adaptive-config PATH``: sglang 0.5.23 wheel, ``sglang/srt/arg_groups/fields/spec.py:237-244``;
added by https://github.com/sgl-project/sglang/pull/21599, keyed by batch size since
https://github.com/sgl-project/sglang/pull/24055). The config is a JSON object keyed by batch-size
thresholds, each ``{"candidate_steps": [...], "up_hysteresis", "down_hysteresis", "ceiling_coeff"}``
(``DEFAULT_ADAPTIVE_CONFIG``, ``sglang/srt/speculative/adaptive_spec_params.py:28-53``; keys must be
digit strings and ``candidate_steps`` non-empty lists of non-negative ints, lines 116-138). A batch
goes to the slot with the largest key not above its size, the smallest slot taking anything below
(``_find_closest_bs``, lines 356-358). Within a slot SGLang picks the step count from the accepted
drafts it observes (an EMA, ``AdaptiveStepSlot``, lines 153-272): it moves up while drafts keep
being accepted, whatever a step costs. So the cost side is decided here: each slot's candidates
are the step counts predicted to beat plain decoding at that concurrency, and ``0`` (no drafting)
where none does, or where SGLang's fall-back point is itself a losing accept length.

Only EAGLE and EAGLE3 chains (topk 1) are supported (``adaptive_unsupported_reason``, lines 56-100;
NEXTN is resolved to EAGLE). ``--speculative-num-steps`` must be one of the candidates or SGLang
refuses to start (``sglang/srt/arg_groups/speculative_hook.py:1416-1421``).
"""

from __future__ import annotations

import json
from collections.abc import Container
from dataclasses import dataclass, field, replace
from typing import Any

from spectui.core.tune.predict import PredictionTable
from spectui.core.tune.setting import CHAIN

ADAPTIVE_FLAG = "--speculative-adaptive"
ADAPTIVE_CONFIG_FLAG = "--speculative-adaptive-config"
ADAPTIVE_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN")
#: AdaptiveStepSlot's defaults (adaptive_spec_params.py:174-176)
DEFAULT_DOWN_HYSTERESIS = -0.25
DEFAULT_UP_HYSTERESIS = 0.0
DEFAULT_CEILING_COEFF = 0


@dataclass(frozen=True)
class AdaptiveSlot:
    batch_size: int                    # the slot's key: batches of at least this size
    candidate_steps: tuple[int, ...]
    reason: str                        # one sentence: why these steps


@dataclass(frozen=True)
class AdaptiveProposal:
    slots: tuple[AdaptiveSlot, ...]
    num_steps: int                     # --speculative-num-steps to start from (one of the candidates)
    up_hysteresis: float = DEFAULT_UP_HYSTERESIS
    down_hysteresis: float = DEFAULT_DOWN_HYSTERESIS
    problems: tuple[str, ...] = field(default_factory=tuple)  # why this host's SGLang would not use it

    @property
    def speculation_pays(self) -> bool:
        return any(s != 0 for slot in self.slots for s in slot.candidate_steps)

    def config(self) -> dict[str, dict[str, Any]]:
        """The JSON object SGLang reads, in the shape of its ``DEFAULT_ADAPTIVE_CONFIG``."""
        return {str(s.batch_size): {"candidate_steps": list(s.candidate_steps), "up_hysteresis": self.up_hysteresis,
                                    "down_hysteresis": self.down_hysteresis, "ceiling_coeff": DEFAULT_CEILING_COEFF}
                for s in self.slots}

    def to_json(self) -> str:
        return json.dumps(self.config(), indent=2) + "\n"

    def args(self, config_path: str) -> dict[str, Any]:
        """Profile ``args`` that turn it on, with the config written at ``config_path`` on the host."""
        return {"speculative-adaptive": True, "speculative-adaptive-config": config_path,
                "speculative-num-steps": self.num_steps, "speculative-eagle-topk": 1,
                "speculative-num-draft-tokens": self.num_steps + 1}

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config(), "num_steps": self.num_steps, "speculation_pays": self.speculation_pays,
                "slots": [{"batch_size": s.batch_size, "candidate_steps": list(s.candidate_steps),
                           "reason": s.reason} for s in self.slots],
                "problems": list(self.problems)}


def adaptive_flag_problem(host_flags: Container[str] | None) -> str | None:
    """Why the host's SGLang cannot take the config (its flags lack ``--speculative-adaptive``),
    or None. ``host_flags``: a ``FlagSet`` or any collection of option strings; None: unknown."""
    if host_flags is None:
        return None
    missing = [f for f in (ADAPTIVE_FLAG, ADAPTIVE_CONFIG_FLAG) if f not in host_flags]
    if missing:
        return (f"the host's SGLang has no {' or '.join(missing)} (adaptive speculation came after 0.5.6; 0.5.23 has "
                f"it): upgrade SGLang, or run the best static setting")
    return None


def _slot(table: PredictionTable, c: int, min_speedup: float, down_hysteresis: float) -> AdaptiveSlot:
    rows = [r for r in table.at(c) if r.setting.shape == CHAIN and r.speedup_vs_baseline is not None]
    if not rows:
        return AdaptiveSlot(c, (0,), f"at concurrency {c} no step time is known, so drafting stays off")
    wins = [r for r in rows if r.speedup_vs_baseline > min_speedup]
    if not wins:
        best = max(rows, key=lambda r: r.speedup_vs_baseline)
        return AdaptiveSlot(c, (0,), f"at concurrency {c} no step count beats plain decoding (best: "
                                     f"{best.setting.num_steps} steps, {best.speedup_vs_baseline:.2f}x)")
    steps = sorted({int(r.setting.num_steps) for r in wins})
    # SGLang drops to 0 steps when the EMA of accepted drafts falls to 0.5 + down_hysteresis
    # (adaptive_spec_params.py:234-236): keep that exit where such an accept length loses.
    fallback_length = 1.0 + 0.5 + down_hysteresis
    shortest = min(wins, key=lambda r: r.setting.num_steps)
    if shortest.lstar is not None and fallback_length < shortest.lstar:
        steps = [0] + steps
    best = max(wins, key=lambda r: r.speedup_vs_baseline)
    extrapolated = [int(r.setting.num_steps) for r in wins if r.accept_basis != "exact"]
    note = f"; steps {', '.join(map(str, extrapolated))} rest on extrapolated accept lengths" if extrapolated else ""
    return AdaptiveSlot(c, tuple(steps), f"at concurrency {c} steps {', '.join(map(str, steps))} are predicted to "
                                         f"beat plain decoding (best {best.setting.num_steps} steps, "
                                         f"{best.speedup_vs_baseline:.2f}x){note}")


def propose_adaptive_config(table: PredictionTable, *, min_speedup: float = 1.0,
                            up_hysteresis: float = DEFAULT_UP_HYSTERESIS,
                            down_hysteresis: float = DEFAULT_DOWN_HYSTERESIS,
                            host_flags: Container[str] | None = None) -> AdaptiveProposal:
    """One slot per concurrency in ``table`` (slots with the same candidates merged), from its chain
    predictions; ``num_steps`` is the best setting's at the lowest concurrency."""
    problems = []
    setting = table.measured.setting
    if setting.algorithm not in ADAPTIVE_ALGORITHMS or setting.shape != CHAIN:
        problems.append(f"SGLang adapts only EAGLE and EAGLE3 chains with topk 1, not {setting.algorithm} "
                        f"({setting.label}): run the best static setting")
    flag_problem = adaptive_flag_problem(host_flags)
    if flag_problem:
        problems.append(flag_problem)
    slots: list[AdaptiveSlot] = []
    for c in table.concurrencies:
        slot = _slot(table, c, min_speedup, down_hysteresis)
        if slots and slots[-1].candidate_steps == slot.candidate_steps:
            continue
        slots.append(slot)
    if not slots:
        slots.append(AdaptiveSlot(1, (0,), "there are no predictions, so drafting stays off"))
    # The smallest slot takes every smaller batch too (_find_closest_bs): say so with key 1.
    slots[0] = replace(slots[0], batch_size=1)
    first = table.concurrencies[0] if table.concurrencies else 1
    best = table.best(first)
    start = int(best.setting.num_steps) if best and best.setting.num_steps in slots[0].candidate_steps else None
    if start is None:
        positive = [s for s in slots[0].candidate_steps if s > 0]
        start = positive[len(positive) // 2] if positive else 0
    if not any(s for slot in slots for s in slot.candidate_steps):
        problems.append("speculation is predicted to lose at every measured concurrency: serve without it")
    return AdaptiveProposal(slots=tuple(slots), num_steps=start, up_hysteresis=up_hysteresis,
                            down_hysteresis=down_hysteresis, problems=tuple(problems))
