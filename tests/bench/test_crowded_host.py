"""The crowded-host benchmark, its servers-list steps only: it prints a quiet and a crowded figure and
their ratio for each, judges them against the floor as its exit status says, and leaves none of its
stand-ins running. (``python bench/crowded_host.py`` also measures the console in tmux.)"""

import re
import subprocess
import sys

import pytest

from tests.sim.simproc import ROOT
from tests.support.procs import wait_gone

ROW = re.compile(r"^(servers list --host local|servers list --demo) +([\d.]+) +([\d.]+) +([\d.]+|inf)x  (ok|OVER)(.*)$",
                 re.M)


@pytest.mark.timeout(400)
def test_the_servers_list_steps_print_ratios_and_leave_no_stand_in_running():
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "crowded_host.py"), "--only", "list", "--rounds", "1",
                        "--repeats", "1", "--silent", "2", "--trickling", "1", "--step-timeout", "90"],
                       capture_output=True, text=True, timeout=380, cwd=str(ROOT))
    out = r.stdout + r.stderr
    rows = {m.group(1): m.groups()[1:] for m in ROW.finditer(out)}
    assert set(rows) == {"servers list --host local", "servers list --demo"}, out
    for quiet, crowded, ratio, verdict, note in rows.values():
        assert float(quiet) > 0 and float(crowded) > 0, out
        # the seconds are printed to 0.01 and the ratio to 0.01, each rounded from the unrounded figures: the ratio
        # lies between the extremes of the printed seconds' rounding intervals, give or take its own rounding
        q, c, half = float(quiet), float(crowded), 0.005
        lo, hi = (c - half) / (q + half), (c + half) / max(q - half, 1e-9)
        assert lo - half <= float(ratio) <= hi + half, (lo, hi, out)
        assert verdict == ("ok" if float(ratio) <= 1.2 and not note else "OVER"), out
    passed = all(v[3] == "ok" for v in rows.values())
    assert out.rstrip().splitlines()[-1].endswith("PASS" if passed else "FAIL"), out
    assert r.returncode == (0 if passed else 1), out
    pids = [int(p) for p in re.search(r"stand-ins started: pids ([\d ]+)", out).group(1).split()]
    assert len(pids) == 3 and all(wait_gone(p, 10) for p in pids), out
