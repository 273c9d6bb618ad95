"""Figures the console derives from what the link holds: break-even L*, switch stages, log marks.

Pure functions over plain values, so each is tested without a terminal.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Sequence

from spectui.core.breakeven import break_even
from spectui.core.console.switches import SWITCH_FINAL
from spectui.core.server_frames import LiveBreakEven, ServerFrame
from spectui.core.stepcost import TIMER_ENV
from spectui.ui.views import BreakEven, PredictedLStar, Stage

# The server's cumulative accept length (/server_info's avg_spec_accept_length, since start or the last
# /flush_cache) over a few requests is the warm-up's and the first prompts', not the server's: it is shown once the
# server reports this many finished requests (sglang:num_requests_total); before, the panel says after how many;
# without a count (no /metrics) it is not shown, as how much it covers cannot be told.
CUMULATIVE_MIN_REQUESTS = 20


def l_star_view(base: tuple[str, tuple[float, int]] | None, spec: tuple[str, tuple[float, int]] | None
                ) -> BreakEven | None:
    """The live L* (spectui.core.breakeven) with the step times and runs it rests on, once both were measured."""
    if base is None or spec is None:
        return None
    (base_name, (base_ms, nb)), (spec_name, (spec_ms, ns)) = base, spec
    value = break_even(spec_ms, base_ms)
    if value is None:
        return None
    return BreakEven(round(value, 2), round(base_ms, 2), round(spec_ms, 2), base_name, spec_name, nb, ns)


def hms(t: float) -> str:
    """A wall time as the console shows it: ``14:02:11``, local."""
    return time.strftime("%H:%M:%S", time.localtime(t))


def probe_name(p: PredictedLStar) -> str:
    return f"probe {p.probe_id}" if p.probe_id else "probe without an id"


def _window(seconds: float | None, until: float | None, latest: float | None) -> str:
    span = f"{seconds:.0f} s" if seconds is not None else "a window"
    if until is None or latest is None or until >= latest:
        return f"last {span}"
    return f"{span} to {hms(until)}"


def _fallback(breakeven: BreakEven | None, predicted: PredictedLStar | None) -> str:
    """The L* the panel shows without a live one, and where it comes from."""
    if breakeven is not None:
        return f"L* {breakeven.l_star:.2f} from the baseline run ({breakeven.base_name})"
    if predicted is not None and predicted.value is not None:
        return f"L* {predicted.value:.2f} from the probe's prediction ({probe_name(predicted)})"
    return "no L* yet (a baseline run or a probe gives one)"


def step_cost_line(live: LiveBreakEven | None, latest: float | None, breakeven: BreakEven | None,
                   predicted: PredictedLStar | None) -> str:
    """One line under the accept length: the step costs the server's timer measured and the live L* they give,
    each with its source and window; without them, why, and the L* used instead."""
    if live is None:
        return ""
    if live.step is None:
        why = live.reason or "no server timer"
        if "timer is off" in why:
            why = f"no server timer ({TIMER_ENV}=1 starts it)"
        return f"{why} → {_fallback(breakeven, predicted)}"
    what = "verify+draft" if live.drafted else "verify"
    own = f"{what} {live.step.value:.1f} ms per step (server timer, {_window(live.step.window_s, live.until, latest)})"
    if live.decode is None or live.decode.value is None:
        return f"{own}; {live.reason or 'no plain decode step timed here'} → {_fallback(breakeven, predicted)}"
    decode = (f"decode {live.decode.value:.1f} ms ({live.decode_server}'s timer, "
              f"{_window(live.decode.window_s, live.decode_until, latest)})")
    if live.l_star is None or live.l_star.value is None:
        return f"{own} · {decode} → no L*: {live.reason}"
    return f"{own} · {decode} → L* {live.l_star.value:.2f}"


def headline_l_star(live: LiveBreakEven | None, breakeven: BreakEven | None,
                    predicted: PredictedLStar | None) -> tuple[float, str] | None:
    """The L* a server's accept length is judged against, and what it is: the live one from the servers' device
    timers (``server timer``), else the one measured from a baseline run here (``measured``), else the probe's
    (``predicted``). The panel's headline, the glance row and the alert rules all take this one."""
    if live is not None and live.l_star is not None and live.l_star.value is not None:
        return round(live.l_star.value, 2), "server timer"
    if breakeven is not None:
        return breakeven.l_star, "measured"
    if predicted is not None and isinstance(predicted.value, (int, float)):
        return float(predicted.value), "predicted"
    return None


def _ms(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


def why_line(row: dict, prediction: dict) -> str | None:
    """Why speculation pays or not, from a probe's record: what a verify step of the profile's width and a plain
    decode step cost and how much of each is all-reduce. The verify step is the probe's model of it (the decode step
    plus the extra all-reduce, the extra tokens' compute and the drafting: spectui.core.probe.predict); without
    the decode step time, the all-reduce alone. None for a record without these figures."""
    verify_comm, decode_comm = _ms(row.get("verify_comm_ms")), _ms(prediction.get("decode_comm_ms"))
    tokens = row.get("draft_tokens")
    if verify_comm is None or decode_comm is None or not isinstance(tokens, int):
        return None
    decode = _ms(prediction.get("decode_step_ms"))
    parts = [_ms(row.get(k)) for k in ("extra_comm_ms", "extra_compute_ms", "drafting_ms")]
    if not decode or any(p is None for p in parts):
        return (f"why: all-reduce {verify_comm:.1f} ms per verify step ({tokens} tokens) against "
                f"{decode_comm:.1f} ms per decode step")
    verify = decode + sum(parts)
    return (f"why: a verify step ({tokens} tokens) {verify:.1f} ms, {verify_comm:.1f} ms of it all-reduce "
            f"({100 * verify_comm / verify:.0f}%); a decode step {decode:.1f} ms, {decode_comm:.1f} ms all-reduce "
            f"({100 * decode_comm / decode:.0f}%)")


def width_line(frame: ServerFrame | None, adaptive: bool) -> str:
    """The draft width the server runs now, from its gauges, and when it last changed."""
    width = frame.width_now if frame is not None else None
    if width is None:
        return ""
    parts = []
    if width.draft_tokens is not None:
        parts.append(f"{width.draft_tokens} draft tokens")
    if width.steps is not None:
        parts.append(f"{width.steps} steps")
    changes = frame.width_changes
    if changes:
        when = f"since {hms(changes[-1].at)}"
    else:
        when = "no change seen" if adaptive else "as launched"
    source = (width.source or "").removeprefix("sglang:")
    return "width " + " · ".join(parts) + f", {when}" + (f" ({source} gauge)" if source else "")


# --- switch stages -------------------------------------------------------------------------------------
FINAL = SWITCH_FINAL


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


def fitted_range(values, *, floor: float | None = None, margin: float = 0.1, least: float = 0.5,
                 step: float = 0.1) -> tuple[float, float] | None:
    """The y range of a chart fitted to the values seen: their span and ``margin`` of it each side (the range at
    least ``least`` wide), widened to multiples of ``step`` and kept at or above ``floor``; None with no value. An axis
    from the theoretical maximum (an n-gram's 8 draft tokens) would lay an accept length of 1.4 on its floor."""
    seen = [v for v in values if v is not None and not math.isnan(v)]
    if not seen:
        return None
    lo, hi = min(seen), max(seen)
    pad = max(margin * (hi - lo), (least - (hi - lo)) / 2, step / 2)
    lo, hi = math.floor((lo - pad) / step) * step, math.ceil((hi + pad) / step) * step
    if floor is not None and lo < floor:
        lo = floor
    return round(lo, 6), round(max(hi, lo + step), 6)
