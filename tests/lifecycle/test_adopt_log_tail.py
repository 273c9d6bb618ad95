"""A new agent (each spectui command starts one) re-watching a live server spectui started reads the end of its
log, not all of it: a server that ran for days has a log of gigabytes, and reading it from its start costs the
host's CPU while the command runs (a benchmark measured beside the catch-up read measures it too)."""

import os
import signal
import sys

from spectui.agent.servers.manager import ServerManager
from spectui.agent.servers.watch import SETTLE_TAIL_BYTES
from tests.lifecycle.test_safety import _Channel, _NoGpus
from tests.support.sshd import free_port

SERVES = "import time\nprint('The server is fired up and ready to roll!', flush=True)\nwhile True:\n    time.sleep(1)\n"


def test_a_new_agent_reads_the_end_of_a_live_servers_long_log(state_dir):
    first = ServerManager(str(state_dir), _Channel(), lambda: _NoGpus())
    started = first.start({"name": "long", "argv": [sys.executable, "-c", SERVES], "host": "127.0.0.1",
                           "port": free_port(), "gpus": [0]})
    pid = started["pid"]
    try:
        first.close()
        log = started["log_path"]
        line = b'[2026-12-06 10:00:00] INFO:     127.0.0.1:50000 - "GET /metrics HTTP/1.1" 200 OK\n'
        with open(log, "ab") as fh:  # what days of polls leave: 32 MiB
            fh.write(line * (32 * 1024 * 1024 // len(line)))
        size = os.path.getsize(log)

        second = ServerManager(str(state_dir), _Channel(), lambda: _NoGpus())
        try:
            second.adopt()
            watch = second.watches["long"]
            assert watch.follower.offset >= size - SETTLE_TAIL_BYTES, (watch.follower.offset, size)
            assert second.current("long")["pid"] == pid  # watched: the same server, still live
        finally:
            second.close()
    finally:
        os.killpg(pid, signal.SIGKILL)
