"""When the first measurement leaves nothing to predict from, the tune says why, per run: the run failed (its
error), was cancelled, measured no finished request, or the server returned no per-request speculative fields."""

from __future__ import annotations

import asyncio

import pytest

from spectui.core.bench import CompareEvent
from spectui.core.bench.runs import RunResult
from spectui.core.profiles import load_profiles
from spectui.core.tune import TuneError
from spectui.core.tune import run as tune_run
from spectui.core.tune.plan import tune_inputs
from spectui.core.tune.why import why_no_histogram

DONE = {"completed": 3, "errors": 0, "correct_drafts_histogram": [5, 2, 1]}
SPEC = {"algorithm": "NGRAM", "draft_tokens": 8}


def result(rid, profile="kimi-ngram", state="done", reason=None, stats=None, speculative=SPEC, c=1, rep=1):
    return RunResult(run_id=rid, host="demo", state=state, reason=reason, profile=profile, concurrency=c, repeat=rep,
                     speculative=speculative if profile == "kimi-ngram" else None, stats=dict(stats or DONE))


def test_each_run_says_why_it_kept_no_histogram():
    runs = [result("r1", state="failed", reason="the server answered 503"),
            result("r2", state="interrupted", reason="cancelled", rep=2),
            result("r3", stats={"completed": 0, "errors": 3, "error_messages": ["timed out after 60 s"]}, c=8),
            result("r4", stats={"completed": 3, "correct_drafts_histogram": []}, c=8, rep=2)]
    text = why_no_histogram("kimi-ngram", runs)
    assert text.startswith("the runs of kimi-ngram kept no correct-drafts histogram")
    assert "run r1 (c=1, repeat 1) failed: the server answered 503" in text
    assert "run r2 (c=1, repeat 2) was cancelled" in text
    assert "run r3 (c=8, repeat 1) measured no finished request (3 requests failed: timed out after 60 s)" in text
    assert "run r4 (c=8, repeat 2) got no per-request speculative fields" in text
    assert "spec_correct_drafts_histogram" in text and "tokenizer_manager.py" in text
    assert why_no_histogram("kimi-ngram", [], switch_failure="port 30000 is in use").endswith(
        "its server did not start (port 30000 is in use)")


class Store:
    def __init__(self):
        self.saved: list[RunResult] = []

    def runs(self):
        return [r.to_dict() for r in self.saved]


@pytest.mark.parametrize("bad", [
    result("r9", state="failed", reason="connection refused"),
    result("r9", stats={"completed": 2, "correct_drafts_histogram": None}),
])
def test_the_tune_ends_with_the_runs_reasons_not_a_bare_nothing_to_predict_from(monkeypatch, bad):
    store = Store()

    async def compare(session, profiles, preset, *, store=None, on_event=None, **kw):
        for p in profiles:
            r = bad if p.name == "kimi-ngram" else result("b1", profile=p.name)
            store.saved.append(r)
            on_event(CompareEvent("run_finished", p.name, 1, 1, 1, 2, r.run_id, result=r))
        return {"id": "c1", "profiles": [], "baseline": profiles[0].name}

    async def nothing(*a, **k):
        return []

    async def probe(*a, **k):
        return {}, None

    monkeypatch.setattr(tune_run, "run_comparison", compare)
    monkeypatch.setattr(tune_run, "problems_on_host", nothing)
    monkeypatch.setattr(tune_run, "probe_for", probe)
    monkeypatch.setattr(tune_run, "host_label", lambda s: "demo")
    inputs = tune_inputs(load_profiles(), "kimi-ngram", 8.0, concurrency=[1], repeats=1)
    with pytest.raises(TuneError) as err:
        asyncio.run(tune_run.run_tune(object(), inputs, store=store))
    assert str(err.value) == why_no_histogram("kimi-ngram", [bad])
    assert "run r9 (c=1, repeat 1)" in str(err.value)
