"""A profile's or a server's speculative settings in words, one way everywhere: the speculative panel, the
profiles list's rows and ``spectui profiles list`` all call :func:`settings_text`.

The settings are shown as SGLang resolves them, not as flags left unset. For NGRAM (sglang 0.5.23 wheel,
sglang/srt/arg_groups/speculative_hook.py:1285-1329, ``_handle_ngram``):

* ``speculative_eagle_topk`` is always set to ``--speculative-ngram-max-bfs-breadth`` (``:1309-1313``), whose
  default is 10 (sglang/srt/arg_groups/fields/spec.py:256-259): for NGRAM "topk" is the n-gram trie's largest
  BFS breadth, so it is named that;
* ``--speculative-num-draft-tokens`` defaults to 12 when unset (``:1314-1322``): the tokens verified per step;
* ``speculative_num_steps`` becomes ``draft tokens // topk`` when unset (``:1323-1329``), 0 for the shipped
  ``kimi-ngram`` (8 // 10): NGRAM drafts from its trie, not in steps, so no step count is shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NGRAM_MAX_BFS_BREADTH = 10  # sglang 0.5.23 wheel, sglang/srt/arg_groups/fields/spec.py:256-259
NGRAM_DRAFT_TOKENS = 12  # sglang 0.5.23 wheel, sglang/srt/arg_groups/speculative_hook.py:1314-1319


def is_ngram(settings: Mapping[str, Any]) -> bool:
    return str(settings.get("algorithm") or "").upper() == "NGRAM"


def profile_settings(profile) -> dict[str, Any]:
    """A profile's speculative settings as its server resolves them (NGRAM's defaults filled in)."""
    spec = dict(profile.speculative_settings())
    if is_ngram(spec):
        breadth = profile.args.get("speculative-ngram-max-bfs-breadth")
        spec["topk"] = breadth if breadth is not None else NGRAM_MAX_BFS_BREADTH
        if spec.get("draft_tokens") is None:
            spec["draft_tokens"] = NGRAM_DRAFT_TOKENS
        spec["num_steps"] = None  # draft tokens // breadth in SGLang: not a step count NGRAM runs
    return spec


def settings_text(settings: Mapping[str, Any]) -> str:
    """``steps 3 · topk 1 · draft tokens 4``; adaptive speculation's step count now where the server reports it
    (``steps 1 (adaptive)``); NGRAM's ``draft tokens 8 · BFS breadth ≤ 10``; "" for a plain server."""
    if is_ngram(settings):
        parts = []
        if settings.get("draft_tokens") is not None:
            parts.append(f"draft tokens {settings['draft_tokens']}")
        if settings.get("topk") is not None:
            parts.append(f"BFS breadth ≤ {settings['topk']}")
        return " · ".join(parts)
    parts = []
    adaptive = settings.get("adaptive") or {}
    if adaptive.get("steps") is not None:  # the step count adaptive speculation runs now
        parts.append(f"steps {adaptive['steps']} (adaptive)")
    elif settings.get("num_steps") is not None:
        parts.append(f"steps {settings['num_steps']}")
    if settings.get("topk") is not None:
        parts.append(f"topk {settings['topk']}")
    if settings.get("draft_tokens") is not None:
        parts.append(f"draft tokens {settings['draft_tokens']}")
    return " · ".join(parts)
