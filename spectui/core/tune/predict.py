"""Predicting other speculative settings from one measured run and the verify-cost probe.

Inputs (no I/O here; the caller reads history and the probe):

* :class:`MeasuredRun`: one speculative profile's benchmark runs: its :class:`SpecSetting`, the
  correct-drafts histogram pooled over its requests, its verify step time at each concurrency
  (``stats["step_ms"]`` = 1000 x accept length / per-stream decode tok/s, or the median ITL),
  and the plain baseline's decode step time ``T(c)`` at each concurrency where one was run.
  :func:`measured_from_runs` builds it from ``RunResult`` objects or their dicts;
* the probe's result (``spectui.probe/1``) and its :class:`StepCosts` (per-token compute, drafting
  and, at concurrency 1, the plain decode step), as ``spectui.core.probe.predict`` uses them.

Model (docs/tune.md): a verify step of a setting that checks ``N`` positions per sequence, at
concurrency ``c``, takes

    S(N, c) = T(c) + [comm(N x c) - comm_decode(c)] + (N - 1) x c x token_ms + drafting(c)

with ``comm(t)`` = all-reduces per forward x the probe's latency at ``t`` tokens, drafting =
``(k + 1) x (draft_step_ms + c x topk x draft_token_ms)`` for a chain or EAGLE tree of ``k``
steps and ``tree_draft_ms`` for NGRAM. Where the run measured its own step at ``c``, the
prediction is anchored to it: ``S'(c) = S_measured(c) + extra(N', c) - extra(N, c)``, so whatever
the model leaves out of the measured step is carried over unchanged (``step_basis "anchored"``).
Then ``tok/s per stream = 1000 L / S``, ``L* = S / T``, ``speedup = L / L*``, and a setting
whose ``L*`` is at least its longest possible accept length cannot win whatever the drafter.

Accept length (``spectui.core.tune.acceptance``): chain settings with no more steps than the run
are ``exact``; deeper chains ``extrapolated``; trees (EAGLE topk > 1, NGRAM) ``model``. Accept
length is taken as independent of concurrency.

API: ``predict_table(measured, probe_result, costs=None, settings=None) -> PredictionTable``;
``table.at(c)``, ``table.best(c)``, ``table.cannot_win()``, ``table.to_dict()``;
``candidate_settings(setting)`` lists the settings predicted by default.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any

from spectui.core.probe.predict import StepCosts, decode_comm_ms, forward_allreduces, latency_ms
from spectui.core.server_frames import WIDTH_IN_FORCE, ServerFrame, settings_in_force
from spectui.core.tune import acceptance
from spectui.core.tune.errors import TuneError
from spectui.core.tune.setting import CHAIN, NGRAM_TREE, SettingError, SpecSetting

EXACT, EXTRAPOLATED, MODEL = "exact", "extrapolated", "model"
MEASURED, ANCHORED, MODELLED = "measured", "anchored", "modelled"
CHAIN_STEPS = tuple(range(1, 9))        # chain steps predicted by default (and the run's own)
TREE_DRAFT_TOKENS = tuple(range(2, 17))  # NGRAM / EAGLE-tree widths predicted by default


@dataclass(frozen=True)
class StepPoint:
    """Measured step times at one concurrency (ms; None where not measured)."""

    concurrency: int
    spec_step_ms: float | None = None   # the measured run's verify step
    base_step_ms: float | None = None   # the plain baseline's decode step, T(c)


@dataclass(frozen=True)
class MeasuredRun:
    """What one speculative profile's benchmark measured."""

    setting: SpecSetting
    histogram: tuple[int, ...]
    points: tuple[StepPoint, ...] = ()
    profile: str | None = None
    source: str | None = None           # where the numbers came from, in words
    setting_source: str | None = None   # where ``setting``'s width came from (server_frames.WIDTH_IN_FORCE, LAUNCH_FLAG)

    def point(self, concurrency: int) -> StepPoint | None:
        for p in self.points:
            if p.concurrency == concurrency:
                return p
        return None

    @property
    def accept_length(self) -> float:
        return acceptance.accept_length(self.histogram)


@dataclass(frozen=True)
class Prediction:
    """One setting at one concurrency."""

    setting: SpecSetting
    concurrency: int
    accept_length: float
    accept_basis: str                # "exact" | "extrapolated" | "model"
    step_ms: float | None
    step_basis: str | None           # "measured" | "anchored" | "modelled" (None: no step time)
    tok_s: float | None              # per stream
    baseline_tok_s: float | None     # per stream, plain decoding
    lstar: float | None              # break-even accept length S / T
    max_accept: int
    can_win: bool | None             # L* below the longest possible accept length
    speedup_vs_baseline: float | None
    needed_rate: float | None        # constant per-position acceptance that reaches L*
    interpolated: bool               # the verify size was not measured by the probe
    is_measured: bool                # this is the run's own setting

    def to_dict(self) -> dict[str, Any]:
        return {"setting": self.setting.to_dict(), "concurrency": self.concurrency,
                "accept_length": self.accept_length, "accept_basis": self.accept_basis,
                "step_ms": self.step_ms, "step_basis": self.step_basis, "tok_s": self.tok_s,
                "baseline_tok_s": self.baseline_tok_s, "lstar": self.lstar, "max_accept": self.max_accept,
                "can_win": self.can_win, "speedup_vs_baseline": self.speedup_vs_baseline,
                "needed_rate": self.needed_rate, "interpolated": self.interpolated,
                "is_measured": self.is_measured}


@dataclass(frozen=True)
class PredictionTable:
    measured: MeasuredRun
    rows: tuple[Prediction, ...]
    #: measured step minus modelled step of the run's own setting, per concurrency (ms)
    residual_ms: tuple[tuple[int, float], ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def concurrencies(self) -> tuple[int, ...]:
        return tuple(sorted({r.concurrency for r in self.rows}))

    @property
    def settings(self) -> tuple[SpecSetting, ...]:
        seen: list[SpecSetting] = []
        for r in self.rows:
            if r.setting not in seen:
                seen.append(r.setting)
        return tuple(seen)

    def at(self, concurrency: int) -> tuple[Prediction, ...]:
        return tuple(r for r in self.rows if r.concurrency == concurrency)

    def row(self, setting: SpecSetting, concurrency: int) -> Prediction | None:
        for r in self.rows:
            if r.setting == setting and r.concurrency == concurrency:
                return r
        return None

    def best(self, concurrency: int) -> Prediction | None:
        """The fastest setting per stream at ``concurrency`` (None without step times)."""
        rows = [r for r in self.at(concurrency) if r.tok_s is not None]
        return max(rows, key=lambda r: r.tok_s) if rows else None

    def cannot_win(self) -> tuple[SpecSetting, ...]:
        """Settings whose L* is out of reach at every concurrency: no drafter can make them pay."""
        out = []
        for s in self.settings:
            verdicts = [r.can_win for r in self.rows if r.setting == s]
            if verdicts and all(v is False for v in verdicts):
                out.append(s)
        return tuple(out)

    def to_dict(self) -> dict[str, Any]:
        m = self.measured
        return {"measured": {"setting": m.setting.to_dict(), "histogram": list(m.histogram),
                             "accept_length": m.accept_length, "profile": m.profile, "source": m.source,
                             "setting_source": m.setting_source,
                             "points": [vars(p).copy() for p in m.points]},
                "rows": [r.to_dict() for r in self.rows],
                "residual_ms": [{"concurrency": c, "ms": v} for c, v in self.residual_ms],
                "cannot_win": [s.to_dict() for s in self.cannot_win()], "notes": list(self.notes)}


# -- the step model --------------------------------------------------------------------------

def decode_comm_at(probe: dict, concurrency: int) -> float:
    """Communication of a plain decode step of ``concurrency`` sequences. The simulated host
    reports its decode all-reduce at batch 1 only (``decode_path``), which is used as is."""
    if concurrency <= 1 or (probe.get("allreduce") or {}).get("decode_path"):
        return decode_comm_ms(probe)
    return forward_allreduces(probe) * latency_ms(probe, concurrency)[0]


def drafting_ms(costs: StepCosts, setting: SpecSetting, concurrency: int) -> float:
    """Drafting per verify step: ``(k + 1)`` draft forwards for a chain or EAGLE tree, the trie
    lookup for NGRAM (its batch-1 cost)."""
    if setting.shape == NGRAM_TREE:
        return costs.tree_draft_ms
    k = int(setting.num_steps or 0)
    return (k + 1) * (costs.draft_step_ms + concurrency * setting.topk * costs.draft_token_ms)


def extra_step_ms(probe: dict, costs: StepCosts, setting: SpecSetting, concurrency: int) -> tuple[float, bool]:
    """``S(N, c) - T(c)``: what a verify step costs beyond a plain decode step, and whether the
    probe's latency at ``N x c`` tokens was interpolated."""
    n, c = setting.draft_tokens, concurrency
    lat, interpolated = latency_ms(probe, n * c)
    comm = max(0.0, forward_allreduces(probe) * lat - decode_comm_at(probe, c))
    return comm + (n - 1) * c * costs.token_ms + drafting_ms(costs, setting, c), interpolated


# -- accept length of another setting --------------------------------------------------------

def predicted_accept_length(measured: MeasuredRun, target: SpecSetting) -> tuple[float, str]:
    """Accept length of ``target`` from the measured histogram, and its basis."""
    src = measured.setting
    if (src.algorithm, src.shape == NGRAM_TREE) != (target.algorithm, target.shape == NGRAM_TREE):
        raise TuneError(f"a {src.algorithm} run cannot predict {target.algorithm}: measure that drafter")
    hist = measured.histogram
    observed = src.max_correct_drafts
    if acceptance.deepest(hist) > observed:
        raise TuneError(f"the histogram has steps with {acceptance.deepest(hist)} correct drafts, more than "
                        f"{src.label} allows: the run's settings do not match its histogram")
    depth = target.max_correct_drafts
    value = acceptance.extrapolated_accept_length(hist, observed, depth)
    if target == src:
        return value, EXACT
    if src.shape == CHAIN and target.shape == CHAIN:
        return value, EXACT if depth <= observed else EXTRAPOLATED
    return value, MODEL


def candidate_settings(setting: SpecSetting, *, chain_steps: Iterable[int] = CHAIN_STEPS,
                       tree_draft_tokens: Iterable[int] = TREE_DRAFT_TOKENS) -> tuple[SpecSetting, ...]:
    """The run's own setting and its neighbours: chains of each step count; NGRAM of each width;
    EAGLE trees of each step count at the run's width and each width at its step count."""
    out = [setting]
    if setting.shape == CHAIN:
        out += [setting.with_steps(k) for k in chain_steps]
    elif setting.shape == NGRAM_TREE:
        out += [setting.with_draft_tokens(n) for n in tree_draft_tokens]
    else:
        out += [setting.with_steps(k) for k in chain_steps]
        out += [setting.with_draft_tokens(n) for n in tree_draft_tokens if n >= 2]
    unique: list[SpecSetting] = []
    for s in out:
        if s not in unique and s.max_correct_drafts >= 1:
            unique.append(s)
    key = (lambda s: (s.num_steps or 0, s.draft_tokens))
    return tuple(sorted(unique, key=key))


def _base_step(measured: MeasuredRun, costs: StepCosts, c: int) -> float | None:
    p = measured.point(c)
    if p and p.base_step_ms:
        return p.base_step_ms
    if c == 1 and costs.decode_step_ms:
        return float(costs.decode_step_ms)
    return None


def predict_table(measured: MeasuredRun, probe: dict, costs: StepCosts | None = None, *,
                  settings: Sequence[SpecSetting] | None = None,
                  concurrencies: Sequence[int] | None = None) -> PredictionTable:
    """Predictions for ``settings`` (default: :func:`candidate_settings`) at each concurrency the
    run or the baseline measured (or ``concurrencies``)."""
    costs = costs or StepCosts.from_result(probe)
    settings = tuple(settings) if settings is not None else candidate_settings(measured.setting)
    if concurrencies is None:
        concurrencies = sorted({p.concurrency for p in measured.points}) or [1]
    own = measured.setting
    rows, residuals, notes = [], [], []
    for c in concurrencies:
        base = _base_step(measured, costs, c)
        point = measured.point(c)
        spec = point.spec_step_ms if point else None
        own_extra, _ = extra_step_ms(probe, costs, own, c)
        if spec and base:
            residuals.append((c, spec - (base + own_extra)))
        for s in settings:
            length, basis = predicted_accept_length(measured, s)
            extra, interp = extra_step_ms(probe, costs, s, c)
            if spec and s == own:
                step, step_basis = spec, MEASURED
            elif spec:
                step, step_basis = spec + extra - own_extra, ANCHORED
            elif base:
                step, step_basis = base + extra, MODELLED
            else:
                step, step_basis = None, None
            lstar = step / base if step and base else None
            can_win = None if lstar is None else lstar < s.max_accept
            rows.append(Prediction(
                setting=s, concurrency=c, accept_length=length, accept_basis=basis, step_ms=step,
                step_basis=step_basis, tok_s=1000.0 * length / step if step else None,
                baseline_tok_s=1000.0 / base if base else None, lstar=lstar, max_accept=s.max_accept,
                can_win=can_win, speedup_vs_baseline=length / lstar if lstar else None,
                needed_rate=acceptance.needed_rate(lstar, s.max_correct_drafts) if lstar else None,
                interpolated=interp, is_measured=(s == own)))
    if not any(_base_step(measured, costs, c) for c in concurrencies):
        notes.append("no plain decode step time is known (benchmark the baseline profile, or give the probe "
                     "--decode-step-ms), so there is no L* or speedup")
    return PredictionTable(measured=measured, rows=tuple(rows), residual_ms=tuple(residuals), notes=tuple(notes))


# -- from benchmark history -------------------------------------------------------------------

def _get(run: Any, name: str) -> Any:
    return run.get(name) if isinstance(run, Mapping) else getattr(run, name, None)


def run_step_ms(run: Any) -> float | None:
    """A run's step time: ``stats.step_ms``, else its median ITL (one streamed chunk per step)."""
    stats = _get(run, "stats") or {}
    if stats.get("step_ms"):
        return float(stats["step_ms"])
    itl = (stats.get("itl_ms") or {}).get("p50")
    return float(itl) if itl else None


def _steps_by_concurrency(runs: Iterable[Any]) -> dict[int, float]:
    by: dict[int, list[float]] = {}
    for r in runs:
        c, ms = _get(r, "concurrency"), run_step_ms(r)
        if c and ms and _get(r, "state") in (None, "done"):
            by.setdefault(int(c), []).append(ms)
    return {c: float(median(v)) for c, v in by.items()}


def measured_from_runs(spec_runs: Sequence[Any], baseline_runs: Sequence[Any] = (), *,
                       setting: SpecSetting | None = None, frame: ServerFrame | None = None) -> MeasuredRun:
    """A :class:`MeasuredRun` from finished runs (``RunResult`` or its dict) of one speculative
    profile, and optionally of the plain baseline: histograms added, step times the median of the
    repeats at each concurrency. The runs' settings are their server's launch flags (``/server_info``);
    ``frame``, a live frame of that server, puts the width it runs now over them where it carries one
    (``--speculative-adaptive`` changes it while serving)."""
    done = [r for r in spec_runs if _get(r, "state") in (None, "done")]
    if not done:
        raise TuneError("no finished run of the speculative profile: benchmark it first")
    setting_source = None
    if setting is None:
        found = {SpecSetting.from_settings(_get(r, "speculative") or {}) for r in done}
        if len(found) != 1:
            raise TuneError("the runs used different speculative settings: predict from one setting's runs")
        in_force, setting_source = settings_in_force(_get(done[0], "speculative") or {}, frame)
        setting = SpecSetting.from_settings(in_force) if setting_source == WIDTH_IN_FORCE else found.pop()
    hist: list[int] = []
    for r in done:
        h = (_get(r, "stats") or {}).get("correct_drafts_histogram") or []
        hist.extend([0] * (len(h) - len(hist)))
        for i, n in enumerate(h):
            hist[i] += int(n)
    if not sum(hist):
        raise TuneError("the runs kept no correct-drafts histogram (the server sent none): benchmark with a "
                        "SGLang that reports spec_correct_drafts_histogram")
    spec, base = _steps_by_concurrency(done), _steps_by_concurrency(baseline_runs)
    points = tuple(StepPoint(c, spec.get(c), base.get(c)) for c in sorted(set(spec) | set(base)))
    profiles = {_get(r, "profile") for r in done}
    return MeasuredRun(setting=setting, histogram=tuple(hist), points=points,
                       profile=profiles.pop() if len(profiles) == 1 else None,
                       source=f"{len(done)} benchmark run(s)", setting_source=setting_source)


__all__ = [
    "ANCHORED", "EXACT", "EXTRAPOLATED", "MEASURED", "MODEL", "MODELLED", "MeasuredRun", "Prediction",
    "PredictionTable", "SettingError", "SpecSetting", "StepPoint", "TuneError", "candidate_settings",
    "decode_comm_at", "drafting_ms", "extra_step_ms", "measured_from_runs", "predict_table",
    "predicted_accept_length", "run_step_ms",
]
