"""Step costs from the server's own device timer: decode, verify and draft milliseconds per step, live L*.

With ``SGLANG_ENABLE_METRICS_DEVICE_TIMER=1`` SGLang 0.5.23 adds the device seconds of every timed forward
to ``sglang:forward_execution_seconds_total{category}`` (sglang 0.5.23 wheel,
sglang/srt/observability/metrics_collector.py:1054-1061, :1598-1606, fed by
sglang/srt/managers/scheduler_components/metrics_reporter.py:325-361). The steps come from
``sglang:cuda_graph_passes_total{mode}``: one ``decode_cuda_graph`` or ``decode_none`` per decode batch
the scheduler finishes (sglang/srt/managers/scheduler_components/batch_result_processor.py:993-996), which
on a speculative server is one draft-and-verify cycle, and one ``prefill_*`` per prefill batch
(metrics_reporter.py:806-809 via batch_result_processor.py:510). Seconds over the window divided by steps
over the same window is the cost of one step. docs/step-costs.md derives every figure.

What the categories hold (the runners name them; docs/step-costs.md cites each):

* ``decode``: a plain decode forward. On a speculative server the target never runs one; the draft
  model's eager steps land here instead (the draft runner shares the timer, metrics_reporter.py:363-374,
  and runs its steps in DECODE mode through the eager runner, eager_runner.py:261).
* ``target_verify``: the target model's verify forward.
* ``eagle_draft``, ``eagle_draft_extend``, ``frozen_kv_draft``: the draft model's CUDA-graph forwards.
* ``extend`` (and ``split_prefill``): prefill; on a speculative server also the draft's eager extend.
* ``idle``: DP-attention idle batches; ``mixed``, ``draft_extend_v2``, ``prebuilt``, ``dllm_extend``:
  other forward modes of the decode CUDA-graph runner (it names the category after the forward mode,
  decode_cuda_graph_runner.py:1986-1988).

Input: two :class:`StepSample` (the labelled series of the counters in :data:`STEP_FAMILIES` and when
they were read). :func:`labelled_series` reads them from /metrics text; :func:`series_from_pairs` from
the JSON form ``{family: [[{label: value}, number], ...]}``. Output: :class:`StepCosts`, every figure a
:class:`StepFigure` that names its source and window, or says why it has no value.

The live L* (:func:`live_l_star`) is ``spectui.core.breakeven.break_even(verify + draft, decode)``:
one speculative cycle (its verify and the drafting timed in the same window) over one plain decode step.
A speculative server runs no plain decode step, so its decode cost comes from elsewhere: a window of the
same server without speculation, or a baseline run (pass it as ``decode``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from spectui.agent.servers.metrics import counter_increase
from spectui.core.breakeven import break_even

__all__ = ["DRAFT_CATEGORIES", "FORWARD_SECONDS", "IDLE_SECONDS", "PASSES", "STEP_FAMILIES", "TIMER_ENV",
           "LabelSet", "Series", "StepCosts", "StepFigure", "StepSample", "labelled_series", "live_l_star",
           "series_from_pairs", "step_costs"]

TIMER_ENV = "SGLANG_ENABLE_METRICS_DEVICE_TIMER"
FORWARD_SECONDS = "forward_execution_seconds_total"
PASSES = "cuda_graph_passes_total"
IDLE_SECONDS = "scheduler_idle_seconds_total"
STEP_FAMILIES = (FORWARD_SECONDS, PASSES, IDLE_SECONDS)
#: Categories that time the draft model alone (its CUDA-graph runners).
DRAFT_CATEGORIES = ("eagle_draft", "eagle_draft_extend", "frozen_kv_draft")
DECODE_MODES = ("decode_cuda_graph", "decode_none")
PREFILL_MODES = ("prefill_cuda_graph", "prefill_none")

LabelSet = tuple[tuple[str, str], ...]
#: family (without the ``sglang:`` prefix, counters with ``_total``) -> sorted label pairs -> value
Series = Mapping[str, Mapping[LabelSet, float]]


@dataclass(frozen=True)
class StepSample:
    """One read of the step counters: ``taken_at`` in seconds of the caller's clock."""

    taken_at: float
    series: Series


@dataclass(frozen=True)
class StepFigure:
    """One step cost (``value`` in ms) or ratio; ``reason`` says why ``value`` is None.

    ``source`` names the counters it divides, ``window_s`` the span, ``seconds`` and ``steps`` the
    increases behind it, ``reset`` whether a counter restarted within the window."""

    name: str
    value: float | None
    source: str
    window_s: float | None
    reason: str | None = None
    seconds: float | None = None
    steps: float | None = None
    reset: bool = False


@dataclass(frozen=True)
class StepCosts:
    """The step costs of one window. ``ratio`` is verify over decode (both measured in this window);
    ``timer`` says whether the server publishes any device-timer series at all."""

    window_s: float
    speculative: bool
    timer: bool
    decode: StepFigure
    verify: StepFigure
    draft: StepFigure
    extend: StepFigure
    ratio: StepFigure
    idle_s: float | None = None


def _key(labels: Mapping[str, str]) -> LabelSet:
    return tuple(sorted((str(k), str(v)) for k, v in labels.items()))


def labelled_series(text: str, families: Iterable[str] = STEP_FAMILIES, prefix: str = "sglang:") -> dict:
    """The labelled series of ``families`` in SGLang's /metrics ``text`` (a family with no sample yet is
    absent). Raises ``ValueError`` on text that is not Prometheus exposition format."""
    from prometheus_client.parser import text_string_to_metric_families

    wanted = set(families)
    out: dict[str, dict[LabelSet, float]] = {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith(prefix):
            continue
        for sample in family.samples:
            name = sample.name[len(prefix):]
            if name in wanted:
                series = out.setdefault(name, {})
                key = _key(sample.labels)
                series[key] = series.get(key, 0.0) + sample.value
    return out


def series_from_pairs(data: Mapping[str, Iterable]) -> dict:
    """:data:`Series` from its JSON form ``{family: [[{label: value}, number], ...]}``."""
    return {family: {_key(labels): float(value) for labels, value in pairs} for family, pairs in data.items()}


def _increase(before: Series, after: Series, family: str, label: str | None = None, values: Iterable[str] = ()):
    """``(increase, reset, present)`` summed over the series of ``family`` whose ``label`` is one of
    ``values`` (all of them without ``label``; other labels, such as ranks, summed too). A series that
    only the later read has rose from zero; one the later read lacks is left out."""
    wanted = set(values)
    total, reset, present = 0.0, False, False
    prev = before.get(family, {})
    for labels, value in after.get(family, {}).items():
        if label is not None and dict(labels).get(label) not in wanted:
            continue
        present = True
        inc, was_reset = counter_increase(prev.get(labels), value)
        total += inc or 0.0
        reset = reset or was_reset
    return total, reset, present


def _per_step(name: str, before: Series, after: Series, categories: Iterable[str], modes: Iterable[str],
              window_s: float, timer: bool, steps_word: str) -> StepFigure:
    categories, modes = tuple(categories), tuple(modes)
    source = "%s{category=%s} / %s{mode=%s}" % (FORWARD_SECONDS, "|".join(categories), PASSES, "|".join(modes))
    seconds, reset_s, _ = _increase(before, after, FORWARD_SECONDS, "category", categories)
    steps, reset_n, _ = _increase(before, after, PASSES, "mode", modes)
    figure = dict(name=name, source=source, window_s=window_s, seconds=seconds, steps=steps,
                  reset=reset_s or reset_n)
    if not steps:
        return StepFigure(value=None, reason="no %s finished in the %.0f s window" % (steps_word, window_s),
                          **figure)
    if not timer:
        return StepFigure(value=None, reason="the server's device timer is off: start it with %s=1" % TIMER_ENV,
                          **figure)
    if not seconds:
        return StepFigure(value=None, reason="%s{category=%s} did not move in the %.0f s window" % (
            FORWARD_SECONDS, "|".join(categories), window_s), **figure)
    return StepFigure(value=1000.0 * seconds / steps, **figure)


def _absent(name: str, reason: str, window_s: float) -> StepFigure:
    return StepFigure(name=name, value=None, source="", window_s=window_s, reason=reason)


def step_costs(before: StepSample, after: StepSample, speculative: bool) -> StepCosts:
    """The step costs between two reads of one server. ``speculative``: whether it runs a speculative
    algorithm (that decides what its ``decode`` category holds, see the module docstring).

    A plain server: ``decode`` = decode seconds per decode batch; ``verify`` and ``draft`` have none.
    A speculative server: ``verify`` = target_verify seconds per cycle, ``draft`` = draft-model seconds
    per cycle (its CUDA-graph categories plus ``decode``, where its eager steps land); ``decode`` has
    none (give :func:`live_l_star` one from a plain window or a baseline run). ``extend`` is
    prefill seconds per prefill batch, on a speculative server with the draft's eager extend in it."""
    window_s = after.taken_at - before.taken_at
    if window_s <= 0:
        raise ValueError("the later sample must be taken after the earlier one")
    b, a = before.series, after.series
    timer = bool(a.get(FORWARD_SECONDS))
    extend = _per_step("extend", b, a, ("extend", "split_prefill"), PREFILL_MODES, window_s, timer,
                       "prefill batch")
    if speculative:
        decode = _absent("decode", "a speculative server runs no plain decode step: take the decode cost from "
                         "a window without speculation or a baseline run", window_s)
        verify = _per_step("verify", b, a, ("target_verify",), DECODE_MODES, window_s, timer, "verify cycle")
        draft = _per_step("draft", b, a, ("decode",) + DRAFT_CATEGORIES, DECODE_MODES, window_s, timer,
                          "verify cycle")
    else:
        decode = _per_step("decode", b, a, ("decode",), DECODE_MODES, window_s, timer, "decode step")
        verify = _absent("verify", "not a speculative server: it runs no verify step", window_s)
        draft = _absent("draft", "not a speculative server: it drafts nothing", window_s)
    idle, _, idle_seen = _increase(b, a, IDLE_SECONDS)
    return StepCosts(window_s=window_s, speculative=speculative, timer=timer, decode=decode, verify=verify,
                     draft=draft, extend=extend, ratio=_ratio(verify, decode), idle_s=idle if idle_seen else None)


def _ratio(verify: StepFigure, decode: StepFigure) -> StepFigure:
    source = "verify ms / decode ms"
    window = verify.window_s if verify.window_s == decode.window_s else None
    if verify.value is None or decode.value is None:
        missing = verify if verify.value is None else decode
        return StepFigure("ratio", None, source, window, reason="no %s cost: %s" % (missing.name, missing.reason))
    return StepFigure("ratio", verify.value / decode.value, source, window)


def live_l_star(costs: StepCosts, decode: StepFigure | None = None) -> StepFigure:
    """Live L* = (verify ms + draft ms per cycle) / decode ms, by :func:`spectui.core.breakeven.break_even`.

    ``decode``: the plain decode step cost to divide by (another window's or a baseline's
    ``StepCosts.decode``); without it, ``costs.decode`` (which a speculative server has not).
    The draft term is left out, and the source says so, when the window timed no drafting."""
    decode = decode if decode is not None else costs.decode
    verify = costs.verify
    if verify.value is None:
        return StepFigure("l_star", None, "", costs.window_s, reason="no verify cost: %s" % verify.reason)
    if decode.value is None:
        return StepFigure("l_star", None, "", costs.window_s, reason="no decode cost: %s" % decode.reason)
    step_ms, source = verify.value, "(verify"
    if costs.draft.value is not None:
        step_ms += costs.draft.value
        source += " + draft"
    source += ") / decode"
    if decode is not costs.decode:
        source += " (decode from another window)"
    return StepFigure("l_star", break_even(step_ms, decode.value), source, costs.window_s,
                      reset=verify.reset or decode.reset or costs.draft.reset)
