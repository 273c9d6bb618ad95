"""A SIGTERM or SIGHUP that lands while the agent's main thread holds a lock still ends the agent.

The agent's main thread hands each request to its thread pool (``ThreadPoolExecutor.submit``, which holds the
pool's lock). A signal handler that shut the pool down itself waited on that same lock in the same thread, for
ever: the agent outlived its console, its threads asleep, on the host. Here the signal is sent from inside
``submit``, with the pool's lock held, every time.
"""

import json
import signal
import subprocess
import sys

import pytest

from tests.sim.simproc import ROOT

SCRIPT = r"""
import concurrent.futures as cf, os, signal, sys, time
submit = cf.ThreadPoolExecutor.submit
def held(self, *a, **k):
    with self._shutdown_lock:  # the signal lands while submit holds the pool's lock
        os.kill(os.getpid(), int(sys.argv[2]))
        time.sleep(0.2)
    return submit(self, *a, **k)
cf.ThreadPoolExecutor.submit = held
from spectui.agent.main import run_and_exit
run_and_exit(["--state", sys.argv[1], "--sim", "--gpu-source", "none"])
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_inside_the_pools_lock_ends_the_agent(tmp_path, sig):
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path / "state"), str(int(sig))], cwd=str(ROOT),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert json.loads(proc.stdout.readline())["type"] == "hello"
        proc.stdin.write(b'{"id": 1, "method": "servers.list", "params": {}}\n')  # not answered inline: the pool's
        proc.stdin.flush()                                                          # (the stdin stays open)
        code = proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"the agent did not end on {sig.name} that came while its pool's lock was held")
    assert code == 0, proc.stderr.read().decode(errors="replace")[-2000:]
