"""Adaptive speculation (``--speculative-adaptive``): the step count follows the accepted drafts.

As SGLang 0.5.23 does it (sglang 0.5.23 wheel):

* the config: JSON keyed by batch-size thresholds, each with ``candidate_steps`` and the slot's
  knobs; ``DEFAULT_ADAPTIVE_CONFIG`` when no file is given; keys that are not digit strings are
  ignored, and ``candidate_steps`` must be non-empty lists of non-negative ints
  (sglang/srt/speculative/adaptive_spec_params.py:28-53 and 103-139);
* one slot per key (``AdaptiveStepSlot``, lines 153-272): an EMA of the correct drafts per request
  (alpha 0.2), left alone for the first 10 batches, then every 5 batches the step count moves down
  while the EMA is at most ``prev - 0.5 + down_hysteresis`` (``0.5 + down_hysteresis`` towards 0
  steps), else up while it is above ``current - 0.5 + up_hysteresis``; from 0 steps it probes the
  next candidate. A change logs ``Adaptive spec params updated: steps A -> B (ema_accept_len=E)``
  (lines 263-272);
* a batch goes to the slot with the largest key not above its size (``_find_closest_bs``, lines
  356-358; the simulator does not pad the batch to a CUDA-graph size first);
* the worker switches to the slot's step count before a batch and after a slot changes it, logging
  ``Switch adaptive runtime state: steps A -> B, draft_tokens C -> D`` (sglang/srt/speculative/
  eagle_worker_v2.py:1861-1881; ``adaptive_runtime_state.py:122-141``); a chain of ``k`` steps
  verifies ``k + 1`` tokens (line 113).

The active step count is what the ``sglang:spec_num_steps`` gauge reports ("Currently active
speculative_num_steps", sglang/srt/observability/metrics_collector.py:535-537, read from the worker
at each decode log: sglang/srt/managers/scheduler_components/metrics_reporter.py:518-540 and 1016-1019).
"""

from __future__ import annotations

import json
import math
from typing import Callable, Dict, List, Optional

DEFAULT_ADAPTIVE_CONFIG: Dict[str, dict] = {
    "1": {"candidate_steps": [1, 3, 5, 7], "up_hysteresis": 0.0, "down_hysteresis": -0.25, "ceiling_coeff": 0},
    "8": {"candidate_steps": [0, 1, 3], "up_hysteresis": 0.0, "down_hysteresis": 0.0, "ceiling_coeff": 0},
    "32": {"candidate_steps": [0, 1], "up_hysteresis": 0.0, "down_hysteresis": 0.0, "ceiling_coeff": 0},
    "64": {"candidate_steps": [0], "up_hysteresis": 0.0, "down_hysteresis": 0.0, "ceiling_coeff": 0},
}


def load_config(path: Optional[str]) -> Dict[int, dict]:
    """The slots of the config at ``path`` (the default without one), each merged with the top level."""
    if path is not None:
        with open(path) as f:
            cfg = json.load(f)
    else:
        cfg = DEFAULT_ADAPTIVE_CONFIG
    if not isinstance(cfg, dict):
        raise ValueError("speculative_adaptive_config must be a JSON object keyed by batch size")
    slots: Dict[int, dict] = {}
    for key, entry in cfg.items():
        if not str(key).isdigit():
            continue
        steps = entry.get("candidate_steps") if isinstance(entry, dict) else None
        if not isinstance(steps, list) or not steps or not all(
                isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in steps):
            raise ValueError("BS %s: candidate_steps must be a list of non-negative ints, got %r" % (key, steps))
        slots[int(key)] = dict(cfg, **entry)
    if not slots:
        raise ValueError("speculative_adaptive_config must contain at least one integer-string BS key, "
                         "e.g. {\"1\": {\"candidate_steps\": [1,3,7]}}. Got keys: %s" % list(cfg.keys()))
    return slots


def candidate_steps(slots: Dict[int, dict]) -> List[int]:
    """Every slot's candidates together (``resolve_candidate_steps_from_config``)."""
    return sorted({s for entry in slots.values() for s in entry["candidate_steps"]})


class StepSlot:
    """``AdaptiveStepSlot``: the step count of one batch-size slot."""

    def __init__(self, initial_steps: int, cfg: dict):
        self.candidates = sorted(set(cfg["candidate_steps"]))
        self.ema_alpha = cfg.get("ema_alpha", 0.2)
        self.update_interval = cfg.get("update_interval", 5)
        self.warmup_batches = cfg.get("warmup_batches", 10)
        self.down_hysteresis = cfg.get("down_hysteresis", -0.25)
        self.up_hysteresis = cfg.get("up_hysteresis", 0.0)
        self.ceiling_coeff = cfg.get("ceiling_coeff", 0)
        if initial_steps in self.candidates:
            self.steps = initial_steps
        else:
            self.steps = self.candidates[len(self.candidates) // 2]
        self.ema = float(self.steps - 1)
        self.batches = 0

    def update(self, correct_drafts: List[int]) -> Optional[str]:
        """Feed one verify's correct drafts per request; the log line when the step count changed."""
        if not correct_drafts:
            return None
        if self.steps > 0:
            self.ema = (1 - self.ema_alpha) * self.ema + self.ema_alpha * sum(correct_drafts) / len(correct_drafts)
        self.batches += 1
        if self.batches <= self.warmup_batches or (self.batches - self.warmup_batches) % self.update_interval:
            return None
        return self._recompute()

    def _recompute(self) -> Optional[str]:
        old = self.steps
        idx = self.candidates.index(old)
        if old == 0:
            idx = min(idx + 1, len(self.candidates) - 1)
            target = self.candidates[idx]
            if target > 0 and self.ema < 0:
                self.ema = float(target - 1)
            return self._apply(old, target)
        start = idx
        while idx > 0:
            prev = self.candidates[idx - 1]
            drop = (0.5 if prev == 0 else prev - 0.5) + self.down_hysteresis
            if self.ema <= drop:
                idx -= 1
            else:
                break
        if idx == start:
            while idx < len(self.candidates) - 1 and self.ema > self.candidates[idx] - 0.5 + self.up_hysteresis:
                idx += 1
        target = self.candidates[idx]
        if self.ceiling_coeff > 0:
            ceiling = max(1, math.ceil(self.ema * self.ceiling_coeff))
            if ceiling < target <= old:
                while idx > 0 and self.candidates[idx] > ceiling:
                    idx -= 1
                target = self.candidates[idx]
        return self._apply(old, target)

    def _apply(self, old: int, target: int) -> Optional[str]:
        if target == old:
            return None
        self.steps = target
        return "Adaptive spec params updated: steps %d -> %d (ema_accept_len=%.2f)" % (old, target, self.ema)


class AdaptiveSteps:
    """The slots of a config, routing each batch to its slot; ``steps`` is the active step count."""

    def __init__(self, initial_steps: int, slots: Dict[int, dict], log: Callable[[str], None]):
        self.keys = sorted(slots)
        self.slots = {k: StepSlot(initial_steps, slots[k]) for k in self.keys}
        self.log = log
        self.steps = initial_steps
        first = self.slots[self.keys[0]]
        log("AdaptiveSpeculativeParams initialized: steps=%d, candidate_steps=%s" % (first.steps, first.candidates))

    def slot(self, batch_size: int) -> StepSlot:
        idx = max(0, sum(1 for k in self.keys if k <= batch_size) - 1)
        return self.slots[self.keys[idx]]

    def before_batch(self, batch_size: int) -> None:
        self._activate(self.slot(batch_size).steps)

    def after_verify(self, correct_drafts: List[int], batch_size: int) -> None:
        slot = self.slot(batch_size)
        line = slot.update(correct_drafts)
        if line is not None:
            self.log(line)
            self._activate(slot.steps)

    def _activate(self, steps: int) -> None:
        if steps == self.steps:
            return
        self.log("Switch adaptive runtime state: steps %d -> %d, draft_tokens %d -> %d"
                 % (self.steps, steps, self.steps + 1, steps + 1))
        self.steps = steps
