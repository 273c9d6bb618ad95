"""The log parser on real SGLang output, every era: each line copied verbatim from a public
source (tests/fixtures/real/logs/, URL on each file's first line), each record checked
field by field against what was written by hand from the line's text.

Where each era's lines come from in SGLang (file:line in the published wheels):

* 0.2.0-0.2.13: ``logging.basicConfig(format="%(message)s")`` (sglang 0.2.5 wheel,
  sglang/srt/managers/controller/manager_single.py:123-126), so lines have no prefix;
  ``Decode batch.`` from sglang 0.2.15 wheel, sglang/srt/managers/tp_worker.py:297-303.
* 0.2.14-0.3.x: ``[%(asctime)s{prefix}] `` with ``datefmt="%H:%M:%S"`` (sglang 0.3.0 wheel,
  sglang/srt/utils.py:709-715): the time of day only.
* 0.3.6-0.5.x: the same format with ``datefmt="%Y-%m-%d %H:%M:%S"`` (sglang 0.4.10 wheel,
  sglang/srt/utils.py ``configure_logger``; sglang 0.5.3 wheel, sglang/srt/utils/common.py);
  ``Decode batch.`` (sglang 0.4.0 wheel, sglang/srt/managers/scheduler.py:728-735; with
  accept len, sglang 0.4.6 wheel, scheduler.py:1043-1067; with cuda graph and a trailing
  comma, sglang 0.5.3 wheel, sglang/srt/managers/scheduler_metrics_mixin.py:215).
* 2026: ``Decode batch{iter_msg}, `` (sglang 0.5.23 wheel,
  sglang/srt/managers/scheduler_components/metrics_reporter.py:963).
"""

import json
from pathlib import Path

import pytest

from spectui.agent.logs import parse_line, parse_lines

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "logs"
FILES = sorted(LOGS.glob("*.log"))


def read_fixture(path):
    """``(source, era, entries)``; an entry is ``(lines, expected record or None)``."""
    source = era = None
    default = {}
    entries = []
    pending = []
    for raw in path.read_text(encoding="utf-8").split("\n"):
        if raw.startswith("# source: "):
            source = raw[len("# source: "):]
        elif raw.startswith("# era: "):
            era = raw[len("# era: "):]
        elif raw.startswith("#default "):
            default = json.loads(raw[len("#default "):])
        elif raw.startswith("#> "):
            expected = json.loads(raw[3:])
            if expected is not None:
                expected = {k: v for k, v in {**default, **expected}.items() if v != "absent"}
            entries.append((pending, expected))
            pending = []
        elif raw.startswith("# "):
            continue
        else:
            pending.append(raw)
    assert not [line for line in pending if line], "%s: log lines after the last expectation" % path.name
    return source, era, entries


def check_record(got, expected, lines):
    assert got is not None, lines
    if expected["kind"] == "error":
        assert got["lines"] == lines
        got = {k: v for k, v in got.items() if k != "lines"}
    assert set(got) == set(expected), (lines[0], sorted(set(got) ^ set(expected)))
    for key, value in expected.items():
        if isinstance(value, float):
            assert type(got[key]) is float and got[key] == pytest.approx(value), (key, lines[0])
        else:
            assert type(got[key]) is type(value) and got[key] == value, (key, lines[0])


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_fixture_file_names_its_source_and_era(path):
    source, era, entries = read_fixture(path)
    assert source and source.startswith("https://github.com/") and era and entries


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_each_real_line_by_itself(path):
    _, _, entries = read_fixture(path)
    for lines, expected in entries:
        if len(lines) != 1:
            continue  # a traceback: read by the feeder below
        got = parse_line(lines[0])
        if expected is None:
            assert got is None, lines[0]
        else:
            check_record(got, expected, lines)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_each_real_file_as_a_log(path):
    _, _, entries = read_fixture(path)
    log = [line for lines, _ in entries for line in lines]
    expected = [(lines, exp) for lines, exp in entries if exp is not None]
    for _ in range(2):  # the generic reader, then the shapes it learned
        records = parse_lines(log)
        assert len(records) == len(expected)
        for got, (lines, exp) in zip(records, expected):
            check_record(got, exp, lines)


def test_the_real_set_spans_every_era():
    decode = 0
    times = set()
    for path in FILES:
        _, _, entries = read_fixture(path)
        for _lines, expected in entries:
            if expected is not None and expected["kind"] == "decode":
                decode += 1
                time = expected["time"]
                times.add("none" if time is None else "time of day" if len(time) == 8 else "date")
    assert decode >= 60 and times == {"none", "time of day", "date"}
