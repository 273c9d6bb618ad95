"""/get_server_info and /server_info bodies of real servers (tests/fixtures/real/server_info/,
URLs in SOURCES.json): each release's shape of the scheduler state, and no speculative settings
when the algorithm is none. Expectations copied by hand from the bodies."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from spectui.agent.servers import figures as lf
from spectui.agent.servers.telemetry import NO_SPECULATION, ServerTelemetry, speculative_settings
from spectui.core.server_frames import ServerFrame

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "server_info"


def body(name):
    return json.loads((REAL / name).read_text())


def test_every_fixture_has_its_source():
    sources = json.loads((REAL / "SOURCES.json").read_text())["files"]
    assert set(sources) == set(p.name for p in REAL.glob("*.json")) - {"SOURCES.json"}
    for name, src in sources.items():
        assert src["url"].startswith("https://github.com/") and body(name)["version"] == src["version_field"]


@pytest.mark.parametrize("name, expected", [
    ("get_server_info_0.4.3.json", []),                              # no scheduler state before 0.4.4
    ("get_server_info_0.4.4.post1.json", [197.54332132726867]),      # merged into the top level
    ("get_server_info_0.4.7.json", [134.13633826170337]),            # internal_states, one per DP rank
    ("get_server_info_0.4.10.post2.json", [129.38986787267157]),
    ("server_info_dev-2026-04-05.json", [138.88680171390206]),
])
def test_last_gen_throughput_of_each_release(name, expected):
    assert lf.state_values(body(name), "last_gen_throughput") == pytest.approx(expected)


def test_no_speculative_settings_when_the_algorithm_is_none():
    old = body("get_server_info_0.4.3.json")
    # the server's arguments carry speculative defaults though nothing speculates
    assert old["speculative_algorithm"] is None
    assert (old["speculative_num_steps"], old["speculative_eagle_topk"], old["speculative_num_draft_tokens"]) == (5, 8, 64)
    assert speculative_settings(old, {}) == NO_SPECULATION
    assert speculative_settings(body("get_server_info_0.4.4.post1.json"), {"spec_num_draft_tokens": 8.0}) == NO_SPECULATION
    assert speculative_settings(dict(old, speculative_algorithm="NONE"), {}) == NO_SPECULATION
    eagle = speculative_settings(dict(old, speculative_algorithm="EAGLE"), {})
    assert eagle == {"algorithm": "EAGLE", "num_steps": 5, "topk": 8, "draft_tokens": 64}


def test_server_info_throughput_once_the_value_moves():
    info = body("get_server_info_0.4.4.post1.json")
    changes = lf.Changes()
    fig = lf.throughput(100.0, None, None, {}, None, None, info, changes, 1, lf.Holder(), True)
    assert fig["source"] == "server_info" and fig["value"] == pytest.approx(197.5433, abs=1e-4)
    assert not changes.moved("last_gen_throughput")


class OldServer:
    """Plays a 0.4.x server without --enable-metrics: /get_server_info only, /metrics 404."""

    def __init__(self, info):
        self.info = info
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path != "/get_server_info":
                    self.send_response(404)
                    self.end_headers()
                    return
                data = json.dumps(fake.info).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def test_frame_of_a_0_4_3_server_shows_no_speculation():
    server = OldServer(body("get_server_info_0.4.3.json"))
    try:
        t = ServerTelemetry({"name": "old", "host": "127.0.0.1", "port": server.port}, clock=lambda: 50.0)
        frame = t.frame("ready")
    finally:
        server.httpd.shutdown()
    assert frame["version"] == "0.4.3"
    assert frame["speculative"] == NO_SPECULATION
    assert frame["accept_length"] is None and frame["accept_rate"] == []
    assert frame["sources"]["server_info"] == "ok" and frame["sources"]["metrics"].startswith("HTTP 404")
    held = ServerFrame.from_event(frame, received_at=1.0)
    assert not held.speculating


def test_frame_without_metrics_takes_throughput_from_server_info_once_it_moves():
    info = body("get_server_info_0.4.4.post1.json")
    server = OldServer(info)
    clock = [100.0]
    try:
        t = ServerTelemetry({"name": "old", "host": "127.0.0.1", "port": server.port}, clock=lambda: clock[0])
        first = t.frame("ready")
        # the next read: a Decode line was logged in between, so the value moved
        server.info = dict(info, last_gen_throughput=150.25)
        clock[0] += 6.0
        second = t.frame("ready")
    finally:
        server.httpd.shutdown()
    assert first["gen_throughput"]["source"] == "idle"  # one value may be an old one: not taken as busy
    assert second["gen_throughput"]["source"] == "server_info"
    assert second["gen_throughput"]["value"] == 150.25
