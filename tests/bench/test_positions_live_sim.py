"""A speculative run's live acceptance per draft position against the simulator's own counts.

The simulated EAGLE-3 server keeps, per request, the correct-drafts histogram SGLang sends in a finished
request's ``meta_info`` (sglang 0.5.23 wheel, sglang/srt/managers/tokenizer_manager.py:3148-3205: entry i counts
the verify steps that accepted exactly i drafts, ``spec_num_proposed_drafts`` = ``spec_verify_ct`` x
(speculative_num_draft_tokens - 1)), and counts the verify steps and generated tokens on its ``/metrics``
(``sglang:spec_verify_calls_total``, ``sglang:generation_tokens_total``: sglang 0.5.23 wheel,
sglang/srt/observability/metrics_collector.py:1865 and 2111-2112). Its drafter is right at depth d with
probability ``agreement * decay**(d-1)`` (spectui/sim/engine/drafter.py), so with a chain (``topk`` 1) position k
is accepted with probability the product of those for d = 1..k.

The live figures (the agent's ``bench_progress`` events) are read on the client's side; the counters are read
here from ``/metrics`` with prometheus_client's parser, not spectui's.
"""

import asyncio
import math
import time

import pytest

from spectui.core.bench import Preset, start_run
from spectui.core.bench.positions import acceptance_from_pooled
from tests.bench.conftest import write_sim_profile
from tests.bench.test_runner_sim import ready, sim_counters
from tests.support.sshd import free_port

pytestmark = pytest.mark.timeout(300)

AGREEMENT, DECAY = 0.7, 0.8  # the drafter's depth-1 agreement and its decay per depth, set for this server
STEPS = 3                    # speculative-num-steps 3, topk 1, num-draft-tokens 4 (write_sim_profile's EAGLE3)
SIGMAS = 5.0


def model_positions():
    """P(k) the simulator's acceptance model expects: the chain survives depth d with agreement * decay**(d-1)."""
    return [math.prod(AGREEMENT * DECAY ** (d - 1) for d in range(1, k + 1)) for k in range(1, STEPS + 1)]


async def test_live_acceptance_by_position_agrees_with_the_simulator(env, demo):
    port = free_port()
    write_sim_profile(env["profiles"], "eagle", port=port, speculative="EAGLE3",
                      extra_sim={"draft-agreement": AGREEMENT, "draft-decay": DECAY})
    await ready(demo, "eagle")
    preset = Preset(name="positions", dataset="reasoning", input_len=64, output_len=192, num_prompts=16,
                    concurrency=(4,), warmup=0, repeats=1, seed=11)
    events = []
    demo.client.add_listener(lambda ev: ev.name == "bench_progress" and events.append(ev.data))
    before = sim_counters(port)
    handle = await start_run(demo, preset, server="eagle")
    result = await handle.wait()
    after = sim_counters(port)
    assert result.state == "done" and result.stats["completed"] == 16 and result.stats["errors"] == 0, result.reason
    # the run's last progress event may come in after its result on a loaded machine
    deadline = time.monotonic() + 20
    while not any(e.get("run_id") == handle.run_id and e["state"] == "done" for e in events) \
            and time.monotonic() < deadline:
        await asyncio.sleep(0.1)

    mine = [e for e in events if e.get("run_id") == handle.run_id]
    # while it ran, the figures covered the requests finished so far
    partial = [e["positions"] for e in mine if e["state"] == "running" and e.get("positions")]
    assert partial and all(p["requests"] <= 16 for p in partial)
    assert any(p["requests"] < 16 for p in partial), [p["requests"] for p in partial]
    last = mine[-1]
    assert last["state"] == "done" and last["positions"]["requests"] == 16
    live = acceptance_from_pooled(last["positions"])
    assert live == result.stats["acceptance_by_position"]  # the run so far, at its end, is the stored run's

    # the simulator's own counters over the run: every verify step is in the pooled histogram, and each request's
    # tokens are its first (from prefill) and 1 + correct drafts per verify step
    d = {k: after[k] - before.get(k, 0.0) for k in after}
    verify, tokens = d["sglang:spec_verify_calls_total"], d["sglang:generation_tokens_total"]
    assert live["verify_steps"] == verify == last["positions"]["verify_ct"]
    assert live["accept_length"] == pytest.approx((tokens - 16) / verify, rel=1e-9)
    assert last["positions"]["proposed_drafts"] == verify * STEPS and live["width"] == STEPS

    # and the model's expected P(k): each verify step's draws are fresh, so the share of steps that accepted
    # position k is a binomial proportion over the verify steps; a request's last step may be cut short by
    # its token budget, which moves a share by at most one step per request
    n = live["verify_steps"]
    for k, (seen, want) in enumerate(zip(live["positions"], model_positions()), start=1):
        tol = SIGMAS * math.sqrt(want * (1 - want) / n) + 16 / n
        assert abs(seen - want) <= tol, (k, seen, want, tol, n)
    expected_length = 1 + sum(model_positions())
    spread = SIGMAS * math.sqrt(sum(model_positions()) * STEPS / n) + 16 / n  # correct drafts per step <= STEPS
    assert abs(live["accept_length"] - expected_length) <= spread, (live["accept_length"], expected_length, n)
