"""The simulator's three log eras, read by spectui's own parser (they share no code)."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from spectui.agent.logs import LogFeeder
from tests.support.sshd import free_port


def wait_ready(port, proc, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the simulated server exited"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:  # a 0.5.x /health generates a token: about 1 s
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("not ready")


# NGRAM did not exist in the 0.4 era (the simulator refuses it there, as SGLang did).
EAGLE = ["--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", "sim/eagle-draft",
         "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
NGRAM = ["--speculative-algorithm", "NGRAM", "--speculative-num-draft-tokens", "8"]
SPEC = {"0.4": EAGLE, "2025": NGRAM, "0.5.23": NGRAM}


@pytest.mark.parametrize("era,formula", [("0.4", None), ("2025", "incl-bonus/draft-tokens"),
                                         ("0.5.23", "drafts-only")])
def test_decode_lines_of_each_era(tmp_path, era, formula):
    port = free_port()
    log = tmp_path / "server.log"
    argv = [sys.executable, "-m", "spectui.sim.server", "--model-path", "sim/m", "--port", str(port),
            "--tp-size", "1", *SPEC[era],
            "--decode-log-interval", "4", "--sim-load-time", "0.3", "--sim-log-format", era,
            "--sim-state", str(tmp_path / "state")]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_ready(port, proc)
        body = json.dumps({"text": "the cat sat on the mat. the cat sat on the mat. the cat",
                           "sampling_params": {"max_new_tokens": 64, "temperature": 0}}).encode()
        urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/generate", data=body), timeout=60).read()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
    records = LogFeeder().feed_lines(log.read_text().splitlines())
    kinds = {r["kind"] for r in records}
    assert {"loading", "load_end", "ready", "prefill", "decode"} <= kinds, kinds
    decodes = [r for r in records if r["kind"] == "decode"]
    for d in decodes:
        assert d["accept_len"] >= 1.0 and d["gen_throughput"] > 0 and d["running_req"] >= 1
        assert d.get("accept_rate_formula") == formula
        assert ("accept_rate" in d) == (formula is not None)
