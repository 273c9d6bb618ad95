"""Server frames carry the labelled step-cost counters (``step_series``) read from /metrics every frame.

The text is a real SGLang 0.5.23 /metrics (tests/fixtures/sglang-0.5.23-cpu-step-counters/): the device timer off,
so ``forward_execution_seconds_total`` absent, ``cuda_graph_passes_total{mode}`` and
``scheduler_idle_seconds_total`` present.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spectui.agent.servers.metrics import STEP_SERIES_MAX, parse_metrics
from spectui.core.stepcost import labelled_series, series_from_pairs
from tests.agent.test_live_figures import Clock, metrics_text, server, tick, tracker  # noqa: F401  (fixture)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sglang-0.5.23-cpu-step-counters"
AFTER = (FIXTURE / "metrics-after.txt").read_text()


def without(series, label="model_name"):
    return {family: {tuple(p for p in key if p[0] != label): v for key, v in by.items()} for family, by in series.items()}


def test_a_frame_carries_the_step_counters_with_their_labels(server):  # noqa: F811
    server.metrics = AFTER
    clock = Clock()
    frame = tick(tracker(server, clock), clock)
    steps = frame["step_series"]
    assert set(steps) == {"cuda_graph_passes_total", "scheduler_idle_seconds_total"}  # the timer's family: absent
    # the same series the client's own reader finds in the text, labels and all (but the model's path)
    assert series_from_pairs(steps) == without(labelled_series(AFTER))
    modes = {labels["mode"]: value for labels, value in steps["cuda_graph_passes_total"]}
    assert modes == {"prefill_none": 4.0, "decode_none": 21.0}


def test_a_server_without_step_counters_sends_no_step_series(server):  # noqa: F811
    server.metrics = metrics_text(gen=10, verify=5, decode=10)
    clock = Clock()
    frame = tick(tracker(server, clock), clock)
    assert "step_series" not in frame


def test_the_label_sets_a_frame_carries_are_bounded_and_the_same_every_read():
    lines = ["# HELP sglang:forward_execution_seconds_total x", "# TYPE sglang:forward_execution_seconds_total counter"]
    lines += ['sglang:forward_execution_seconds_total{category="c%03d",tp_rank="0"} %d.0' % (i, i)
              for i in range(STEP_SERIES_MAX * 3)]
    text = "\n".join(lines) + "\n"
    a = parse_metrics(text, taken_at=1.0).step_pairs()["forward_execution_seconds_total"]
    b = parse_metrics("\n".join(lines[:2] + lines[:1:-1]) + "\n", taken_at=2.0).step_pairs()[
        "forward_execution_seconds_total"]
    assert len(a) == STEP_SERIES_MAX and a == b  # text order does not change which sets are kept
    assert parse_metrics(text, taken_at=1.0).counters["forward_execution_seconds_total"] == pytest.approx(
        sum(range(STEP_SERIES_MAX * 3)))  # the folded total still counts every set
