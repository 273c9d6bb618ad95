"""The step count adaptive speculation runs now, as a frame reports it: read from the real SGLang
0.5.23 wheel's reporting (its gauge, the field that says adaptive is on), and from the simulator
started with ``--speculative-adaptive``; nothing where the server does not report it."""

from __future__ import annotations

import ast
import json

from prometheus_client import CollectorRegistry, Gauge, generate_latest

from spectui.agent.servers.metrics import parse_metrics
from spectui.agent.servers.telemetry import ServerTelemetry, speculative_settings
from spectui.core.server_frames import ServerFrame
from spectui.ui.snapshots import adaptive_text, settings_text
from tests.sim.conftest import sim_server  # noqa: F401 - a fixture
from tests.sim.test_sim_adaptive import EAGLE3, generate
from tests.support.wheels import release_tree

LABELS = {"model_name": "moonshotai/Kimi-K2.5", "engine_type": "unified", "tp_rank": "0", "pp_rank": "0"}


def real_gauges(tree) -> dict[str, str]:
    """``name -> documentation`` of every ``Gauge(name=..., documentation=...)`` SGLang's scheduler metrics declare."""
    source = (tree / "srt" / "observability" / "metrics_collector.py").read_text()
    out = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Gauge":
            kw = {k.arg: k.value for k in node.keywords}
            if isinstance(kw.get("name"), ast.Constant) and isinstance(kw.get("documentation"), ast.Constant):
                out[kw["name"].value] = kw["documentation"].value
    return out


def metrics_text(gauges: dict[str, tuple[str, float]]) -> str:
    """/metrics as prometheus_client writes SGLang's gauges (one TP rank's labels)."""
    registry = CollectorRegistry()
    for name, (doc, value) in gauges.items():
        Gauge(name, doc, labelnames=list(LABELS), registry=registry).labels(**LABELS).set(value)
    return generate_latest(registry).decode()


def test_the_real_wheel_reports_the_active_step_count_in_a_gauge_the_agent_reads():
    tree = release_tree("0.5.23")
    declared = real_gauges(tree)
    # sglang/srt/observability/metrics_collector.py:535-537 (0.5.23)
    assert declared["sglang:spec_num_steps"] == "Currently active speculative_num_steps."
    assert "sglang:spec_num_draft_tokens" in declared
    # the gauge is the worker's live value (metrics_reporter.py:518-540), which the adaptive switch sets
    # (sglang/srt/speculative/eagle_worker_v2.py:1875)
    reporter = (tree / "srt/managers/scheduler_components/metrics_reporter.py").read_text()
    assert 'draft_worker, "speculative_num_steps"' in reporter
    worker = (tree / "srt/speculative/eagle_worker_v2.py").read_text()
    assert "self.speculative_num_steps = state.speculative_num_steps" in worker
    # /server_info lists the resolved server args at top level, speculative_adaptive among them
    spec_fields = (tree / "srt/arg_groups/fields/spec.py").read_text()
    assert "    speculative_adaptive: A[" in spec_fields

    text = metrics_text({"sglang:spec_num_steps": (declared["sglang:spec_num_steps"], 1),
                         "sglang:spec_num_draft_tokens": (declared["sglang:spec_num_draft_tokens"], 2)})
    snap = parse_metrics(text, taken_at=0.0)
    info = {"speculative_algorithm": "EAGLE3", "speculative_num_steps": 3, "speculative_eagle_topk": 1,
            "speculative_num_draft_tokens": 4, "speculative_adaptive": True}
    spec = speculative_settings(info, snap.gauges)
    assert spec["adaptive"] == {"steps": 1, "draft_tokens": 2, "source": "metrics-gauge", "launch_steps": 3}
    assert spec["num_steps"] == 3  # the launch value stays beside it
    assert settings_text(spec).startswith("steps 1 (adaptive)")
    assert "sglang:spec_num_steps gauge" in adaptive_text(spec) and "launched with steps 3" in adaptive_text(spec)


def test_no_adaptive_width_where_the_server_does_not_report_one():
    declared = {"sglang:spec_num_steps": ("Currently active speculative_num_steps.", 3),
                "sglang:spec_num_draft_tokens": ("Currently active speculative_num_draft_tokens.", 4)}
    gauges = parse_metrics(metrics_text(declared), taken_at=0.0).gauges
    static = {"speculative_algorithm": "EAGLE3", "speculative_num_steps": 3, "speculative_eagle_topk": 1,
              "speculative_num_draft_tokens": 4, "speculative_adaptive": False}
    assert "adaptive" not in speculative_settings(static, gauges)          # adaptive off: the gauge is the setting
    assert "adaptive" not in speculative_settings({k: v for k, v in static.items() if k != "speculative_adaptive"},
                                                  gauges)                  # a release without the field
    before_first_log = parse_metrics(metrics_text({k: (d, 0) for k, (d, _) in declared.items()}), taken_at=0.0)
    assert "adaptive" not in speculative_settings(dict(static, speculative_adaptive=True), before_first_log.gauges)
    assert "adaptive" not in speculative_settings(dict(static, speculative_adaptive=True), {})  # no /metrics
    assert settings_text(speculative_settings(static, gauges)) == "steps 3 · topk 1 · draft tokens 4"
    assert adaptive_text(speculative_settings(static, gauges)) == ""


def test_a_simulated_adaptive_server_reports_its_active_width_in_the_frame(sim_server, tmp_path):  # noqa: F811
    config = tmp_path / "adaptive.json"
    config.write_text(json.dumps({"1": {"candidate_steps": [1, 3], "warmup_batches": 2, "update_interval": 2}}))
    sp = sim_server(*EAGLE3, "--speculative-adaptive", "--speculative-adaptive-config", str(config),
                    "--speculative-num-steps", "3")
    generate(sp, 120)
    tracker = ServerTelemetry({"name": "adaptive", "host": "127.0.0.1", "port": sp.port, "log_path": str(sp.log_path)})
    try:
        frame = ServerFrame.from_event(tracker.frame("ready"), 0.0)
    finally:
        tracker.close()
    adaptive = frame.speculative["adaptive"]
    gauge = {f.split(" ")[0].split("{")[0]: float(f.rsplit(" ", 1)[1]) for f in sp.get("/metrics")[1].decode().splitlines()
             if f.startswith("sglang:spec_num_steps")}
    assert adaptive["steps"] == gauge["sglang:spec_num_steps"] and adaptive["source"] == "metrics-gauge"
    assert adaptive["launch_steps"] == 3 and frame.speculative["num_steps"] == 3
    assert settings_text(frame.speculative).startswith(f"steps {adaptive['steps']} (adaptive)")



async def test_the_speculative_panel_shows_the_adaptive_width_with_its_source_and_nothing_without_it():
    from dataclasses import replace

    from spectui.ui import snapshots
    from spectui.ui.widgets.speculative import SpecPanel
    from tests.ui.test_panels import frame, link_with, shown

    plain = frame()
    adaptive = replace(plain, speculative=dict(plain.speculative, draft_tokens=2, adaptive={
        "steps": 1, "draft_tokens": 2, "source": "metrics-gauge", "launch_steps": 3}))
    text, _ = await shown(SpecPanel(), snapshots.spec_view(link_with([adaptive]), "kimi-eagle3", None, None),
                          size=(110, 20))
    assert "steps 1 (adaptive) · topk 1 · draft tokens 2" in text
    assert "adaptive width from the sglang:spec_num_steps gauge, last log interval; launched with steps 3" in text
    text, _ = await shown(SpecPanel(), snapshots.spec_view(link_with([plain]), "kimi-eagle3", None, None),
                          size=(110, 20))
    assert "steps 3 · topk 1 · draft tokens 4" in text and "adaptive" not in text
