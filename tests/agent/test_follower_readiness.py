"""A multi-node server's node of rank 1 and up is ready when its health-check-only server answers /health (it
serves no API and logs no ready line, as real SGLang's non-zero nodes do); rank 0 still needs its ready line
and an API route that generates nothing."""

from __future__ import annotations

import http.server
import os
import threading

import pytest

from spectui.agent.protocol import ServerState
from spectui.agent.servers.watch import ServerWatch, node_rank


@pytest.mark.parametrize("argv, rank", [
    (["python", "-m", "sglang.launch_server", "--nnodes", "2", "--node-rank", "1"], 1),
    (["python", "-m", "sglang.launch_server", "--node-rank=3"], 3),
    (["python", "-m", "sglang.launch_server", "--tp-size", "8"], 0),
    (["python", "-m", "sglang.launch_server", "--node-rank", "x"], 0),
    (["python", "-m", "sglang.launch_server", "--node-rank"], 0),
])
def test_node_rank_of_a_command_line(argv, rank):
    assert node_rank(argv) == rank


class DummyHealth(http.server.BaseHTTPRequestHandler):
    """What SGLang's launch_dummy_health_check_server answers: /health and /health_generate, nothing else."""

    def do_GET(self):  # noqa: N802 (the handler's name)
        self.send_response(200 if self.path in ("/health", "/health_generate") else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def dummy_server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), DummyHealth)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()


def watch_for(port, argv, tmp_path):
    log = tmp_path / "server.log"
    log.write_text("")
    rec = {"name": "duo", "state": ServerState.LOADING, "host": "127.0.0.1", "port": port, "argv": argv,
           "pid": os.getpid(), "pgid": os.getpgid(0)}
    return ServerWatch(rec, str(log), popen=_Alive()), rec


class _Alive:
    """The server's process, alive."""
    pid = os.getpid()

    def poll(self):
        return None


def test_a_node_of_rank_1_is_ready_when_its_health_server_answers(dummy_server, tmp_path):
    watch, rec = watch_for(dummy_server, ["sglang", "--nnodes", "2", "--node-rank", "1"], tmp_path)
    watch.poll()
    assert rec["state"] == ServerState.READY and watch.health.path == "/health"


def test_rank_0_is_not_ready_on_a_bare_health_answer(dummy_server, tmp_path):
    watch, rec = watch_for(dummy_server, ["sglang", "--nnodes", "2", "--node-rank", "0"], tmp_path)
    watch.poll()
    assert rec["state"] == ServerState.LOADING   # no ready line, and /server_info is not there
