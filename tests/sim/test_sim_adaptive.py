"""``--speculative-adaptive`` on the simulated server, as SGLang 0.5.23 resolves and reports it.

The resolution follows sglang/srt/arg_groups/speculative_hook.py:1374-1427 (0.5.23 wheel); the step
count, the EMA rules of ``AdaptiveStepSlot`` (sglang/srt/speculative/adaptive_spec_params.py:153-272);
the report, the ``sglang:spec_num_steps`` gauge ("Currently active speculative_num_steps",
sglang/srt/observability/metrics_collector.py:535-537) and the log lines of
adaptive_spec_params.py:266-270 and eagle_worker_v2.py:1866-1872.
"""

from __future__ import annotations

import json
import re

import pytest
from prometheus_client.parser import text_string_to_metric_families

from spectui.sim.engine.adaptive import DEFAULT_ADAPTIVE_CONFIG, StepSlot, load_config

EAGLE3 = ["--model-path", "moonshotai/Kimi-K2.5", "--tp-size", "2", "--enable-metrics", "--decode-log-interval", "4",
          "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "lightseekorg/kimi-k2.5-eagle3",
          "--sim-load-time", "0.2", "--sim-hardware", "nvlink-8gpu", "--sim-weights-gb", "120"]
SWITCH = re.compile(r"^\[[^\]]+ TP0\] Switch adaptive runtime state: steps (\d+) -> (\d+), draft_tokens (\d+) -> (\d+)$",
                    re.M)
UPDATED = re.compile(r"^\[[^\]]+ TP0\] Adaptive spec params updated: steps (\d+) -> (\d+) \(ema_accept_len=\d+\.\d\d\)$",
                     re.M)


def gauges(sp) -> dict:
    text = sp.get("/metrics")[1].decode()
    return {f.name: f.samples[0].value for f in text_string_to_metric_families(text) if f.samples}


def timer_seconds(sp) -> dict:
    """``{category: seconds}`` of the device timer's counter."""
    text = sp.get("/metrics")[1].decode()
    return {s.labels["category"]: s.value for f in text_string_to_metric_families(text)
            if f.name == "sglang:forward_execution_seconds" for s in f.samples if s.name.endswith("_total")}


def generate(sp, n_tokens: int) -> None:
    sp.post_json("/generate", {"text": "The story of speculative decoding begins", "sampling_params": {
        "max_new_tokens": n_tokens, "temperature": 0}})


def test_a_slot_moves_down_when_drafts_are_rejected_and_up_when_they_are_accepted():
    slot = StepSlot(3, DEFAULT_ADAPTIVE_CONFIG["1"])
    assert slot.steps == 3 and slot.ema == 2.0
    lines = [slot.update([0]) for _ in range(30)]
    assert slot.steps == 1 and any(line and line.startswith("Adaptive spec params updated: steps 3 -> 1") for line in lines)
    up = StepSlot(1, DEFAULT_ADAPTIVE_CONFIG["1"])
    for _ in range(60):
        up.update([up.steps])  # every draft accepted: the EMA climbs past each rise threshold
    assert up.steps == 7


def test_a_config_without_a_batch_size_key_is_refused_in_sglangs_words(tmp_path):
    bad = tmp_path / "adaptive.json"
    bad.write_text(json.dumps({"x": {"candidate_steps": [1]}}))
    with pytest.raises(ValueError, match="at least one integer-string BS key"):
        load_config(str(bad))
    bad.write_text(json.dumps({"1": {"candidate_steps": [1, -2]}}))
    with pytest.raises(ValueError, match="candidate_steps must be a list of non-negative ints"):
        load_config(str(bad))


def test_the_active_step_count_is_reported_as_sglang_reports_it(sim_server, tmp_path):
    config = tmp_path / "adaptive.json"
    config.write_text(json.dumps({"1": {"candidate_steps": [1, 2, 3], "warmup_batches": 2, "update_interval": 2}}))
    sp = sim_server(*EAGLE3, "--speculative-adaptive", "--speculative-adaptive-config", str(config),
                    "--speculative-num-steps", "3")
    info = sp.get_json("/server_info")
    assert info["speculative_adaptive"] is True
    assert info["speculative_num_steps"] == 3 and info["speculative_num_draft_tokens"] == 4  # the launch values
    generate(sp, 160)
    log = sp.log()
    assert "AdaptiveSpeculativeParams initialized: steps=3, candidate_steps=[1, 2, 3]" in log
    switches = SWITCH.findall(log)
    assert switches and UPDATED.findall(log), log[-2000:]
    for old, new, old_tokens, new_tokens in switches:
        assert int(old_tokens) == int(old) + 1 and int(new_tokens) == int(new) + 1 and old != new
    # the gauge holds the step count active at the last decode log; the log's last switch says which
    g = gauges(sp)
    active = g["sglang:spec_num_steps"]
    assert active in (1, 2, 3) and g["sglang:spec_num_draft_tokens"] == active + 1
    assert sp.get_json("/server_info")["speculative_num_steps"] == 3


def test_adaptive_is_turned_off_for_ngram_as_sglang_does(sim_server):
    sp = sim_server("--model-path", "moonshotai/Kimi-K2.5", "--tp-size", "2", "--enable-metrics",
                    "--speculative-algorithm", "NGRAM", "--speculative-adaptive", "--sim-load-time", "0.2",
                    "--sim-weights-gb", "120")
    assert sp.get_json("/server_info")["speculative_adaptive"] is False
    assert "speculative_adaptive disabled: speculative_algorithm=NGRAM (only EAGLE/EAGLE3 are supported). " \
           "Falling back to static speculative params." in sp.log()


def test_a_step_count_outside_the_candidates_is_refused(sim_server):
    sp = sim_server(*EAGLE3, "--speculative-adaptive", "--speculative-num-steps", "4", ready=False)
    assert sp.proc.wait(timeout=30) != 0
    assert "--speculative-num-steps=4 is not in the adaptive config candidate_steps [0, 1, 3, 5, 7]" in sp.log()


def test_at_zero_steps_the_forward_is_a_one_token_verify_and_a_draft_extend_as_in_sglang(sim_server, tmp_path):
    """Adaptive speculation at 0 steps drafts nothing, yet SGLang 0.5.23 still runs the target through its verify
    path with a one-node tree and keeps the draft's KV warm with a draft extend (sglang 0.5.23 wheel,
    sglang/srt/speculative/eagle_worker_v2.py:1469-1472 and 1490-1500, ``_build_trivial_verify_input`` at
    1678-1686): the device timer files it under ``target_verify`` and the draft extend, never ``decode``."""
    config = tmp_path / "adaptive.json"
    config.write_text(json.dumps({"1": {"candidate_steps": [0, 1], "warmup_batches": 1, "update_interval": 1}}))
    # a drafter that never agrees: the step count falls to 0 within a few verifies
    sp = sim_server(*EAGLE3, "--speculative-adaptive", "--speculative-adaptive-config", str(config),
                    "--speculative-num-steps", "1", "--sim-draft-agreement", "0",
                    env={"SGLANG_ENABLE_METRICS_DEVICE_TIMER": "1"})
    generate(sp, 32)
    assert gauges(sp)["sglang:spec_num_steps"] == 0
    before = timer_seconds(sp)
    generate(sp, 64)  # all of it at 0 steps
    after = timer_seconds(sp)
    seconds = {k: after[k] - before.get(k, 0.0) for k in after}
    # SGLang probes 1 step after each update interval at 0 (adaptive_spec_params.py:219-227), so some steps of the
    # window draft; the extend runs on every step, the draft only on those
    assert seconds.get("decode", 0) == 0, seconds
    assert seconds.get("target_verify", 0) > 0 and seconds["eagle_draft_extend"] > seconds.get("eagle_draft", 0), seconds
