"""Figures the console derives from what the link holds: break-even L*, switch stages, log marks.

Pure functions over plain values, so each is tested without a terminal.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence

from spectui.ui.views import BreakEven, Stage

MIN_FRAMES = 10    # frames at one request before a step time is given
MIN_ACCEPT = 3     # of which with an accept length (speculative servers)


def concurrency_one(accept: Sequence[float], throughput: Sequence[float], running: Sequence[float]
                    ) -> list[tuple[float | None, float]]:
    """(accept length or None, tok/s) of the frames taken with exactly one request running.

    The request count is sampled when a frame is taken while tok/s covers the window before
    it, so a frame counts only when the frame before it saw one request too (the window began
    and ended at one). SGLang updates its counters in steps, so single frames swing between 0
    and about twice the rate: the step times below average over all of these frames, zeros
    included, rather than trusting any one of them.
    """
    out = []
    prev = False
    for al, tps, rr in zip(accept, throughput, running):
        one = rr is not None and not math.isnan(rr) and int(rr) == 1
        before, prev = prev, one
        if not (one and before):
            continue
        if tps is None or math.isnan(tps) or tps < 0:
            continue
        out.append((None if al is None or math.isnan(al) else al, tps))
    return out


def baseline_step_ms(pairs: Sequence[tuple[float | None, float]]) -> tuple[float, int] | None:
    """Plain decode step time, 1 / (mean tok/s), and the number of frames it rests on."""
    if len(pairs) < MIN_FRAMES:
        return None
    rate = statistics.fmean(t for _, t in pairs)
    return (1000.0 / rate, len(pairs)) if rate > 0 else None


def speculative_step_ms(pairs: Sequence[tuple[float | None, float]]) -> tuple[float, int] | None:
    """Speculative step time, mean accept length / mean tok/s (one verify step yields L tokens)."""
    accepts = [a for a, _ in pairs if a is not None and a > 0]
    if len(pairs) < MIN_FRAMES or len(accepts) < MIN_ACCEPT:
        return None
    rate = statistics.fmean(t for _, t in pairs)
    return (1000.0 * statistics.fmean(accepts) / rate, len(pairs)) if rate > 0 else None


def break_even(base: tuple[str, tuple[float, int]] | None, spec: tuple[str, tuple[float, int]] | None
               ) -> BreakEven | None:
    """L* = speculative step time / baseline step time, once both were measured."""
    if base is None or spec is None:
        return None
    (base_name, (base_ms, nb)), (spec_name, (spec_ms, ns)) = base, spec
    if base_ms <= 0:
        return None
    return BreakEven(round(spec_ms / base_ms, 2), round(base_ms, 2), round(spec_ms, 2), base_name, spec_name, nb, ns)


# --- switch stages -------------------------------------------------------------------------------------
FINAL = ("ready", "failed", "crashed", "stopped", "unresponsive", "timeout")


def _progress_text(detail: object) -> str | None:
    if isinstance(detail, dict):
        pct = detail.get("percent")
        txt = f"{pct:.0f}%" if isinstance(pct, (int, float)) else ""
        if detail.get("total"):
            txt += f" ({detail.get('done')}/{detail.get('total')} shards)"
        return txt.strip() or None
    return detail if isinstance(detail, str) and detail else None


def switch_stages(history: Sequence[tuple[str, float]], *, detail: object = None, elapsed_now: float | None = None,
                  stopped_name: str | None = None, result_stages: Sequence[dict] | None = None) -> tuple[Stage, ...]:
    """The stages of a switch for display, each with how long it took.

    ``history`` is the agent's stage events as (stage, seconds since the switch began);
    ``elapsed_now`` makes the current stage's time run; ``result_stages`` (the switch's
    reply, once it returned) splits the stop into "stopping" and "waiting for GPU memory".
    """
    merged: list[list] = []  # [label, start]
    for stage, t in history:
        label = {"started": "starting", "stopped": None}.get(stage, stage)
        if stage == "stopped":
            merged.append(["_stopped", t])
            continue
        if merged and merged[-1][0] == label:
            continue
        merged.append([label, t])
    stages: list[Stage] = []
    final = merged[-1][0] if merged and merged[-1][0] in FINAL else None
    for i, (label, start) in enumerate(merged):
        if label == "_stopped":
            continue
        end = merged[i + 1][1] if i + 1 < len(merged) else None
        if label in FINAL:
            stages.append(Stage(label, None, current=False, detail=None))
            continue
        replied = [s for s in (result_stages or []) if s.get("stage") in ("stopping", "waiting for GPU memory")]
        if label == "waiting for GPU memory" and replied:
            continue  # the reply's figures, listed under "stopping", replace the live ones
        current = end is None and final is None
        seconds = (end - start) if end is not None else (
            max(0.0, elapsed_now - start) if elapsed_now is not None else None)
        if label == "stopping":
            if replied:
                for s in replied:
                    who = (s.get("detail") or stopped_name) if s["stage"] == "stopping" else None
                    stages.append(Stage(s["stage"], s.get("seconds"), False, who))
                continue
            stages.append(Stage("stopping", seconds, current, stopped_name))
            continue
        stages.append(Stage(label, seconds, current, _progress_text(detail) if label == "loading" and current else None))
    return tuple(stages)


# --- log lines -------------------------------------------------------------------------------------------
_ERROR = re.compile(r"Traceback \(most recent call last\)|\b\w*(Error|Exception)\b|\berror:|CUDA out of memory|"
                    r"\bFATAL\b|\bCRITICAL\b|Killed|sigquit|exit(ed)? (code|status) [1-9]", re.I)
_WARNING = re.compile(r"\bWARN(ING)?\b|\bwarning:", re.I)


def log_level(line: str) -> str | None:
    """``error``, ``warning`` or None for a log line (what the log views highlight)."""
    if _ERROR.search(line):
        return "error"
    if _WARNING.search(line):
        return "warning"
    return None


def matches(line: str, needle: str) -> bool:
    return not needle or needle.lower() in line.lower()
