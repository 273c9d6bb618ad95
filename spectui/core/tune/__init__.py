"""Predicting speculative settings before running them, and the variants a sweep runs.

From one measured speculative run (its correct-drafts histogram and step times, with the plain
baseline's) and the verify-cost probe, predict every other step count or draft-token budget:
accept length, step time, tok/s per stream, break-even accept length L* and speedup, at each
concurrency (docs/tune.md states the model, its assumptions, and where it is exact).

Modules, one job each:

- ``setting``: ``SpecSetting``, a speculative shape as SGLang resolves it;
- ``acceptance``: accept length from a histogram (exact for shorter chains, extrapolated beyond);
- ``predict``: the step-time model and ``predict_table`` -> ``PredictionTable`` of ``Prediction``;
- ``adaptive``: an ``--speculative-adaptive-config`` proposal in SGLang's own JSON shape;
- ``variants``: ``--sweep FLAG=V1,V2`` parsing and variant profiles with SGLang's consistency rules;
- ``sweep``: predictions of named variants, the settings worth running, predicted beside measured, the verdict;
- ``plan``: the inputs of a tune (``tune_inputs``) and what it runs within its budget (``plan_tune``), one
  planner for ``spectui tune`` and the console's tune screen;
- ``why``: why the runs of a profile left nothing to predict from, one clause per run;
- ``run``: the tune loop itself (``run_tune``), which ``spectui tune`` and the console's tune screen both run.

Typical use::

    measured = measured_from_runs(eagle_runs, baseline_runs)
    table = predict_table(measured, probe_result, StepCosts.from_result(probe_result))
    table.best(1), table.cannot_win(), propose_adaptive_config(table).to_json()
    variants = build_variants(profile, parse_sweep(["num-steps=1..5"]))

Everything here but ``run`` is pure: frozen dataclasses in, frozen dataclasses out, no I/O.
"""

from spectui.core import lazy_exports

# each module of the package and the names it gives, loaded when one of them is first asked for
_EXPORTS = {
    "acceptance": ["accept_length", "extrapolated_accept_length", "needed_rate", "survival"],
    "adaptive": ["AdaptiveProposal", "AdaptiveSlot", "adaptive_flag_problem", "propose_adaptive_config"],
    "errors": ["TuneError"],
    "predict": [
        "MeasuredRun", "Prediction", "PredictionTable", "StepPoint", "candidate_settings", "extra_step_ms",
        "measured_from_runs", "predict_table", "predicted_accept_length",
    ],
    "setting": ["SettingError", "SpecSetting"],
    "variants": ["SweepAxis", "Variant", "build_variants", "parse_sweep", "sglang_adjustments"],
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "AdaptiveProposal",
    "AdaptiveSlot",
    "MeasuredRun",
    "Prediction",
    "PredictionTable",
    "SettingError",
    "SpecSetting",
    "StepPoint",
    "SweepAxis",
    "TuneError",
    "Variant",
    "accept_length",
    "adaptive_flag_problem",
    "build_variants",
    "candidate_settings",
    "extra_step_ms",
    "extrapolated_accept_length",
    "measured_from_runs",
    "needed_rate",
    "parse_sweep",
    "predict_table",
    "predicted_accept_length",
    "propose_adaptive_config",
    "sglang_adjustments",
    "survival",
]
