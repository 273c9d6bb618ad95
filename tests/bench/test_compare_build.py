"""Comparisons built from runs: speedup, noise, break-even, sweep verdicts, and the table."""

import csv
import io
import json

import pytest

from spectui.core.bench.compare import build_comparison
from spectui.core.bench.presets import Preset
from spectui.core.bench.runs import RunResult
from spectui.core.bench.table import bar_chart, render_comparison, speedup_bars


def run(profile, conc, tok_s, *, accept=None, rid="r", step_ms=None):
    """A run whose single request decodes at the rate implied by ``step_ms`` (or ``tok_s``)."""
    rate = (1000.0 * (accept or 1.0) / step_ms) if step_ms else tok_s
    rec = {"i": 0, "ok": True, "t_start": 0.0, "ttft_ms": 10.0, "e2e_ms": 10.0 + 1000.0 * 100 / rate,
           "output_tokens": 101, "first_chunk_tokens": 1, "itl_ms": [5.0], "chunk_tokens": [1],
           "spec": {"verify_ct": round(101 / accept), "accept_length": accept} if accept else None}
    stats = {"output_tok_s": tok_s, "errors": 0, "speculative": bool(accept),
             "accept_length": {"per_request": accept, "metrics_tokens": 101.0,
                               "metrics_verify_calls": 101.0 / accept} if accept else None}
    return RunResult(run_id=f"{rid}-{profile}-{conc}-{tok_s}", host="h", state="done", profile=profile,
                     concurrency=conc, stats=stats, records=[rec],
                     speculative={"algorithm": "EAGLE3", "draft_tokens": 4} if accept else None)


def test_speedup_noise_and_break_even():
    p = Preset(name="s", concurrency=(1,), repeats=3)
    runs = [run("base", 1, t, step_ms=12.2) for t in (80.0, 82.0, 81.0)]
    runs += [run("spec", 1, t, accept=2.0, step_ms=33.0) for t in (59.0, 60.0, 61.0)]
    runs += [run("close", 1, t, accept=3.0, step_ms=37.0) for t in (80.0, 81.5, 83.0)]
    comp = build_comparison(runs, profiles=["base", "spec", "close"], baseline="base", preset=p, host="h")
    cells = {r["name"]: r["cells"]["1"] for r in comp["profiles"]}
    assert cells["spec"]["speedup"] == pytest.approx(60 / 81) and cells["spec"]["noise"] is False
    assert cells["close"]["speedup"] == pytest.approx(81.5 / 81) and cells["close"]["noise"] is True
    assert cells["base"]["step_ms"] == pytest.approx(12.2) and cells["spec"]["step_ms"] == pytest.approx(33.0)
    assert cells["spec"]["l_star"] == pytest.approx(33.0 / 12.2)
    assert cells["base"]["l_star"] is None
    v = comp["verdicts"]
    assert v[0].startswith("spec is slower than base (0.74x)") and "2.00" in v[0] and "L* 2.70" in v[0]
    assert "noise" in v[1]
    text = render_comparison(comp)
    assert "0.74x" in text and "(noise)" in text and "baseline" in text and "±" in text
    rows = list(csv.DictReader(io.StringIO(render_comparison(comp, "csv"))))
    assert [r["profile"] for r in rows] == ["base", "spec", "close"] and rows[2]["noise"] == "True"
    assert json.loads(render_comparison(comp, "json"))["baseline"] == "base"
    bars = speedup_bars(comp)
    assert [b["profile"] for b in bars] == ["base", "spec", "close"] and bars[0]["baseline"]
    chart = bar_chart(comp, width=20)
    assert chart.splitlines()[1].startswith("spec") and "0.74x" in chart


def test_sweep_says_where_speculation_stops_paying():
    p = Preset(name="sweep", concurrency=(1, 2, 4, 8), repeats=1)
    runs = []
    for c, (b, s) in {1: (100, 130), 2: (190, 220), 4: (350, 340), 8: (600, 450)}.items():
        runs += [run("base", c, float(b)), run("spec", c, float(s), accept=2.5)]
    comp = build_comparison(runs, profiles=["base", "spec"], baseline="base", preset=p, host="h")
    assert comp["verdicts"] == ["spec pays at concurrency 1, 2; speculation stops paying at concurrency 4"]
    text = render_comparison(comp)
    assert "C=1" in text and "C=8" in text and "0.75x" in text
    never = [run("base", c, 100.0) for c in (1, 2, 4, 8)] + [run("spec", c, 50.0, accept=1.5) for c in (1, 2, 4, 8)]
    comp2 = build_comparison(never, profiles=["base", "spec"], baseline="base", preset=p, host="h")
    assert comp2["verdicts"] == ["spec never pays against base (concurrency 1, 2, 4, 8)"]


def test_failed_profile_is_shown_not_hidden():
    p = Preset(name="s", concurrency=(1,), repeats=1)
    comp = build_comparison([run("base", 1, 80.0)], profiles=["base", "broken"], baseline="base", preset=p,
                            host="h", failures={"broken": "the server ended failed: CUDA out of memory"})
    assert "broken: not measured: the server ended failed: CUDA out of memory" in comp["verdicts"]
    assert "failed" in render_comparison(comp)
