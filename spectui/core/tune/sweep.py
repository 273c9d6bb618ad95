"""Sweeps and ``spectui tune``: predictions for variants, the few worth running, and the verdict.

Pure functions over plain dicts (history runs, comparison dicts) and the prediction model:

* ``baseline_for(profile, lookup)``: the plain profile a speculative one is compared with (the
  nearest ancestor in its ``extends`` chain without speculation);
* ``history_measured(runs, profile, host=None, baseline=None)``: a :class:`MeasuredRun` from the
  latest comparison (else run) of ``profile`` in the history, with the baseline's runs of the
  same comparison (else its latest on the host); None when there is none;
* ``predict_variants(measured, probe, named_settings, concurrencies)``: one
  :class:`VariantPrediction` per named profile (its setting's :class:`Prediction` at each
  concurrency, or the sentence why it cannot be predicted);
* ``promising_settings(table, count)``: the untried settings with the best predicted speedup;
* ``variant_for_setting(base, setting)``: the variant profile that selects ``setting``;
* ``predicted_vs_measured(comp, predictions)``: per variant and concurrency, predicted and
  measured per-stream tok/s and speedup, and their ratio;
* ``recommend(comps, concurrencies)``: the best measured setting per concurrency with its speedup
  and noise, or why nothing beats the baseline (verify step against decode step, and the accept
  length a drafter would need).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from spectui.core.profiles import Profile
from spectui.core.server_frames import ServerFrame, settings_in_force
from spectui.core.tune.errors import TuneError
from spectui.core.tune.predict import MeasuredRun, Prediction, PredictionTable, measured_from_runs, predict_table
from spectui.core.tune.setting import SpecSetting
from spectui.core.tune.variants import Variant, make_variant


def baseline_for(profile: Profile, lookup: Callable[[str], Profile]) -> str | None:
    """The nearest ancestor of ``profile`` (``extends`` chain, closest first) without speculation."""
    for name in reversed(profile.chain[:-1] if profile.chain and profile.chain[-1] == profile.name
                         else profile.chain):
        try:
            if lookup(name).algorithm is None:
                return name
        except Exception as exc:  # noqa: BLE001 - an ancestor that no longer loads is simply not a baseline
            logging.getLogger(__name__).debug("profile %s is not a baseline for %s: %s", name, profile.name, exc)
            continue
    return None


def _done(run: Mapping) -> bool:
    return run.get("state") in (None, "done")


def history_measured(runs: Sequence[Mapping], profile: str, *, host: str | None = None,
                     baseline: str | None = None, frame: ServerFrame | None = None) -> MeasuredRun | None:
    """The latest measurement of ``profile`` in ``runs`` (history dicts, oldest first); ``frame``: a live frame
    of ``profile``'s server, whose width in force replaces the runs' launch flags (``measured_from_runs``)."""
    mine = [r for r in runs if r.get("profile") == profile and _done(r) and (host is None or r.get("host") == host)
            and r.get("speculative")]
    if not mine:
        return None
    key = mine[-1].get("comparison_key")
    spec = [r for r in mine if r.get("comparison_key") == key] if key else [mine[-1]]
    base: list[Mapping] = []
    if baseline:
        theirs = [r for r in runs if r.get("profile") == baseline and _done(r)
                  and (host is None or r.get("host") == host)]
        base = [r for r in theirs if key and r.get("comparison_key") == key]
        if not base and theirs:
            last = theirs[-1].get("comparison_key")
            base = [r for r in theirs if r.get("comparison_key") == last] if last else [theirs[-1]]
    try:
        measured = measured_from_runs(spec, base, frame=frame)
    except TuneError:
        return None
    ids = [r.get("id") for r in spec if r.get("id") is not None]
    src = f"history run{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))}" if ids else measured.source
    return MeasuredRun(setting=measured.setting, histogram=measured.histogram, points=measured.points,
                       profile=profile, source=src, setting_source=measured.setting_source)


@dataclass(frozen=True)
class VariantPrediction:
    """What the model predicts for one named profile (a variant, or the base itself)."""

    name: str                                  # display name: ``kimi-ngram[num-draft-tokens=3]``
    server: str                                # the profile/server name
    setting: SpecSetting | None
    rows: tuple[Prediction, ...] = ()
    reason: str | None = None                  # why there is no prediction
    setting_source: str | None = None          # where the setting's width came from (WIDTH_IN_FORCE, LAUNCH_FLAG)

    def at(self, concurrency: int) -> Prediction | None:
        return next((r for r in self.rows if r.concurrency == concurrency), None)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "server": self.server,
                "setting": self.setting.to_dict() if self.setting else None,
                "rows": [r.to_dict() for r in self.rows], "reason": self.reason, "setting_source": self.setting_source}


def predict_variants(measured: MeasuredRun, probe: dict, named: Sequence[tuple[str, Profile]],
                     concurrencies: Sequence[int], costs=None,
                     frames: Mapping[str, ServerFrame] | None = None) -> tuple[VariantPrediction, ...]:
    """Predictions for ``(display name, profile)`` pairs at ``concurrencies``. ``frames`` (server name -> its
    latest live frame): a profile whose server runs now predicts the width in force there, not its launch flag."""
    out = []
    for name, prof in named:
        try:
            settings, source = settings_in_force(prof.speculative_settings(), (frames or {}).get(prof.name))
            setting = SpecSetting.from_settings(settings)
            table = predict_table(measured, probe, costs, settings=[setting], concurrencies=list(concurrencies))
            out.append(VariantPrediction(name, prof.name, setting, table.rows, setting_source=source))
        except TuneError as exc:
            out.append(VariantPrediction(name, prof.name, None, reason=str(exc)))
    return tuple(out)


def _speedup(p: Prediction) -> float | None:
    return p.speedup_vs_baseline


def promising_settings(table: PredictionTable, count: int) -> tuple[SpecSetting, ...]:
    """Up to ``count`` settings other than the measured one: the best predicted speedup at each
    concurrency in turn, then the second best at each, and so on."""
    ranked: list[list[SpecSetting]] = []
    for c in table.concurrencies:
        rows = [r for r in table.at(c) if r.setting != table.measured.setting and _speedup(r) is not None]
        ranked.append([r.setting for r in sorted(rows, key=lambda r: -_speedup(r))])
    out: list[SpecSetting] = []
    for i in range(max((len(r) for r in ranked), default=0)):  # the best at each concurrency in turn
        for order in ranked:
            if i < len(order) and order[i] not in out and len(out) < max(0, count):
                out.append(order[i])
    return tuple(out)


def variant_for_setting(base: Profile, setting: SpecSetting) -> Variant:
    """The variant of ``base`` whose flags select ``setting``."""
    changes = [(k, v) for k, v in setting.args().items() if base.args.get(k) != v]
    if not changes:
        raise TuneError(f"{base.name} already runs {setting.label}")
    return make_variant(base, changes)


def _cell_accept(cell: Mapping) -> float | None:
    acc = cell.get("accept_length") or {}
    return acc.get("per_request") if acc.get("per_request") is not None else acc.get("metrics")


def predicted_vs_measured(comp: Mapping, predictions: Sequence[VariantPrediction]) -> list[dict]:
    """Rows of predicted beside measured, per variant and concurrency (per-stream decode tok/s)."""
    rows = {row["name"]: row for row in comp.get("profiles") or []}
    out = []
    for vp in predictions:
        row = rows.get(vp.server)
        for p in vp.rows:
            cell = ((row or {}).get("cells") or {}).get(str(p.concurrency)) or {}
            measured = cell.get("decode_tok_s")
            out.append({
                "name": vp.name, "server": vp.server, "concurrency": p.concurrency,
                "predicted_tok_s": p.tok_s, "measured_tok_s": measured,
                "ratio": p.tok_s / measured if p.tok_s and measured else None,
                "predicted_accept_length": p.accept_length, "measured_accept_length": _cell_accept(cell),
                "predicted_speedup": p.speedup_vs_baseline, "measured_speedup": cell.get("speedup"),
                "accept_basis": p.accept_basis, "step_basis": p.step_basis,
            })
    return out


@dataclass(frozen=True)
class Pick:
    """The best measured setting at one concurrency."""

    concurrency: int
    name: str | None            # display name (None: nothing was measured there)
    speedup: float | None
    noise: bool | None
    spread: float | None        # the tok/s spread of the pick and of the baseline, added
    accept_length: float | None
    step_ms: float | None
    baseline_step_ms: float | None
    l_star: float | None
    beats_baseline: bool
    comparison: str | None = None
    predicted: bool = False     # nothing was measured here: ``name`` and ``speedup`` are the model's best

    @property
    def predicted_win(self) -> bool:
        return self.predicted and self.speedup is not None and self.speedup > 1.0

    def sentence(self) -> str:
        c = f"concurrency {self.concurrency}"
        if self.name is None:
            return f"{c}: nothing was measured"
        if self.predicted:
            if self.predicted_win:
                return f"{c}: nothing was measured; predicted: {self.name} at {self.speedup:.2f}x the baseline"
            return (f"{c}: nothing was measured; predicted: no setting beats the baseline (best predicted: "
                    f"{self.name} at {self.speedup:.2f}x)")
        noise = f", within noise (spread ±{self.spread:.0%})" if self.noise else \
            (f", spread ±{self.spread:.0%}" if self.spread is not None else ", one repeat: no spread")
        if self.beats_baseline:
            return f"{c}: {self.name} at {self.speedup:.2f}x the baseline{noise}"
        text = f"{c}: no setting beats the baseline here"
        if self.step_ms and self.baseline_step_ms and self.l_star:
            text += (f", because verify costs {self.step_ms:.1f} ms against {self.baseline_step_ms:.1f} ms for "
                     f"decode; the drafter would need accept length {self.l_star:.2f}")
        accepts = f", accepting {self.accept_length:.2f}" if self.accept_length is not None else ""
        return text + f" (best measured: {self.name} at {self.speedup:.2f}x{accepts}{noise})"

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self), sentence=self.sentence())


@dataclass(frozen=True)
class Recommendation:
    picks: tuple[Pick, ...]
    names: Mapping[str, str] = field(default_factory=dict)

    @property
    def unmeasured(self) -> tuple[int, ...]:
        """The concurrencies where nothing was measured."""
        return tuple(p.concurrency for p in self.picks if p.name is None or p.predicted)

    @property
    def predicted_only(self) -> bool:
        """Nothing was measured at any concurrency: whatever the summary says is a prediction (or withheld)."""
        return bool(self.picks) and len(self.unmeasured) == len(self.picks)

    @property
    def summary(self) -> str:
        gaps = self.unmeasured
        if self.predicted_only and not any(p.predicted for p in self.picks):
            return f"no recommendation: nothing was measured at concurrency {_levels(gaps)}"
        if self.predicted_only:
            winners = {p.name for p in self.picks if p.predicted_win}
            why = f" (nothing measured at concurrency {_levels(gaps)})"
            if not winners:
                return "predicted: keep speculation off" + why
            if len(winners) == 1 and all(p.predicted_win for p in self.picks):
                return f"predicted: use {winners.pop()}" + why
            return "predicted: use " + "; ".join(_part(p) for p in self.picks) + why
        winners = {p.name for p in self.picks if p.beats_baseline}
        if not gaps:
            if not winners:
                return "no setting beats the baseline at any concurrency measured: keep speculation off here"
            if len(winners) == 1 and all(p.beats_baseline for p in self.picks):
                return f"use {winners.pop()}: it is the fastest measured at every concurrency"
        return "use " + "; ".join(_part(p) for p in self.picks)

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.summary, "predicted_only": self.predicted_only, "unmeasured": list(self.unmeasured),
                "per_concurrency": [p.to_dict() for p in self.picks]}


def _levels(concurrencies: Sequence[int]) -> str:
    names = [str(c) for c in concurrencies]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _part(p: Pick) -> str:
    c = f"at concurrency {p.concurrency}"
    if p.name is None:
        return f"nothing measured {c}"
    if p.predicted:
        return f"predicted: {p.name} {c}" if p.predicted_win else f"predicted: no speculation {c}"
    return f"{p.name} {c}" if p.beats_baseline else f"no speculation {c}"


def _predicted_pick(table: PredictionTable | None, c: int) -> Pick:
    rows = [r for r in (table.at(c) if table is not None else ()) if r.speedup_vs_baseline is not None]
    if not rows:
        return Pick(c, None, None, None, None, None, None, None, None, False)
    best = max(rows, key=lambda r: r.speedup_vs_baseline)
    base = 1000.0 / best.baseline_tok_s if best.baseline_tok_s else None
    return Pick(c, best.setting.label, best.speedup_vs_baseline, None, None, best.accept_length, best.step_ms, base,
                best.lstar, False, predicted=True)


def recommend(comps: Sequence[Mapping], concurrencies: Sequence[int],
              names: Mapping[str, str] | None = None, *, table: PredictionTable | None = None) -> Recommendation:
    """The best measured non-baseline row per concurrency over ``comps`` (each against its own
    baseline); it beats the baseline when its speedup is above 1 and not within noise. Where nothing
    was measured, ``table``'s best predicted setting, marked predicted (it never beats the baseline:
    the summary says ``predicted:``); without a table, nothing."""
    names = dict(names or {})
    picks = []
    for c in concurrencies:
        best: tuple[float, Mapping, Mapping, Mapping] | None = None
        for comp in comps:
            rows = comp.get("profiles") or []
            base = next((r for r in rows if r["name"] == comp.get("baseline")), None)
            bcell = ((base or {}).get("cells") or {}).get(str(c)) or {}
            for row in rows:
                if row is base or row.get("failed"):
                    continue
                cell = (row.get("cells") or {}).get(str(c)) or {}
                if cell.get("speedup") is None:
                    continue
                if best is None or cell["speedup"] > best[0]:
                    best = (cell["speedup"], comp, row, cell, bcell)
        if best is None:
            picks.append(_predicted_pick(table, c))
            continue
        speedup, comp, row, cell, bcell = best
        spreads = [s for s in ((cell.get("tok_s") or {}).get("spread"), (bcell.get("tok_s") or {}).get("spread"))
                   if s is not None]
        picks.append(Pick(
            concurrency=c, name=names.get(row["name"], row.get("variant") or row["name"]), speedup=speedup,
            noise=cell.get("noise"), spread=sum(spreads) if spreads else None, accept_length=_cell_accept(cell),
            step_ms=cell.get("step_ms"), baseline_step_ms=bcell.get("step_ms"), l_star=cell.get("l_star"),
            beats_baseline=speedup > 1.0 and not cell.get("noise"), comparison=comp.get("id")))
    return Recommendation(tuple(picks), names)


__all__ = ["Pick", "Recommendation", "VariantPrediction", "baseline_for", "history_measured", "predict_variants",
           "predicted_vs_measured", "promising_settings", "recommend", "variant_for_setting"]
