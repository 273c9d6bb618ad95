"""The break-even accept length L*: the accept length at which speculative decoding pays.

A verify step costs the plain decode step and more (the wider verify's communication and compute, the
drafting); it yields ``accept length`` tokens where a plain step yields one. Speculation is faster when
the accept length exceeds ``L* = speculative step time / plain decode step time``. Measured (a benchmark
comparison, live frames) or predicted (the verify-cost probe), every L* in spectui comes from here.
"""

from __future__ import annotations

__all__ = ["PredictionError", "break_even", "predicted_break_even"]


class PredictionError(ValueError):
    """The probe result cannot support a prediction (e.g. no all-reduce sizes)."""


def break_even(step_ms: float | None, base_step_ms: float | None) -> float | None:
    """L* = speculative step time / plain decode step time; None until both are known (a plain step
    time of zero or less is none)."""
    if step_ms is None or base_step_ms is None or base_step_ms <= 0:
        return None
    return step_ms / base_step_ms


def predicted_break_even(decode_step_ms: float, extra_comm_ms: float, extra_compute_ms: float = 0.0,
                         drafting_ms: float = 0.0) -> float:
    """``L* = (T + extra communication + extra compute + drafting) / T`` for a plain decode step ``T``."""
    l_star = break_even(decode_step_ms + extra_comm_ms + extra_compute_ms + drafting_ms, decode_step_ms)
    if l_star is None:
        raise PredictionError("the plain decode step time must be positive")
    return l_star
