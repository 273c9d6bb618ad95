"""The suite's own scheduling: recorded long tests first, everything else as collected."""

import json
from pathlib import Path
from types import SimpleNamespace

from tests.support.schedule import (REAL_SGLANG_GROUP, RECORD_FLOOR_S, CpuRecorder, DurationRecorder, busy_seconds,
                                    longest_first, module_group, recorded_durations, unsuffixed)


def item(nodeid):
    return SimpleNamespace(nodeid=nodeid)


def test_recorded_tests_start_longest_first_and_the_rest_keep_their_order():
    items = [item(n) for n in ("a::1", "b::slow", "a::2", "c::slower", "a::3")]
    longest_first(items, {"b::slow": 40.0, "c::slower": 90.0, "gone::test": 500.0})
    assert [i.nodeid for i in items] == ["c::slower", "b::slow", "a::1", "a::2", "a::3"]


def test_a_missing_or_broken_record_orders_nothing(tmp_path):
    assert recorded_durations(tmp_path / "none.json") == {}
    (tmp_path / "bad.json").write_text("{not json")
    assert recorded_durations(tmp_path / "bad.json") == {}
    (tmp_path / "list.json").write_text("[1, 2]")
    assert recorded_durations(tmp_path / "list.json") == {}


def test_recording_adds_the_phases_replaces_what_ran_and_keeps_what_did_not(tmp_path):
    path = tmp_path / "durations.json"
    path.write_text(json.dumps({"kept::test": 20.0, "faster::now": 30.0, "slower::now": 5.0}))
    rec = DurationRecorder(path)
    for nodeid, phases in {"slower::now": (1.0, 60.0, 0.5), "faster::now": (0.1, 0.2, 0.1),
                           "new::long": (0.0, RECORD_FLOOR_S + 1, 0.0)}.items():
        for when, seconds in zip(("setup", "call", "teardown"), phases):
            rec.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, when=when, duration=seconds))
    rec.pytest_runtest_logreport(SimpleNamespace(nodeid="kept::test", when="setup", duration=0.1))  # cut short
    rec.pytest_sessionfinish(None)
    assert json.loads(path.read_text()) == {"slower::now": 61.5, "kept::test": 20.0, "new::long": RECORD_FLOOR_S + 1}
    assert list(json.loads(path.read_text())) == ["slower::now", "kept::test", "new::long"]


def test_the_group_suffix_of_loadgroup_is_not_part_of_the_recorded_id():
    assert unsuffixed("tests/a.py::test_x@tests/a.py") == "tests/a.py::test_x"
    assert unsuffixed("tests/a.py::test_x[p-1]@tests/a.py") == "tests/a.py::test_x[p-1]"
    assert unsuffixed("tests/a.py::test_x[me@host]") == "tests/a.py::test_x[me@host]"
    assert unsuffixed("tests/a.py::test_x") == "tests/a.py::test_x"


def test_busy_seconds_adds_every_busy_field_of_the_first_line(tmp_path):
    import os
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal: idle and iowait are not busy
    stat.write_text("cpu  100 20 30 9000 500 4 6 40 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    assert busy_seconds(str(stat)) == 200 / os.sysconf("SC_CLK_TCK")


def test_the_cpu_recorder_writes_each_test_and_the_sums(tmp_path):
    ticks = iter([10.0, 12.5, 12.5, 13.0])  # busy seconds: 2.5 for the first test, 0.5 for the second
    clock = iter([0.0, 4.0, 4.0, 5.0])
    rec = CpuRecorder(tmp_path / "cpu.json", busy=lambda: next(ticks), clock=lambda: next(clock))
    for nodeid in ("a::waits", "b::computes"):
        gen = rec.pytest_runtest_protocol(item(nodeid), None)
        next(gen)
        try:
            next(gen)
        except StopIteration:
            pass
    rec.pytest_sessionfinish(None)
    out = json.loads((tmp_path / "cpu.json").read_text())
    assert out["totals"] == {"tests": 2, "cpu_s": 3.0, "wall_s": 5.0}
    assert list(out["tests"]) == ["a::waits", "b::computes"]
    assert out["tests"]["a::waits"] == {"cpu_s": 2.5, "wall_s": 4.0}


def test_recording_durations_or_cpu_in_a_parallel_run_is_refused(tmp_path):
    import subprocess
    import sys
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    for option in (["--record-durations"], ["--record-cpu", str(tmp_path / "cpu.json")]):
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "1", "-p", "no:cacheprovider",
                            "-p", "tests.support.schedule", *option, str(tmp_path)], capture_output=True, text=True,
                           timeout=120, cwd=str(Path(__file__).resolve().parents[1]))
        assert r.returncode != 0 and "run it serially" in r.stdout + r.stderr, (option, r.stdout + r.stderr)


def test_the_tests_that_run_real_sglang_share_one_group_and_module_fixtures_keep_their_module():
    def fixture(scope):
        return [SimpleNamespace(scope=scope)]

    def test(nodeid, names, scopes):
        info = SimpleNamespace(names_closure=names, name2fixturedefs={n: fixture(s) for n, s in zip(names, scopes)})
        return SimpleNamespace(nodeid=nodeid, _fixtureinfo=info)

    real = test("tests/a.py::test_x", ["real_sglang_python", "commands"], ["session", "module"])
    served = test("tests/b.py::test_y", ["server"], ["module"])
    plain = test("tests/c.py::test_z", ["tmp_path"], ["function"])
    assert [module_group(t) for t in (real, served, plain)] == [REAL_SGLANG_GROUP, "tests/b.py", None]
