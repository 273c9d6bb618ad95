"""The draft width in force, as the agent's server frames carry it: read from the ``sglang:spec_num_steps`` and
``sglang:spec_num_draft_tokens`` gauges with the time of the read, and each change the agent saw (once per change,
a bounded list)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from prometheus_client import CollectorRegistry, Gauge, generate_latest

from spectui.agent.servers.telemetry import ServerTelemetry
from spectui.agent.servers.width import CHANGES_KEPT, WIDTH_SOURCE
from tests.agent.test_adaptive_width import real_gauges
from tests.support.wheels import release_tree

# The scheduler collector's labels, as sglang 0.5.23 builds them (sglang/srt/observability/metrics_collector.py:1382-1388).
LABELS = {"model_name": "meta-llama/Llama-3.1-8B-Instruct", "engine_type": "unified", "tp_rank": "0",
          "pp_rank": "0", "moe_ep_rank": "0"}
INFO = {"version": "0.5.23", "speculative_algorithm": "EAGLE3", "speculative_num_steps": 3,
        "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 4, "speculative_adaptive": True}


def width_text(steps: int, tokens: int) -> str:
    """/metrics with the two gauges as the 0.5.23 scheduler declares them (name, documentation, labels)."""
    declared = real_gauges(release_tree("0.5.23"))
    registry = CollectorRegistry()
    for name, value in (("sglang:spec_num_steps", steps), ("sglang:spec_num_draft_tokens", tokens)):
        Gauge(name, declared[name], labelnames=list(LABELS), registry=registry).labels(**LABELS).set(value)
    return generate_latest(registry).decode()


@pytest.fixture
def server():
    """A server answering /metrics with ``state["metrics"]`` and /server_info with :data:`INFO`."""
    state = {"metrics": ""}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server name
            body = (state["metrics"] if self.path == "/metrics" else json.dumps(INFO)).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    tracker = ServerTelemetry({"name": "adaptive", "host": "127.0.0.1", "port": httpd.server_address[1]})
    try:
        yield state, tracker
    finally:
        tracker.close()
        httpd.shutdown()
        httpd.server_close()


def test_the_frame_carries_the_width_in_force_read_from_the_gauges_with_the_read_time(server):
    state, tracker = server
    text = width_text(1, 2)
    assert 'sglang:spec_num_draft_tokens{engine_type="unified",model_name=' in text
    state["metrics"] = text
    frame = tracker.frame("ready")
    now = frame["width_now"]
    assert (now["steps"], now["draft_tokens"], now["source"]) == (1, 2, WIDTH_SOURCE)
    assert now["read_at"] == frame["t"] and "topk" not in now  # 0.5.23 publishes no topk gauge
    assert frame["width_changes"] == []
    assert frame["speculative"]["num_steps"] == 3  # the launch flag stays beside it


def test_a_width_change_is_recorded_once_and_the_list_is_bounded(server):
    state, tracker = server
    state["metrics"] = width_text(3, 4)
    tracker.frame("ready")
    state["metrics"] = width_text(1, 2)
    first = tracker.frame("ready")
    again = tracker.frame("ready")
    assert first["width_changes"] == again["width_changes"] == [
        {"t": first["t"], "old": {"steps": 3, "draft_tokens": 4}, "new": {"steps": 1, "draft_tokens": 2}}]
    for i in range(CHANGES_KEPT + 3):
        state["metrics"] = width_text(1 + i % 2, 2 + i % 2)
        last = tracker.frame("ready")
    assert len(last["width_changes"]) == CHANGES_KEPT
    assert last["width_changes"][-1]["new"] == {"steps": last["width_now"]["steps"],
                                               "draft_tokens": last["width_now"]["draft_tokens"]}


def test_no_width_before_the_first_decode_log_nor_a_change_from_it(server):
    state, tracker = server
    state["metrics"] = width_text(0, 0)  # both gauges read 0 until the first decode log
    assert tracker.frame("ready")["width_now"] is None
    state["metrics"] = width_text(3, 4)
    frame = tracker.frame("ready")
    assert frame["width_now"]["steps"] == 3 and frame["width_changes"] == []
