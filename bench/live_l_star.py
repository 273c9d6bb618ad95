"""The live L* from the server's device timer against the probe's prediction and a baseline run's, per story profile.

For each speculative story profile (`kimi-eagle3`, `kimi-ngram`) on the simulated host, with `kimi-baseline`
beside it, each started from its shipped profile (its `env` turns SGLANG_ENABLE_METRICS_DEVICE_TIMER on):

* live L*: the speculative cycle over the plain decode step, both from the servers' own
  `sglang:forward_execution_seconds_total` / `sglang:cuda_graph_passes_total` over a window of requests
  at one request (`spectui.core.stepcost`);
* predicted L*: `spectui probe`'s for the profile's settings, from the simulator's hardware model (the anchor);
* baseline run's L*: what a client measures, accept length x baseline tok/s / speculative tok/s per stream,
  at one request.

Printed: each as a ratio to the probe's (1.00 = agrees). Under two minutes.

    python bench/live_l_star.py [--requests 4] [--tokens 64]

Exit status 1 when the live L* is more than 5% from the probe's.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spectui.agent.probe import sim as sim_probe  # noqa: E402
from spectui.core.probe import ProbeOptions, predict_for_settings, probe_params  # noqa: E402
from spectui.core.profiles import ProfileLayer, build_env, load_profiles  # noqa: E402
from spectui.core.stepcost import StepSample, labelled_series, live_l_star, step_costs  # noqa: E402
from tests.sim.simproc import SimProcess  # noqa: E402
from tests.sim.test_sim_demo_traffic import server_args  # noqa: E402

STORY = ("kimi-eagle3", "kimi-ngram")
BASELINE = "kimi-baseline"
LIBRARY = load_profiles(layers=[ProfileLayer("shipped", (ROOT / "spectui" / "data" / "profiles",))])


def start(name: str, tmp: Path) -> SimProcess:
    env = {k: v for k, v in build_env(LIBRARY.get(name)).items() if k != "CUDA_VISIBLE_DEVICES"}
    state = tmp / name
    state.mkdir()
    sp = SimProcess(server_args(name), state, tmp / f"{name}.log", dict(env, SPECTUI_SIM_RANKS="inline"))
    sp.wait_ready(60.0)
    return sp


def read(sp: SimProcess) -> StepSample:
    status, body = sp.get("/metrics")
    if status != 200:
        raise SystemExit(f"{sp.url}/metrics answered {status}")
    return StepSample(time.monotonic(), labelled_series(body.decode()))


def run(sp: SimProcess, speculative: bool, requests: int, tokens: int):
    """Step costs over the requests, and the client's mean tok/s per stream and accept length."""
    before = read(sp)
    rates, completion, verifies = [], 0, 0
    for i in range(requests):
        events = sp.stream("/generate", {"text": f"The river valley, part {i}", "stream": True, "sampling_params": {
            "max_new_tokens": tokens, "ignore_eos": True, "sampling_seed": 100 + i}})
        chunks = [(t, json.loads(d)) for t, d in events if d != "[DONE]"]
        (t0, first), (t1, last) = chunks[0], chunks[-1]
        rates.append((last["meta_info"]["completion_tokens"] - first["meta_info"]["completion_tokens"]) / (t1 - t0))
        completion += last["meta_info"]["completion_tokens"]
        verifies += last["meta_info"].get("spec_verify_ct", 0)
    costs = step_costs(before, read(sp), speculative)
    return costs, sum(rates) / len(rates), (completion / verifies if verifies else 1.0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--tokens", type=int, default=64)
    args = ap.parse_args(argv)
    started = time.monotonic()
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        servers = {}
        try:
            for name in (BASELINE,) + STORY:
                servers[name] = start(name, Path(tmp))
            base, base_rate, _ = run(servers[BASELINE], False, args.requests, args.tokens)
            print(f"{BASELINE}: decode {base.decode.value:.2f} ms per step (server timer), {base_rate:.1f} tok/s")
            print(f"{'profile':<12} {'probe L*':>9} {'live/probe':>11} {'run/probe':>10}  live L* from")
            for name in STORY:
                costs, rate, accept = run(servers[name], True, args.requests, args.tokens)
                live = live_l_star(costs, decode=base.decode)
                profile = LIBRARY.get(name)
                predicted = predict_for_settings(sim_probe.run(probe_params(profile, ProbeOptions())),
                                                 profile.speculative_settings()).predicted
                run_l_star = accept * base_rate / rate
                worst = max(worst, abs(live.value / predicted - 1.0))
                print(f"{name:<12} {predicted:>9.2f} {live.value / predicted:>11.3f} {run_l_star / predicted:>10.3f}"
                      f"  {live.source}, {costs.window_s:.0f} s; run: accept {accept:.2f} at {rate:.1f} tok/s")
        finally:
            for sp in servers.values():
                sp.kill_group()
    print(f"{time.monotonic() - started:.0f} s; live L* within {100 * worst:.1f}% of the probe's (floor 5%)")
    return 0 if worst <= 0.05 else 1


if __name__ == "__main__":
    sys.exit(main())
