"""The soak check, half a minute of it: the console's link and the agent at 10 Hz with demo traffic
against the simulated host grow by no more than the floor after the warm-up, and the run leaves
no server behind. (``python bench/soak.py`` runs ten minutes by default.)"""

import os
import re
import subprocess
import sys
import time

import pytest

from tests.sim.simproc import ROOT


@pytest.mark.timeout(400)
def test_a_half_minute_soak_holds_the_floor_and_leaves_nothing_running():
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "soak.py"), "--seconds", "30", "--history", "100"],
                       capture_output=True, text=True, timeout=380, cwd=str(ROOT),
                       env=dict(os.environ, SPECTUI_SIM_TIME_SCALE="0.25"))  # kimi-eagle3 loads in 0.75 s
    out = r.stdout + r.stderr
    assert r.returncode == 0 and out.rstrip().endswith("PASS"), out
    growth = {who: float(mb) for who, mb in re.findall(r"(agent|console) growth: RSS ([+-][\d.]+) MB", out)}
    assert set(growth) == {"agent", "console"} and max(growth.values()) <= 2.0, out
    assert re.search(r"soak: 3\d s after a \d+ s warm-up", out), out  # it measured the full half minute
    deadline = time.monotonic() + 15  # stopped processes may take a moment to exit on a loaded machine
    while True:
        leftover = subprocess.run(["pgrep", "-f", "spectui-soak-"], capture_output=True, text=True)
        if not leftover.stdout.strip() or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert leftover.stdout.strip() == "", "the soak left processes running: " + leftover.stdout
