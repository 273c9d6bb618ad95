"""The console in a real tmux, connected to this machine through the same agent as the tier's commands
(``spectui connect local --python VENV --state-dir STATE``): the shared real SGLang 0.5.23 server shows ready, and
its throughput panel shows a live, non-zero tok/s while a client spectui knows nothing of streams to it."""
from __future__ import annotations

import json
import re
import shlex
import sys
import threading
import urllib.request

import pytest

from tests.e2e.test_demo_tmux import TMUX, Tmux, row
from tests.real_server.conftest import NAME, ROOT

pytestmark = pytest.mark.xdist_group("real_server")

FIGURE = re.compile(r"(per stream|all streams)\s+(\d+\.\d) tok/s")


def stream_forever(port: int, stop: threading.Event, counts: dict) -> None:
    """Stream long generations from the server's ``/generate`` (Server-Sent Events) until ``stop`` is set,
    counting the chunks received; an error ends the loop and is kept in ``counts``."""
    body = json.dumps({"text": "Tell me a long story about a lighthouse keeper and the sea.", "stream": True,
                       "sampling_params": {"max_new_tokens": 96, "ignore_eos": True, "temperature": 0.8}}).encode()
    while not stop.is_set():
        req = urllib.request.Request("http://127.0.0.1:%d/generate" % port, data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                for line in r:
                    if line.startswith(b"data:") and not line.startswith(b"data: [DONE]"):
                        counts["chunks"] = counts.get("chunks", 0) + 1
                    if stop.is_set():
                        return
        except OSError as exc:
            counts["error"] = str(exc)
            return


def header(text: str) -> bool:
    """Whether the console's header says it is connected to this machine: the first non-blank line that names
    spectui (a capture may catch a redraw's blank top line, and an alert's line sits above the header, e.g. a
    found server another test stopped)."""
    top = next((ln for ln in text.splitlines()[:4] if ln.lstrip().startswith("spectui")), "")
    return "● connected" in top and "local" in top


def console_command(tier) -> str:
    env = dict(tier.env(), TERM="xterm-256color")
    words = ["cd", shlex.quote(str(ROOT)), "&&", "env", "-u", "COLUMNS", "-u", "LINES",
             *["%s=%s" % (k, shlex.quote(env[k])) for k in ("HOME", "SPECTUI_PROFILES_PATH", "SPECTUI_CONFIG_DIR",
                                                          "SPECTUI_DATA_DIR", "XDG_CACHE_HOME", "PYTHONPATH",
                                                          "TERM")],
             shlex.quote(sys.executable), "-m", "spectui", "connect", "local", *map(shlex.quote, tier.host()[2:])]
    return " ".join(words)


def test_the_console_shows_the_real_server_ready_with_live_throughput_under_load(real_server):
    assert TMUX, "needs tmux (.ci/run installs it)"
    port = real_server.started["port"]
    tmux = Tmux()
    stop, counts = threading.Event(), {}
    client = threading.Thread(target=stream_forever, args=(port, stop, counts), daemon=True)
    try:
        tmux.start(console_command(real_server), size=(200, 50))
        screen = tmux.wait(lambda t: ("● ready" in row(t, NAME) and header(t)) or tmux.dead(), 120,
                           "real-cpu ready in the console, connected to local")
        assert not tmux.dead(), screen
        client.start()

        def live(text: str) -> bool:
            figures = [float(m.group(2)) for m in FIGURE.finditer(text)]
            return ("Throughput · " + NAME) in text and any(f > 0 for f in figures)

        screen = tmux.wait(lambda t: live(t) or "error" in counts, 180, "a non-zero tok/s for real-cpu under load")
        assert "error" not in counts, counts["error"]
        assert counts.get("chunks", 0) > 0  # the client was streaming when the figure showed
        assert "● ready" in row(screen, NAME)
    finally:
        stop.set()
        client.join(130) if client.is_alive() else None
        tmux.kill()
