"""Acceptance per draft position of a run or a comparison cell: the ``acceptance_by_position`` object.

Every finished request's ``meta_info`` carries ``spec_correct_drafts_histogram``, ``spec_num_proposed_drafts``
and ``spec_verify_ct`` (sglang 0.5.23 wheel, sglang/srt/managers/tokenizer_manager.py:3148-3205); the bench
runner keeps them per request as ``spec.histogram``, ``spec.proposed_drafts`` and ``spec.verify_ct``
(``spectui.agent.bench.runner.spec_figures``). The histograms are pooled, the width is proposed drafts per
verify step, and :func:`spectui.core.tune.acceptance.positions` gives P(k) for each position and, when the
step costs are known, the marginal position (docs/step-costs.md).

The object (docs/json.md)::

    {"positions": [P(1), ..., P(width)], "width": k, "accept_length": 1 + sum P(k), "verify_steps": n,
     "requests": r, "marginal": last paying position or null, "marginal_reason": why null,
     "decode_ms": ..., "position_ms": ..., "costs_from": how they were had, "source": where P(k) came from}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from spectui.core.tune import acceptance
from spectui.core.tune.acceptance import HistogramError

SOURCE = "spec_correct_drafts_histogram pooled over the requests; width = spec_num_proposed_drafts / spec_verify_ct"
NO_DECODE = ("no plain decode step time for this run: compare it against a baseline without speculation "
             "(spectui bench --compare) to price each position")


def _spec(records: Iterable[dict]) -> list[dict]:
    return [r.get("spec") or {} for r in records if r.get("ok", True) and not r.get("cancelled")]


def pooled_figures(records: Iterable[dict]) -> dict | None:
    """What :func:`acceptance_by_position` is computed from, pooled over ``records`` (a run's per-request
    records, the finished ok ones counted): ``{"histogram": [...], "proposed_drafts": n, "verify_ct": m,
    "requests": r, "widths": [...]}``, the histograms added index by index and ``widths`` each request's
    proposed drafts / verify steps, told once; ``None`` when no request reported a histogram. The agent's bench
    watcher pools the same figures over the requests finished so far (a ``bench_progress`` event's
    ``positions``)."""
    specs = [sp for sp in _spec(records) if sp.get("histogram")]
    if not specs:
        return None
    return {"histogram": acceptance.pooled(sp["histogram"] for sp in specs),
            "proposed_drafts": sum(int(sp.get("proposed_drafts") or 0) for sp in specs),
            "verify_ct": sum(int(sp.get("verify_ct") or 0) for sp in specs),
            "requests": len(specs),
            "widths": sorted({int(sp["proposed_drafts"]) // int(sp["verify_ct"]) for sp in specs
                              if sp.get("proposed_drafts") and sp.get("verify_ct")})}


def acceptance_by_position(records: Sequence[dict], *, decode_ms: float | None = None,
                           position_ms: float | None = None, costs_from: str | None = None,
                           no_costs: str = NO_DECODE) -> dict | None:
    """The ``acceptance_by_position`` object of ``records`` (a run's per-request records), or ``None`` when no
    request reported a correct-drafts histogram. ``decode_ms`` and ``position_ms`` (the plain decode step and
    the extra verify cost of one more draft position) price the positions; without them ``marginal`` is
    ``None`` and ``marginal_reason`` says why (``no_costs``)."""
    return acceptance_from_pooled(pooled_figures(records), decode_ms=decode_ms, position_ms=position_ms,
                                  costs_from=costs_from, no_costs=no_costs)


def acceptance_from_pooled(figures: dict | None, *, decode_ms: float | None = None,
                           position_ms: float | None = None, costs_from: str | None = None,
                           no_costs: str = NO_DECODE) -> dict | None:
    """The ``acceptance_by_position`` object of pooled figures (:func:`pooled_figures`, or a ``bench_progress``
    event's ``positions``: the run so far), or ``None`` without a histogram or with figures that are not
    counts. Without ``widths`` the width is the pooled proposed drafts / verify steps."""
    try:
        hist = [int(n) for n in (figures or {}).get("histogram") or ()]
        widths = [int(w) for w in _widths(figures)] if hist else []
    except (TypeError, ValueError, AttributeError):
        return None
    if not hist:
        return None
    out: dict = {"source": SOURCE, "requests": figures.get("requests"), "positions": None, "width": None,
                 "accept_length": None, "verify_steps": None, "marginal": None, "marginal_reason": None,
                 "decode_ms": decode_ms, "position_ms": position_ms, "costs_from": costs_from}
    try:
        width = acceptance.width_of({"spec_num_proposed_drafts": w, "spec_verify_ct": 1} for w in widths)
        accepted = acceptance.position_acceptance(hist, width)
    except HistogramError as exc:
        out["reason"] = str(exc)
        out["marginal_reason"] = str(exc)
        return out
    out.update(positions=accepted, width=width, accept_length=1.0 + sum(accepted), verify_steps=sum(hist))
    return priced(out, hist, decode_ms=decode_ms, position_ms=position_ms, costs_from=costs_from, no_costs=no_costs)


def _widths(figures: dict) -> list:
    """The widths pooled figures tell: their ``widths``, or else pooled proposed drafts / verify steps."""
    if figures.get("widths") is not None:
        return figures["widths"]
    proposed, verify = figures.get("proposed_drafts"), figures.get("verify_ct")
    return [int(proposed) // int(verify)] if proposed and verify else []


def priced(obj: dict, histogram: Sequence[int], *, decode_ms: float | None, position_ms: float | None,
           costs_from: str | None, no_costs: str = NO_DECODE) -> dict:
    """``obj`` (an ``acceptance_by_position`` object with its positions) with the marginal position priced at
    ``decode_ms`` and ``position_ms`` by :func:`spectui.core.tune.acceptance.positions`, or the reason it is not
    (``no_costs`` when a cost is missing)."""
    out = dict(obj, decode_ms=decode_ms, position_ms=position_ms, costs_from=costs_from, marginal=None,
               marginal_reason=None)
    if decode_ms is None or position_ms is None:
        out["marginal_reason"] = no_costs
        return out
    try:
        result = acceptance.positions(list(histogram), out["width"], decode_ms, max(0.0, position_ms))
    except HistogramError as exc:
        out["marginal_reason"] = str(exc)
        return out
    out.update(marginal=result.marginal, position_ms=result.position_ms)
    return out


def price_from_steps(verify_ms: float | None, decode_ms: float | None, width: int | None) -> tuple:
    """``(decode_ms, position_ms, costs_from, reason)`` from a speculative step time and a plain decode step
    time measured under the same load: the extra cost of the speculative step spread evenly over its draft
    positions, ``(verify - decode) / width``."""
    if decode_ms is None or not width:
        return None, None, None, NO_DECODE
    if verify_ms is None:
        return None, None, None, "no speculative step time measured, so the cost of a position is unknown"
    return (decode_ms, max(0.0, (verify_ms - decode_ms) / width),
            "position cost = (verify step - baseline decode step) / width, from the measured step times", None)


def position_line(obj: dict | None) -> str | None:
    """``P(accept) by position 1..k: 0.71 0.52 0.33 -> accept length 2.56; the tail stops paying after position 2``
    (or why the marginal position is unknown); ``None`` without an object."""
    if not obj:
        return None
    if obj.get("positions") is None:
        return f"P(accept) by position: unknown: {obj.get('reason') or obj.get('marginal_reason')}"
    ps = obj["positions"]
    text = (f"P(accept) by position 1..{len(ps)}: " + " ".join(f"{p:.2f}" for p in ps)
            + f" \u2192 accept length {obj['accept_length']:.2f}")
    m = obj.get("marginal")
    if m is None:
        return text + f"; the paying positions are unknown: {obj.get('marginal_reason')}"
    if m == 0:
        return text + "; not even position 1 pays for its cost"
    if m >= len(ps):
        return text + f"; every position pays (up to {len(ps)})"
    return text + f"; the tail stops paying after position {m}"
