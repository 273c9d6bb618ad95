"""``spectui history list`` is oldest first; entries of the same time (or none, as sglang imports have)
follow their ids as numbers (2 before 10), in the text and in --json alike, and --limit keeps the newest."""

import json

import pytest

from spectui.cli.main import main
from spectui.core.bench.runs import RunResult
from spectui.core.history import HistoryStore

T0 = 1_700_000_000.0


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("SPECTUI_CONFIG_DIR", str(tmp_path / "config"))
    return HistoryStore()


def save(store, n, started_at, host="h1"):
    return [str(store.save_run(RunResult(run_id=f"r{i}-{started_at}", host=host, state="done", profile="p",
                                         started_at=started_at)))
            for i in range(n)]


def listed(capsys, *extra):
    """The ids of ``history list`` in its text, and in its --json, in order."""
    assert main(["history", "list", *extra]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[0] == "ID"
    text = [line.split()[0] for line in lines[1:]]
    assert main(["history", "list", "--json", *extra]) == 0
    doc = json.loads(capsys.readouterr().out)
    return text, [e["id"] for e in doc["entries"]]


def numeric(ids):
    return sorted(ids, key=int)


def test_runs_without_a_time_list_by_number(store, capsys):
    ids = save(store, 12, None)  # an sglang JSONL import keeps no start time
    assert len(ids) == 12
    text, js = listed(capsys)
    assert text == js == numeric(ids)
    text, js = listed(capsys, "--limit", "3")
    assert text == js == numeric(ids)[-3:]


def test_runs_of_one_time_list_by_number(store, capsys):
    ids = save(store, 11, T0)
    text, js = listed(capsys)
    assert text == js == numeric(ids)


def test_time_orders_first_then_number(store, capsys):
    late = save(store, 10, T0 + 60)  # saved first, started later
    early = save(store, 2, T0)
    text, js = listed(capsys)
    assert text == js == numeric(early) + numeric(late)
    text, js = listed(capsys, "--limit", "2")
    assert text == js == numeric(late)[-2:]


def test_comparisons_of_one_time_list_by_number(store, capsys):
    ids = [store.save_comparison({"created_at": T0, "host": "h1", "profiles": [{"name": "p"}],
                                  "preset": {"name": "x"}, "run_ids": []}, key=f"k{i}") for i in range(11)]
    text, js = listed(capsys)
    assert text == js == sorted(ids, key=lambda c: int(c[1:]))
