"""Step costs between two server frames: real SGLang 0.5.23 /metrics text -> the agent's frame -> core step costs.

tests/fixtures/sglang-0.5.23-cpu-step-counters/ holds two real reads of a CPU server (three requests between them),
device timer off. The timer's family, which a CPU server cannot publish (docs/step-costs.md, "On a CPU"), is added
in the shape SGLang's collector gives it (sglang 0.5.23 wheel, sglang/srt/observability/metrics_collector.py:1054-1061:
the scheduler's labels plus ``category``) where a test needs the timer on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spectui.core.server_frames import ServerFrame, frame_step_costs
from spectui.core.stepcost import TIMER_ENV, labelled_series
from tests.agent.test_live_figures import Clock, server, tick, tracker  # noqa: F401  (fixture)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sglang-0.5.23-cpu-step-counters"
BEFORE = (FIXTURE / "metrics-before.txt").read_text()
AFTER = (FIXTURE / "metrics-after.txt").read_text()
SCHED = 'engine_type="unified",model_name="/m",moe_ep_rank="0",pp_rank="0",tp_rank="0"'
PLAIN = {"version": "0.5.23", "speculative_algorithm": None, "internal_states": [{"last_gen_throughput": 0.0}]}
EAGLE = {"version": "0.5.23", "speculative_algorithm": "EAGLE3", "speculative_num_steps": 3,
         "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 4,
         "internal_states": [{"avg_spec_accept_length": 2.0, "last_gen_throughput": 0.0}]}


def with_timer(text, seconds):
    lines = ["# HELP sglang:forward_execution_seconds_total Total forward execution time.",
             "# TYPE sglang:forward_execution_seconds_total counter"]
    lines += ['sglang:forward_execution_seconds_total{category="%s",%s} %r' % (c, SCHED, float(v))
              for c, v in seconds.items()]
    return text + "\n".join(lines) + "\n"


def increase(family, label, values):
    """The counter's increase between the two texts, read with the client's own reader."""
    b, a = labelled_series(BEFORE)[family], labelled_series(AFTER)[family]
    return sum(v - b.get(k, 0.0) for k, v in a.items() if dict(k).get(label) in values)


def frames(server, info, before, after):  # noqa: F811
    server.info = info
    clock = Clock()
    t = tracker(server, clock)
    out = []
    for text in (before, after):
        server.metrics = text
        ev = tick(t, clock)
        out.append(ServerFrame.from_event(ev, received_at=ev["t"]))
    return out


def test_real_counters_without_the_timer_count_the_steps_and_say_the_timer_is_off(server):  # noqa: F811
    prev, cur = frames(server, PLAIN, BEFORE, AFTER)
    costs = frame_step_costs(prev, cur)
    assert costs is not None and not costs.speculative and not costs.timer
    assert costs.window_s == pytest.approx(cur.sampled_at - prev.sampled_at)
    assert costs.decode.value is None and f"{TIMER_ENV}=1" in costs.decode.reason
    assert costs.decode.steps == increase("cuda_graph_passes_total", "mode", ("decode_none",)) > 0
    assert costs.extend.steps == increase("cuda_graph_passes_total", "mode", ("prefill_none",)) > 0
    b_idle = sum(labelled_series(BEFORE)["scheduler_idle_seconds_total"].values())
    a_idle = sum(labelled_series(AFTER)["scheduler_idle_seconds_total"].values())
    assert costs.idle_s == pytest.approx(a_idle - b_idle)


def test_the_timer_gives_decode_ms_per_step_on_a_plain_server(server):  # noqa: F811
    prev, cur = frames(server, PLAIN, with_timer(BEFORE, {"decode": 0.25, "extend": 0.5}),
                       with_timer(AFTER, {"decode": 0.25 + 0.7, "extend": 0.5 + 0.3}))
    costs = frame_step_costs(prev, cur)
    steps = increase("cuda_graph_passes_total", "mode", ("decode_none",))
    assert costs.timer and costs.decode.value == pytest.approx(1000.0 * 0.7 / steps)
    assert costs.extend.value == pytest.approx(1000.0 * 0.3 / increase("cuda_graph_passes_total", "mode",
                                                                        ("prefill_none",)))


def test_a_speculative_server_gives_verify_and_draft_ms_per_cycle(server):  # noqa: F811
    prev, cur = frames(server, EAGLE, with_timer(BEFORE, {"target_verify": 1.0, "eagle_draft": 0.5}),
                       with_timer(AFTER, {"target_verify": 1.8, "eagle_draft": 0.9, "decode": 0.1}))
    costs = frame_step_costs(prev, cur)
    cycles = increase("cuda_graph_passes_total", "mode", ("decode_none",))
    assert costs.speculative and costs.decode.value is None
    assert costs.verify.value == pytest.approx(1000.0 * 0.8 / cycles)
    assert costs.draft.value == pytest.approx(1000.0 * (0.4 + 0.1) / cycles)  # a draft series new in the window


def test_frames_without_step_series_give_no_step_costs(server):  # noqa: F811
    prev, cur = frames(server, PLAIN, BEFORE, AFTER)
    old = ServerFrame.from_event({"name": cur.name, "t": prev.sampled_at}, received_at=prev.sampled_at)
    assert frame_step_costs(old, cur) is None and frame_step_costs(None, cur) is None
    assert frame_step_costs(cur, prev) is None  # not read after it
