"""The suite's own scheduling: recorded long tests first, everything else as collected."""

import json
from types import SimpleNamespace

from tests.support.schedule import RECORD_FLOOR_S, DurationRecorder, longest_first, recorded_durations, unsuffixed


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
    rec.pytest_sessionfinish(None)
    assert json.loads(path.read_text()) == {"slower::now": 61.5, "kept::test": 20.0, "new::long": RECORD_FLOOR_S + 1}
    assert list(json.loads(path.read_text())) == ["slower::now", "kept::test", "new::long"]


def test_the_group_suffix_of_loadgroup_is_not_part_of_the_recorded_id():
    assert unsuffixed("tests/a.py::test_x@tests/a.py") == "tests/a.py::test_x"
    assert unsuffixed("tests/a.py::test_x[p-1]@tests/a.py") == "tests/a.py::test_x[p-1]"
    assert unsuffixed("tests/a.py::test_x[me@host]") == "tests/a.py::test_x[me@host]"
    assert unsuffixed("tests/a.py::test_x") == "tests/a.py::test_x"
