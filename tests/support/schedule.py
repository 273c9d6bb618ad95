"""The order tests run in, for parallel runs (pytest-xdist): the longest start first, and tests are
handed to the workers one at a time, so that a long test never starts last on one worker while
the others sit idle.

"Longest" comes from ``tests/durations.json``: how many seconds each test over ``RECORD_FLOOR_S``
took (setup, call and teardown) on its own, in a serial run. Tests it does not list keep their
collection order after those. Refresh it with a serial run, of the whole suite or of some of it:

    python3 -m pytest -q -p no:xdist --record-durations [PATHS or -k ...]

which rewrites the entries of the tests that ran (a stale entry only changes where a test starts).
A parallel run is refused: under three workers on two cores a test's seconds are mostly the others'
load (a test that takes 8 s alone read 195 s there), which orders the suite by who ran beside whom.

What the suite costs, apart from how it is spread over workers, comes from a serial run:

    python3 -m pytest -q -p no:xdist --record-cpu /tmp/cpu.json

each test's CPU seconds (the whole machine's) and wall seconds, and their sums.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).resolve().parents[1] / "durations.json"
RECORD_FLOOR_S = 3.0


def recorded_durations(path: Path = DURATIONS) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {k: float(v) for k, v in data.items() if isinstance(v, (int, float))} if isinstance(data, dict) else {}


def unsuffixed(nodeid: str) -> str:
    """The test's id without the ``@group`` that ``--dist loadgroup`` appends to it (after any ``[params]``,
    which may hold an ``@`` of their own)."""
    head, at, tail = nodeid.rpartition("@")
    return head if at and "::" in head and "]" not in tail else nodeid


def longest_first(items: list, durations: dict) -> None:
    """Sort ``items`` in place: recorded durations, longest first; the rest after them, as collected."""
    items.sort(key=lambda item: -durations.get(item.nodeid, 0.0))


def pytest_addoption(parser):
    parser.addoption("--record-cpu", metavar="FILE", default=None,
                     help="write each test's CPU seconds (the whole machine's, from /proc/stat) and wall seconds to "
                          "FILE, and print the sums: what the suite costs, apart from how it is spread over workers. "
                          "A serial run only (-p no:xdist), on an otherwise idle machine")
    parser.addoption("--record-durations", action="store_true", default=False,
                     help="write how long each test over %g s took on its own to %s (it orders later runs: the "
                          "longest start first). A serial run only (-p no:xdist), on an otherwise idle machine"
                     % (RECORD_FLOOR_S, DURATIONS.relative_to(DURATIONS.parents[1])))


def pytest_configure(config):
    # pytest-xdist's load scheduling hands each worker a quarter of its share at once, in collection
    # order: one at a time, the long tests at the front spread over the workers instead.
    if config.pluginmanager.hasplugin("xdist") and getattr(config.option, "maxschedchunk", 0) is None:
        config.option.maxschedchunk = 1
    if config.getoption("record_cpu"):
        serial_only(config, "--record-cpu measures the whole machine's CPU per test")
        config.pluginmanager.register(CpuRecorder(Path(config.getoption("record_cpu"))), "spectui-record-cpu")
    if config.getoption("record_durations"):
        serial_only(config, "--record-durations records each test's own seconds")
        config.pluginmanager.register(DurationRecorder(), "spectui-record-durations")


def serial_only(config, what: str) -> None:
    if getattr(config.option, "numprocesses", None) or hasattr(config, "workerinput"):
        raise pytest.UsageError(what + ": run it serially (-p no:xdist), not with -n")


#: The group of the tests that run the real-SGLang venv's Python (the ``real_sglang_python`` fixture): they share
#: one worker, and with it one warm interpreter that has imported SGLang (tests/support/real_sglang.py
#: ``run_real``), instead of each worker paying that import.
REAL_SGLANG_GROUP = "real_sglang"


def module_group(item):
    """Under ``--dist loadgroup``, the tests of one group run on one worker: :data:`REAL_SGLANG_GROUP` for a test
    that runs the real-SGLang venv; else the module's name when the test uses a module-scoped fixture (a server, a
    built wheel), which that worker then sets up once."""
    info = getattr(item, "_fixtureinfo", None)
    if info is not None and "real_sglang_python" in info.names_closure:
        return REAL_SGLANG_GROUP
    defs = info.name2fixturedefs.values() if info is not None else ()
    if any(d and d[-1].scope == "module" for d in defs):
        return item.nodeid.split("::", 1)[0]
    return None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist names the groups (and so changes the test ids)
def pytest_collection_modifyitems(config, items):
    longest_first(items, recorded_durations())
    for item in items:
        group = module_group(item)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))


class DurationRecorder:
    """Adds up each test's reported seconds (setup, call, teardown) in a serial run and writes them at the end
    of the session."""

    def __init__(self, path: Path = DURATIONS) -> None:
        self.path = path
        self.spent: dict = defaultdict(float)
        self.finished: set = set()  # torn down: a test a stopped run (Ctrl-C) cut short is not recorded

    def pytest_runtest_logreport(self, report) -> None:
        self.spent[unsuffixed(report.nodeid)] += report.duration
        if report.when == "teardown":
            self.finished.add(unsuffixed(report.nodeid))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session) -> None:
        durations = recorded_durations(self.path)
        for nodeid, seconds in self.spent.items():
            if nodeid not in self.finished:
                continue
            durations.pop(nodeid, None)
            if seconds >= RECORD_FLOOR_S:
                durations[nodeid] = round(seconds, 1)
        ordered = dict(sorted(durations.items(), key=lambda kv: (-kv[1], kv[0])))
        self.path.write_text(json.dumps(ordered, indent=1) + "\n")


def busy_seconds(stat: str = "/proc/stat") -> float:
    """CPU seconds the whole machine has spent busy since boot (user, nice, system, irq, softirq, steal)."""
    with open(stat) as f:
        fields = f.readline().split()
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class CpuRecorder:
    """``--record-cpu FILE``: each test's CPU seconds (the whole machine's: the servers, sshd sessions and
    tmux panes a test starts are not its children) and wall seconds, from setup to teardown. Waiting is
    the wall time that is not CPU; on N cores the suite cannot take less than its CPU seconds / N."""

    def __init__(self, path: Path, busy=busy_seconds, clock=time.monotonic) -> None:
        self.path, self.busy, self.clock = path, busy, clock
        self.rows: dict = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        cpu0, wall0 = self.busy(), self.clock()
        yield
        self.rows[item.nodeid] = {"cpu_s": round(self.busy() - cpu0, 2), "wall_s": round(self.clock() - wall0, 2)}

    def totals(self) -> dict:
        cpu = sum(r["cpu_s"] for r in self.rows.values())
        wall = sum(r["wall_s"] for r in self.rows.values())
        return {"tests": len(self.rows), "cpu_s": round(cpu, 1), "wall_s": round(wall, 1)}

    def pytest_sessionfinish(self, session) -> None:
        ordered = dict(sorted(self.rows.items(), key=lambda kv: (-kv[1]["cpu_s"], kv[0])))
        self.path.write_text(json.dumps({"totals": self.totals(), "tests": ordered}, indent=1) + "\n")

    def pytest_terminal_summary(self, terminalreporter) -> None:
        t = self.totals()
        terminalreporter.write_line(
            "record-cpu: %d tests, %.0f CPU seconds over %.0f s (%.0f s waiting); on %d cores at least %.0f s; %s"
            % (t["tests"], t["cpu_s"], t["wall_s"], max(0.0, t["wall_s"] - t["cpu_s"]), os.cpu_count() or 1,
               t["cpu_s"] / (os.cpu_count() or 1), self.path))
