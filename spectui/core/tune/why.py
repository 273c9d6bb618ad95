"""Why the runs of a speculative profile left nothing to predict from, one clause per run.

A prediction needs the correct-drafts histogram of finished requests. A run keeps none when it
failed, was cancelled, measured no finished request, or its server did not return the per-request
speculative fields: SGLang adds ``spec_correct_drafts_histogram`` to a request's ``meta_info`` only
when the scheduler sent it and the request ran verify steps (sglang 0.5.23 wheel,
sglang/srt/managers/tokenizer_manager.py:3149-3153 and 3193-3201).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SGLANG_HISTOGRAM = ("sglang 0.5.23 wheel, sglang/srt/managers/tokenizer_manager.py:3193-3201")


def _get(run: Any, name: str) -> Any:
    return run.get(name) if isinstance(run, Mapping) else getattr(run, name, None)


def _label(run: Any) -> str:
    rid = _get(run, "run_id") or _get(run, "id") or "?"
    return f"run {rid} (c={_get(run, 'concurrency')}, repeat {_get(run, 'repeat')})"


def run_reason(run: Any) -> str | None:
    """Why ``run`` kept no correct-drafts histogram, or None when it kept one."""
    state, reason = _get(run, "state"), _get(run, "reason")
    stats = _get(run, "stats") or {}
    if state == "failed":
        return f"failed: {reason or 'no reason given'}"
    if state not in (None, "done"):
        return "was cancelled" + (f" ({reason})" if reason else "")
    if not stats.get("completed"):
        errors = stats.get("errors") or 0
        msgs = stats.get("error_messages") or []
        why = f" ({errors} request{'s' if errors != 1 else ''} failed: {msgs[0]})" if errors and msgs else ""
        return "measured no finished request" + why
    if not sum(stats.get("correct_drafts_histogram") or []):
        return ("got no per-request speculative fields from the server (no spec_correct_drafts_histogram in "
                f"meta_info; {SGLANG_HISTOGRAM})")
    if not _get(run, "speculative"):
        return "ran on a server that reported no speculative settings"
    return None


def why_no_histogram(profile: str, runs: Sequence[Any], *, switch_failure: str | None = None,
                     detail: str | None = None) -> str:
    """One sentence: the runs of ``profile`` left nothing to predict from, and why, per run."""
    head = f"the runs of {profile} kept no correct-drafts histogram, nothing to predict from"
    if switch_failure:
        return f"{head}: its server did not start ({switch_failure})"
    if not runs:
        return f"{head}: no run of {profile} was measured"
    parts = [f"{_label(r)} {why}" for r in runs if (why := run_reason(r))]
    if not parts:
        return f"{head}: {detail}" if detail else head
    return f"{head}: " + "; ".join(parts)


__all__ = ["SGLANG_HISTOGRAM", "run_reason", "why_no_histogram"]
