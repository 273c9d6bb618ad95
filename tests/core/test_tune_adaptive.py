"""The adaptive speculation config proposed from predictions, in SGLang 0.5.23's own shape.

The last test hands the JSON to the real SGLang 0.5.23 ``AdaptiveSpeculativeParams`` (the
real-SGLang venv) and checks how it routes batch sizes.
"""

from __future__ import annotations

import json

import pytest

from spectui.core.probe.predict import StepCosts
from spectui.core.tune import MeasuredRun, SpecSetting, StepPoint, predict_table, propose_adaptive_config
from spectui.core.tune.adaptive import adaptive_flag_problem
from spectui.core.tune.variants import DEFAULT_ADAPTIVE_STEPS

from tests.support import real_sglang as rs

# A cheap all-reduce (5 per forward): decode 5 x 0.2 = 1.0 ms; latency 0.2 + 0.02 per token above 1
# (2: .22, 3: .24, 4: .26, 8: .34, 16: .50, beyond 16 along the last segment: 32 tokens -> .82).
CHEAP = {"model": {"layers": 2}, "allreduce": {"world_size": 8, "decode_path": {"median_ms": 0.2}, "sizes": [
    {"tokens": t, "median_ms": ms} for t, ms in ((1, 0.2), (2, 0.22), (4, 0.26), (8, 0.34), (16, 0.5))]}}
# Drafting per forward 0.3 ms + 0.5 ms per sequence: cheap alone, dear at 16 sequences.
COSTS = StepCosts(decode_step_ms=10.0, token_ms=0.05, draft_step_ms=0.3, draft_token_ms=0.5)
# q = .8, .6, .5, .3 over 4 steps: L(1..4) = 1.8, 2.28, 2.52, 2.592
HIST = (2000, 3200, 2400, 1680, 720)


def table():
    m = MeasuredRun(SpecSetting.chain("EAGLE3", 4), HIST,
                    (StepPoint(1, base_step_ms=10.0), StepPoint(16, base_step_ms=12.0)))
    return predict_table(m, CHEAP, COSTS)


def test_slots_keep_the_winning_steps_and_switch_drafting_off_where_nothing_wins():
    t = table()
    # c=1, 3 steps: (1.3 - 1.0) + 3 x 0.05 + 4 x (0.3 + 0.5) = 3.65; S = 13.65; speedup 2.52 / 1.365 = 1.846
    # c=1, 1 step:  (1.1 - 1.0) + 0.05 + 2 x 0.8 = 1.75; S = 11.75; L* 1.175
    one_c1 = t.row(SpecSetting.chain("EAGLE3", 1), 1)
    assert one_c1.step_ms == pytest.approx(11.75)
    assert t.row(SpecSetting.chain("EAGLE3", 3), 1).speedup_vs_baseline == pytest.approx(2.52 / 1.365)
    # c=16, 1 step: 32 tokens (4.1 - 1.0) + 1 x 16 x 0.05 + 2 x (0.3 + 16 x 0.5) = 20.5; S = 32.5; L* 2.708 >= 2
    one_c16 = t.row(SpecSetting.chain("EAGLE3", 1), 16)
    assert one_c16.step_ms == pytest.approx(32.5)
    assert one_c16.can_win is False
    p = propose_adaptive_config(t)
    cfg = p.config()
    assert list(cfg) == ["1", "16"]
    # every chain of 1..8 steps wins alone; 0 is left out since SGLang's fall-back point, accept length
    # 1 + 0.5 - 0.25 = 1.25, still beats 1 step's L* of 1.175
    assert cfg["1"]["candidate_steps"] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert cfg["16"]["candidate_steps"] == [0]
    assert cfg["1"]["down_hysteresis"] == -0.25 and cfg["1"]["up_hysteresis"] == 0.0
    assert p.num_steps == 3                     # the best at concurrency 1 (1.846x)
    assert p.speculation_pays and not p.problems
    assert json.loads(p.to_json()) == cfg
    assert p.args("/tmp/adaptive.json")["speculative-num-draft-tokens"] == 4


def test_unsupported_shapes_and_hosts_are_said():
    m = MeasuredRun(SpecSetting.ngram(8), (5, 3, 2), (StepPoint(1, base_step_ms=10.0),))
    p = propose_adaptive_config(predict_table(m, CHEAP, COSTS))
    assert any("only EAGLE and EAGLE3 chains" in s for s in p.problems)
    assert "--speculative-adaptive" in adaptive_flag_problem({"--speculative-num-steps"})
    assert adaptive_flag_problem({"--speculative-adaptive", "--speculative-adaptive-config"}) is None
    assert adaptive_flag_problem(None) is None


REAL = r'''
import json, sys
from sglang.srt.speculative.adaptive_spec_params import (AdaptiveSpeculativeParams, DEFAULT_ADAPTIVE_CONFIG,
    resolve_candidate_steps_from_config)
path, steps = sys.argv[1], int(sys.argv[2])
params = AdaptiveSpeculativeParams(initial_steps=steps, cfg_path=path)
default = sorted({s for e in DEFAULT_ADAPTIVE_CONFIG.values() for s in e["candidate_steps"]})
print(json.dumps({"union": resolve_candidate_steps_from_config(path), "bs1": params.get_steps_for_batch(1),
                  "bs15": params.get_steps_for_batch(15), "bs16": params.get_steps_for_batch(16),
                  "bs64": params.get_steps_for_batch(64), "default": default}))
'''


def test_real_sglang_reads_the_proposed_config(real_sglang_python, tmp_path):
    p = propose_adaptive_config(table())
    path = tmp_path / "adaptive.json"
    path.write_text(p.to_json())
    r = rs.run_real(real_sglang_python, ["-c", REAL, str(path), str(p.num_steps)], timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["union"] == [0, 1, 2, 3, 4, 5, 6, 7, 8]
    assert out["bs1"] == 3 and out["bs15"] == 3            # slot "1" starts at the given steps
    assert out["bs16"] == 0 and out["bs64"] == 0           # slot "16" has drafting off
    assert tuple(out["default"]) == DEFAULT_ADAPTIVE_STEPS
