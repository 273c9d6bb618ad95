"""bench/window_cost.py runs: it times the anchor, the windows and the step-by-step sum, and judges its floor."""

import re
import subprocess
import sys

from tests.sim.simproc import ROOT


def test_the_window_cost_bench_prints_its_ratios_and_verdict():
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "window_cost.py"), "--repeats", "2", "--frames", "10"],
                       capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    out = r.stdout
    assert r.returncode in (0, 1), r.stderr
    reads = int(re.search(r"(\d+) reads in the window \(60 s at 10 Hz\)", out).group(1))
    assert 600 <= reads <= 601, out  # a full minute at 10 Hz
    ratio = float(re.search(r"add \+ three stats_over .* ratio +([\d.]+) of the parse", out).group(1))
    before = float(re.search(r"before: every step.* ratio +([\d.]+) of the parse", out).group(1))
    assert ratio > 0 and before > 0, out
    assert out.rstrip().endswith("PASS" if ratio < 1 else "FAIL") and r.returncode == (0 if ratio < 1 else 1), out
