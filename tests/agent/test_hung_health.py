"""The health check of a server: one deadline for the whole request, the release's paths tried in turn
(a 404 moves on to the next), and, in the background, a check that never makes a poll wait."""

from __future__ import annotations

import http.server
import os
import threading
import time

import pytest

from spectui.agent.protocol import ServerState
from spectui.agent.servers.watch import HEALTH_TIMEOUT_S, HealthCheck, ServerWatch
from tests.agent.crowded_stubs import CrowdedHost


def test_a_server_that_answers_a_byte_a_second_is_given_up_on_at_the_deadline():
    with CrowdedHost(silent=0, trickling=1) as crowd:
        check = HealthCheck("127.0.0.1", crowd.ports[0])
        t = time.monotonic()
        assert check() is False
        took = time.monotonic() - t
    # one deadline for connect, headers and body: not a wait per byte, which a trickle never trips
    assert took < HEALTH_TIMEOUT_S + 1.5, took
    assert check.hung and check.failure == "/server_info gave no full answer within %g s" % HEALTH_TIMEOUT_S


class OldRelease(http.server.BaseHTTPRequestHandler):
    """A release without /server_info: 404 there, 200 on /get_server_info."""

    def do_GET(self):  # noqa: N802 (the handler's name)
        body = b'{"version": "0.4.0"}' if self.path == "/get_server_info" else b'{"detail": "Not Found"}'
        self.send_response(200 if self.path == "/get_server_info" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def old_release():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), OldRelease)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def test_a_404_moves_on_to_the_next_path_until_one_is_known(old_release):
    check = HealthCheck("127.0.0.1", old_release)
    assert check() is True and check.path == "/get_server_info" and check.failure is None
    check.path = "/server_info"  # once a path is known, its 404 is an answer that says no
    assert check() is False and check.failure == "HTTP 404 from /server_info" and not check.hung


def test_in_the_background_a_poll_never_waits_and_a_hung_server_goes_unresponsive(tmp_path):
    with CrowdedHost(silent=1, trickling=0) as crowd:
        rec = {"name": "ext-%d" % crowd.ports[0], "state": ServerState.LOADING, "host": "127.0.0.1",
               "port": crowd.ports[0], "pid": crowd.stubs[0].pid, "argv": []}
        answered = threading.Event()
        watch = ServerWatch(rec, os.devnull, external=True, members=lambda: {}, background=True,
                            on_answer=answered.set)
        try:
            watch.poll()  # the check begins, and the poll is back while it runs
            assert watch.health.running and rec["state"] == ServerState.LOADING
            assert watch.stale().startswith("no answer yet from /server_info")
            asked_at = watch.health.asked_at
            watch.poll()  # a check in flight is not begun twice
            assert answered.wait(HEALTH_TIMEOUT_S + 10)
            assert watch.health.checked == 1 and watch.health.asked_at == asked_at
            assert watch.poll() is True and rec["state"] == ServerState.UNRESPONSIVE
            assert rec["reason"] == "/server_info gave no full answer within %g s" % HEALTH_TIMEOUT_S
            assert "has not answered since spectui found it" in watch.stale()
        finally:
            watch.close()
