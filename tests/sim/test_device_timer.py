"""The simulator's step counters against real SGLang 0.5.23, and the step costs and live L* read from them.

The real reference is tests/fixtures/sglang-0.5.23-cpu-step-counters/ (a CPU server's /metrics, device timer off):
``cuda_graph_passes_total`` and ``scheduler_idle_seconds_total`` are compared with it as they are; the timer's
family, which a CPU server cannot publish, must carry that capture's scheduler labels plus ``category``
(sglang 0.5.23 wheel, sglang/srt/observability/metrics_collector.py:1054-1061). The servers are started from the
demo's own profiles (their argv and ``env``), so a profile that stops turning the timer on fails here.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from spectui.agent.probe import sim as sim_probe
from spectui.agent.servers.telemetry import ServerTelemetry
from spectui.core.probe import ProbeOptions, predict_for_settings, probe_params
from spectui.core.profiles import ProfileLayer, build_env, load_profiles
from spectui.core.server_frames import ServerFrame, ServerSeries, timed_l_star
from spectui.core.stepcost import FORWARD_SECONDS, IDLE_SECONDS, PASSES, TIMER_ENV, StepSample, labelled_series, \
    live_l_star, step_costs
from tests.sim.simproc import ROOT
from tests.sim.test_sim_demo_traffic import server_args

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sglang-0.5.23-cpu-step-counters"
REAL = (FIXTURE / "metrics-after.txt").read_text()
# every category a 0.5.23 runner names (docs/step-costs.md, "Categories")
REAL_CATEGORIES = {"decode", "target_verify", "extend", "split_prefill", "idle", "eagle_draft", "eagle_draft_extend",
                   "frozen_kv_draft", "mixed", "draft_extend_v2", "prebuilt", "dllm_extend"}
REQUESTS = 3
TOKENS = 48
LIBRARY = load_profiles(layers=[ProfileLayer("shipped", (ROOT / "spectui" / "data" / "profiles",))])


def families(text: str) -> dict:
    """family name -> (type, set of label-key tuples of its samples)."""
    return {f.name: (f.type, {tuple(sorted(s.labels)) for s in f.samples}) for f in text_string_to_metric_families(text)}


def start(sim_server, name: str, env_over: dict | None = None):
    env = {k: v for k, v in build_env(LIBRARY.get(name)).items() if k != "CUDA_VISIBLE_DEVICES"}
    env.update(env_over or {})
    return sim_server(*server_args(name), env=env, name=name)


def sample(sp) -> tuple[StepSample, dict, str]:
    status, body = sp.get("/metrics")
    assert status == 200
    text = body.decode()
    return StepSample(time.monotonic(), labelled_series(text)), sp.get_json("/sim/stats")["counters"], text


def run_requests(sp) -> None:
    """One request at a time (batch 1: the step the probe predicts), each decoding ``TOKENS`` tokens."""
    for i in range(REQUESTS):
        status, _ = sp.post("/generate", {"text": "The history of the river valley %d" % i, "sampling_params": {
            "max_new_tokens": TOKENS, "ignore_eos": True, "sampling_seed": 7 + i}})
        assert status == 200


def window(sp):
    """Step costs over a window of requests, with the simulator's own modelled decode seconds and steps."""
    before, c0, _ = sample(sp)
    run_requests(sp)
    after, c1, text = sample(sp)
    modelled_ms = 1000.0 * (c1["decode_s"] - c0["decode_s"]) / (c1["decode_steps"] - c0["decode_steps"])
    return before, after, modelled_ms, text


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    from tests.sim.simproc import SimProcess

    started = []

    def sim_server(*args, env=None, name="server"):
        state = tmp_path_factory.mktemp(name)
        sp = SimProcess(list(args), state, state / "server.log", dict({"SPECTUI_SIM_RANKS": "inline"}, **env))
        started.append(sp)
        sp.wait_ready()
        return sp

    try:
        out = {n: start(sim_server, n) for n in ("kimi-baseline", "kimi-eagle3", "kimi-ngram")}
        out["untimed"] = start(sim_server, "kimi-baseline", {TIMER_ENV: "0"})
        yield {n: window(sp) for n, sp in out.items()}, out
    finally:
        for sp in started:
            sp.kill_group()


def test_the_demo_profiles_turn_the_timer_on():
    for name in ("kimi-baseline", "kimi-eagle3", "kimi-ngram"):
        assert build_env(LIBRARY.get(name)).get(TIMER_ENV) == "1", name


@pytest.fixture(scope="module")
def windows(servers):
    return servers[0]


def test_families_and_label_keys_are_the_real_ones(windows):
    servers = windows
    real = families(REAL)
    sched = real["sglang:" + IDLE_SECONDS[:-len("_total")]][1]
    for name in ("kimi-baseline", "kimi-eagle3", "kimi-ngram"):
        sim = families(servers[name][3])
        for family in (PASSES, IDLE_SECONDS):
            fam = "sglang:" + family[:-len("_total")]
            assert fam in real and fam in sim, (name, fam)
            assert sim[fam] == real[fam], (name, fam, sim[fam], real[fam])
        timer = sim.get("sglang:" + FORWARD_SECONDS[:-len("_total")])
        assert timer is not None and timer[0] == "counter", name
        assert timer[1] == {tuple(sorted(k + ("category",))) for k in sched}, (name, timer)
        cats = {dict(k)["category"] for k in labelled_series(servers[name][3])[FORWARD_SECONDS]}
        assert cats <= REAL_CATEGORIES and "extend" in cats, (name, cats)


def test_without_the_variable_no_timer_counter_but_the_step_counters(windows):
    servers = windows
    before, after, _, text = servers["untimed"]
    assert "forward_execution_seconds" not in text
    costs = step_costs(before, after, speculative=False)
    assert not costs.timer and costs.decode.value is None and TIMER_ENV in costs.decode.reason
    assert costs.decode.steps >= REQUESTS * (TOKENS - 1)


def test_step_costs_are_the_modelled_step_durations(windows):
    servers = windows
    before, after, modelled, _ = servers["kimi-baseline"]
    plain = step_costs(before, after, speculative=False)
    assert plain.decode.value == pytest.approx(modelled, rel=0.05)
    before, after, modelled, _ = servers["kimi-eagle3"]
    eagle = step_costs(before, after, speculative=True)
    assert eagle.verify.value + eagle.draft.value == pytest.approx(modelled, rel=0.05)
    assert eagle.draft.value > 0 and eagle.verify.value > 2 * plain.decode.value  # verify over PCIe
    before, after, modelled, _ = servers["kimi-ngram"]
    ngram = step_costs(before, after, speculative=True)
    # the trie lookup runs on the CPU: the timer sees the verify forward alone
    assert ngram.draft.value is None and ngram.verify.value == pytest.approx(modelled, rel=0.05)
    assert ngram.verify.value < modelled


@pytest.mark.parametrize("name", ["kimi-eagle3", "kimi-ngram"])
def test_live_l_star_agrees_with_the_probe(windows, name):
    servers = windows
    before, after, _, _ = servers["kimi-baseline"]
    decode = step_costs(before, after, speculative=False).decode
    before, after, _, _ = servers[name]
    live = live_l_star(step_costs(before, after, speculative=True), decode=decode)
    predicted = predicted_l_star(name)
    assert live.value == pytest.approx(predicted, rel=0.05), (live, predicted)


def predicted_l_star(name):
    profile = LIBRARY.get(name)
    return predict_for_settings(sim_probe.run(probe_params(profile, ProbeOptions())),
                                profile.speculative_settings()).predicted


def test_the_agents_frames_give_the_console_the_live_l_star(servers):
    """What the demo's console gets: the agent's frames of each server, read before and after requests."""
    series = {}
    for name in ("kimi-baseline", "kimi-eagle3"):
        sp = servers[1][name]
        telemetry = ServerTelemetry({"name": name, "host": "127.0.0.1", "port": sp.port})
        series[name] = ServerSeries()
        for i in range(2):
            if i:
                run_requests(sp)
            frame = telemetry.frame("ready")
            series[name].add(ServerFrame.from_event(frame, received_at=frame["t"]))
    live = timed_l_star(series, "kimi-eagle3")
    assert live.decode_server == "kimi-baseline" and live.drafted
    assert live.l_star.value == pytest.approx(predicted_l_star("kimi-eagle3"), rel=0.05), live
