"""SPECTUI_SIM_TIME_SCALE: it scales the simulated start-up, never a forward pass."""

import json
import re
import time

import pytest

from spectui.sim.hardware import cost_model
from spectui.sim.timescale import ENV, TimeScaleError, time_scale
from tests.sim.shapes import PREFIX

KIMI = ["--model-path", "moonshotai/Kimi-K2.5", "--tp-size", "8", "--sim-hardware", "pcie-8gpu"]


def ready_after(sp) -> float:
    t0 = time.monotonic()
    sp.wait_ready(60)
    return time.monotonic() - t0


def test_unset_or_empty_is_one_and_a_number_is_taken_as_given():
    assert time_scale({}) == 1.0 and time_scale({ENV: " "}) == 1.0
    assert time_scale({ENV: "0.25"}) == 0.25 and time_scale({ENV: "3"}) == 3.0


@pytest.mark.parametrize("raw", ["0", "-1", "fast", "nan", "inf"])
def test_anything_but_a_positive_number_is_refused_naming_the_variable(raw):
    with pytest.raises(TimeScaleError, match=r"^SPECTUI_SIM_TIME_SCALE must be a number above 0 .*not '%s'$" % raw):
        time_scale({ENV: raw})


def test_a_bad_scale_stops_the_server_before_it_starts_with_one_line(sim_server):
    sp = sim_server(*KIMI, env={ENV: "fast"}, ready=False)
    assert sp.proc.wait(30) == 2
    err = sp.log().strip().splitlines()
    assert err[-1].endswith("error: SPECTUI_SIM_TIME_SCALE must be a number above 0 (0.25 makes the simulated "
                            "start-up four times shorter), not 'fast'"), err
    assert not (sp.state / "sim" / "procs").exists() or not list((sp.state / "sim" / "procs").glob("*.json"))


def test_a_small_scale_shortens_the_whole_start_up_sequence(sim_server):
    sp = sim_server(*KIMI, "--sim-load-time", "30", env={ENV: "0.02"}, ready=False)
    took = ready_after(sp)
    assert took < 15, f"ready after {took:.1f} s: a 30 s load at scale 0.02 should take about 0.6 s"
    log = sp.log()
    # every step of the sequence still happens, in order, only sooner
    steps = ["Init torch distributed begin.", "Load weight begin.", "Loading safetensors checkpoint shards: 100%",
             "KV Cache is allocated.", "Capture cuda graph end.", "The server is fired up and ready to roll!"]
    at = [log.find(s) for s in steps]
    assert -1 not in at and at == sorted(at), (steps, at, log[-2000:])
    elapsed = float(re.search(PREFIX + r"Load weight end\. elapsed=(\d+\.\d\d) s", log).group(1))
    assert elapsed < 0.6 * 30 / 2, log  # the weights' share of the load, far below the unscaled 18 s


def test_a_scale_above_one_lengthens_it(sim_server):
    sp = sim_server(*KIMI, "--sim-load-time", "0.2", env={ENV: "10"}, ready=False)
    assert ready_after(sp) >= 1.9  # 0.2 s at scale 10: 2 s, never sooner


def test_forward_passes_keep_the_cost_models_length(sim_server):
    """A client measures the cost model's decode rate (82 tok/s for Kimi-K2.5 on pcie-8gpu) at any scale: the
    steps sleep to their full length, so the rate is never faster than the cost model's."""
    sp = sim_server(*KIMI, "--sim-load-time", "2", env={ENV: "0.05"})
    events = sp.stream("/generate", {"text": "Alice was beginning to get very tired", "stream": True,
                                     "sampling_params": {"max_new_tokens": 60, "ignore_eos": True}})
    chunks = [(t, json.loads(d)) for t, d in events if d != "[DONE]"]
    (t0, first), (t1, last) = chunks[0], chunks[-1]
    decoded = last["meta_info"]["completion_tokens"] - first["meta_info"]["completion_tokens"]
    rate = decoded / (t1 - t0)
    model_rate = 1000.0 / cost_model("pcie-8gpu", tp_size=8, weights_gb=600.0).decode_ms(1)
    assert decoded >= 50 and rate <= model_rate * 1.03, (rate, model_rate)
