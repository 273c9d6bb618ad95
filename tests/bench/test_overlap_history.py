"""Overlapped runs in the history: stored (data and column), marked in lists, tables and exports; and a
history file made before the column existed opens and gains it."""

import csv
import io
import json
import sqlite3
from contextlib import closing

from spectui.core.bench.compare import build_comparison
from spectui.core.bench.runs import RunResult
from spectui.core.bench.table import parse_markdown_table, render_comparison
from spectui.core.history import HistoryStore
from tests.bench.test_history import PRESET, fake_run

NOTE = "its latency and throughput are not those of a lone run"


def overlapped_runs():
    runs = [fake_run("r1", "base", 80.0), fake_run("r2", "base", 82.0, repeat=2),
            fake_run("r3", "spec", 60.0, accept=2.0), fake_run("r4", "spec", 58.0, accept=2.0, repeat=2)]
    runs[1].overlapped_with = ["x9"]           # a run of another console, not in this history
    runs[2].overlapped_with = ["r4"]           # r3 and r4 measured the server at the same time
    runs[3].overlapped_with = ["r3"]
    return runs


def test_overlapped_runs_are_stored_listed_and_exported_with_their_mark(env, tmp_path, monkeypatch):
    store = HistoryStore()
    for r in overlapped_runs():
        store.save_run(r)
    with closing(sqlite3.connect(store.path)) as db:
        column = dict(db.execute("SELECT run_id, overlapped_with FROM runs"))
    assert column == {"r1": None, "r2": "x9", "r3": "r4", "r4": "r3"}
    assert [r["run_id"] for r in store.overlapped()] == ["r2", "r3", "r4"]
    assert store.run(3)["overlapped_with"] == ["r4"] and store.run(1)["overlapped_with"] == []

    details = {e.id: e.detail for e in store.entries()}
    assert "overlapped" not in details["1"]
    assert details["2"].endswith("† overlapped with run x9")
    assert details["3"].endswith("† overlapped with run 4") and details["4"].endswith("† overlapped with run 3")

    md = store.export(["1", "2", "3", "4"], "md")
    body = parse_markdown_table(md)[1:]
    assert [r[3] for r in body] == ["base", "base †", "spec †", "spec †"]
    assert f"- † run 3 overlapped with run 4: {NOTE}" in md
    assert f"- † run 2 overlapped with run x9: {NOTE}" in md
    rows = list(csv.DictReader(io.StringIO(store.export(["1", "2", "3", "4"], "csv"))))
    assert [r["overlapped_with"] for r in rows] == ["", "x9", "r4", "r3"]

    text = store.export(["1", "2", "3", "4"], "json")
    assert [r["overlapped_with"] for r in json.loads(text)["runs"]] == [[], ["x9"], ["r4"], ["r3"]]
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(tmp_path / "other"))
    other = HistoryStore()
    other.import_json(text)
    assert [r["run_id"] for r in other.overlapped()] == ["r2", "r3", "r4"]


def test_comparison_tables_mark_overlapped_rows_with_a_footnote():
    runs = overlapped_runs()
    comp = build_comparison(runs, profiles=["base", "spec"], baseline="base", preset=PRESET, host="h1")
    assert comp["profiles"][1]["cells"]["1"]["overlapped"] == {"r3": ["r4"], "r4": ["r3"]}
    text = render_comparison(comp, "text")
    lines = text.splitlines()
    assert any(line.startswith("base †") for line in lines) and any(line.startswith("spec †") for line in lines)
    assert f"† spec, run r3, overlapped with run r4: {NOTE}" in text
    assert f"† base, run r2, overlapped with run x9: {NOTE}" in text
    md = render_comparison(comp, "markdown")
    assert [r[0] for r in parse_markdown_table(md)[1:]] == ["base †", "spec †"]
    rows = list(csv.DictReader(io.StringIO(render_comparison(comp, "csv"))))
    assert [r["overlapped_runs"] for r in rows] == ["r2", "r3 r4"]

    lone = [fake_run("r1", "base", 80.0), fake_run("r3", "spec", 60.0, accept=2.0)]
    plain = render_comparison(build_comparison(lone, profiles=["base", "spec"], baseline="base", preset=PRESET,
                                               host="h1"), "text")
    assert "†" not in plain and "overlapped" not in plain


OLD_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, host TEXT NOT NULL, started_at REAL,
    saved_at REAL NOT NULL, profile TEXT, profile_hash TEXT, preset TEXT, concurrency INTEGER, repeat INTEGER,
    engine TEXT, state TEXT NOT NULL, reason TEXT, comparison_key TEXT, data TEXT NOT NULL, UNIQUE (host, run_id)
);
INSERT INTO meta (key, value) VALUES ('schema', '1');
"""


def test_a_history_file_without_the_column_opens_and_migrates(tmp_path):
    path = tmp_path / "history.sqlite3"
    old = fake_run("r1", "base", 80.0).to_dict()
    del old["overlapped_with"]  # as an earlier spectui wrote it
    with closing(sqlite3.connect(path)) as db, db:
        db.executescript(OLD_SCHEMA)
        db.execute("INSERT INTO runs (run_id, host, started_at, saved_at, state, data) VALUES (?,?,?,?,?,?)",
                   ("r1", "h1", old["started_at"], 1.0, "done", json.dumps(old)))

    store = HistoryStore(path)
    with closing(sqlite3.connect(path)) as db:
        assert "overlapped_with" in [row[1] for row in db.execute("PRAGMA table_info(runs)")]
        assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("2",)
    assert [e.id for e in store.entries()] == ["1"] and "overlapped" not in store.entries()[0].detail
    assert RunResult.from_dict(store.run(1)).overlapped_with == []

    later = fake_run("r2", "base", 70.0, repeat=2)
    later.overlapped_with = ["r1"]
    rid = store.save_run(later)
    again = HistoryStore(path)  # opening a migrated file again changes nothing
    assert [r["run_id"] for r in again.overlapped()] == ["r2"]
    assert [e.detail.endswith("† overlapped with run 1") for e in again.entries()] == [False, True]
    assert again.run(rid)["overlapped_with"] == ["r1"]
