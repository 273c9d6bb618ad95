"""``SpecSetting``: the speculative shape a prediction is about (algorithm, steps, topk, draft tokens).

It follows what SGLang resolves (sglang 0.5.23 wheel, ``sglang/srt/arg_groups/speculative_hook.py``):

* EAGLE-style chain (topk 1): ``draft_tokens = num_steps + 1`` (``_handle_eagle_family``, lines
  1255-1266; asserted in ``sglang/srt/speculative/base_spec_worker.py:125-127``); a step verifies
  ``num_steps + 1`` positions and can accept up to ``num_steps`` drafts;
* EAGLE tree (topk > 1): ``draft_tokens`` positions verified, at most ``num_steps`` deep;
* NGRAM: a node-budgeted tree of ``draft_tokens`` nodes (12 when unset, ``_handle_ngram`` lines
  1314-1319) with no depth cap but the budget (``sglang/srt/speculative/ngram_info.py:49-53``):
  up to ``draft_tokens - 1`` correct drafts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from spectui.core.probe.predict import EAGLE_FAMILY, NGRAM_DEFAULT_DRAFT_TOKENS
from spectui.core.tune.errors import TuneError

CHAIN, EAGLE_TREE, NGRAM_TREE = "chain", "eagle-tree", "tree"


class SettingError(TuneError):
    """Settings that say nothing a prediction can use (one sentence)."""


def _int(value: Any, what: str) -> int | None:
    if value is None or value is False:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise SettingError(f"{what} must be a whole number, not {value!r}") from None


@dataclass(frozen=True)
class SpecSetting:
    """One speculative configuration, as SGLang resolves it."""

    algorithm: str
    num_steps: int | None      # draft forwards (None for NGRAM, whose tree ignores it)
    topk: int
    draft_tokens: int          # --speculative-num-draft-tokens: positions verified per step

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> "SpecSetting":
        """From ``Profile.speculative_settings()`` or a run's ``speculative`` (``/server_info``)."""
        algo = str(settings.get("algorithm") or "").upper()
        if not algo or algo == "NONE":
            raise SettingError("the run has no speculative algorithm, so there is nothing to predict from")
        steps = _int(settings.get("num_steps"), "num_steps")
        topk = _int(settings.get("topk"), "topk")
        n = _int(settings.get("draft_tokens"), "draft_tokens")
        if algo == "NGRAM":
            return cls.ngram(n if n is not None else NGRAM_DEFAULT_DRAFT_TOKENS)
        if algo not in EAGLE_FAMILY:
            raise SettingError(f"predictions cover {', '.join(EAGLE_FAMILY)} and NGRAM, not {algo}")
        if steps is None:
            raise SettingError(f"the {algo} settings do not say speculative-num-steps (SGLang chose them "
                               f"itself): benchmark a profile that sets it")
        topk = topk or 1
        if topk == 1:
            return cls.chain(algo, steps)
        if n is None:
            raise SettingError(f"an {algo} tree (topk {topk}) needs speculative-num-draft-tokens")
        return cls(algo, steps, topk, n)

    @classmethod
    def chain(cls, algorithm: str, num_steps: int) -> "SpecSetting":
        return cls(algorithm.upper(), int(num_steps), 1, int(num_steps) + 1)

    @classmethod
    def ngram(cls, draft_tokens: int) -> "SpecSetting":
        return cls("NGRAM", None, 1, int(draft_tokens))

    @property
    def shape(self) -> str:
        if self.algorithm == "NGRAM":
            return NGRAM_TREE
        return CHAIN if self.topk == 1 else EAGLE_TREE

    @property
    def max_correct_drafts(self) -> int:
        """The most drafts one verify step can accept."""
        if self.shape == NGRAM_TREE:
            return self.draft_tokens - 1
        if self.shape == CHAIN:
            return int(self.num_steps or 0)
        return min(int(self.num_steps or 0), self.draft_tokens - 1)

    @property
    def max_accept(self) -> int:
        """The longest accept length one verify step can reach (drafts plus the target's token)."""
        return self.max_correct_drafts + 1

    def with_steps(self, num_steps: int) -> "SpecSetting":
        if self.shape == CHAIN:
            return SpecSetting.chain(self.algorithm, num_steps)
        return replace(self, num_steps=int(num_steps))

    def with_draft_tokens(self, draft_tokens: int) -> "SpecSetting":
        if self.shape == CHAIN:
            return SpecSetting.chain(self.algorithm, int(draft_tokens) - 1)
        return replace(self, draft_tokens=int(draft_tokens))

    def args(self) -> dict[str, int]:
        """The profile ``args`` that select this setting (its algorithm aside)."""
        if self.shape == NGRAM_TREE:
            return {"speculative-num-draft-tokens": self.draft_tokens}
        return {"speculative-num-steps": int(self.num_steps or 0), "speculative-eagle-topk": self.topk,
                "speculative-num-draft-tokens": self.draft_tokens}

    @property
    def label(self) -> str:
        """``steps 3, topk 1, 4 draft tokens`` or ``8 draft tokens`` (NGRAM)."""
        if self.shape == NGRAM_TREE:
            return f"{self.draft_tokens} draft tokens"
        return f"steps {self.num_steps}, topk {self.topk}, {self.draft_tokens} draft tokens"

    def to_dict(self) -> dict[str, Any]:
        return {"algorithm": self.algorithm, "num_steps": self.num_steps, "topk": self.topk,
                "draft_tokens": self.draft_tokens, "shape": self.shape, "max_accept": self.max_accept,
                "label": self.label}
