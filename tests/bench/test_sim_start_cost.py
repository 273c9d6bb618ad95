"""bench/sim_start_cost.py runs: both ways of starting a rank start one that claims its GPU and exits."""

import json
import subprocess
import sys

from tests.sim.simproc import ROOT


def test_the_start_cost_bench_measures_both_ways():
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "sim_start_cost.py"), "--ranks", "2", "--json"],
                       capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    assert r.returncode in (0, 1), r.stderr
    out = json.loads(r.stdout)
    assert out["ranks"] == 2 and out["sim_cpu_s"] > 0 and out["anchor_cpu_s"] > 0, out
    assert out["pass"] == (out["sim_cpu_s"] <= out["anchor_cpu_s"])
