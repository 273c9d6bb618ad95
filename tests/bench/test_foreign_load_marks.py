"""A run measured beside requests spectui did not send carries a mark wherever its figures show: the run
tables, the run's detail, the history list and exports, and a comparison's figures built from it. A quiet
run, an old history file and a run whose foreign load is not known carry none."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from contextlib import closing

from spectui.core.bench.compare import build_comparison
from spectui.core.bench.runs import RunResult
from spectui.core.bench.table import parse_markdown_table, render_comparison, render_run_detail, render_runs
from spectui.core.history import HistoryStore
from tests.bench.test_history import PRESET, fake_run

MARK = "‡"


def load(share, requests=3, marked=True):
    return {"known": True, "why": None, "marked": marked, "share": share, "requests_share": requests / 20.0,
            "server_requests": 20, "own_requests": 20 - requests, "foreign_requests": requests,
            "server_tokens": 1000, "own_tokens": int(1000 * (1 - share)), "foreign_tokens": int(1000 * share),
            "in_flight": {"samples": 4, "mean": 1.0, "max": 1}}


def runs():
    rs = [fake_run("r1", "base", 75.0), fake_run("r2", "base", 82.0, repeat=2),
          fake_run("r3", "spec", 60.0, accept=2.0), fake_run("r4", "spec", 58.0, accept=2.0, repeat=2)]
    rs[0].foreign_load = load(0.09)                     # another console's demo traffic ran into it
    rs[1].foreign_load = load(0.0, 0, marked=False)     # measured, quiet
    return rs


def test_a_comparison_figure_built_from_a_shared_run_carries_the_mark():
    comp = build_comparison(runs(), profiles=["base", "spec"], baseline="base", preset=PRESET, host="h1")
    base, spec = (row["cells"]["1"] for row in comp["profiles"])
    assert base["foreign"] == {"r1": {"share": 0.09, "requests": 3}}
    assert spec["foreign"] == {}
    text = render_comparison(comp, "text")
    row = next(line for line in text.splitlines() if line.startswith("base"))
    assert MARK in row.split()[1:4], row  # beside base's tok/s
    spec_row = next(line for line in text.splitlines() if line.startswith("spec"))
    assert MARK in spec_row  # its speedup is against base's figure
    assert (f"{MARK} base, run r1: 9.0% of the tokens the server generated while it measured (3 requests) were "
            "not this run's") in text
    md = render_comparison(comp, "markdown")
    assert MARK in parse_markdown_table(md)[1][1]
    rows = list(csv.DictReader(io.StringIO(render_comparison(comp, "csv"))))
    assert [r["foreign_load_runs"] for r in rows] == ["r1", ""]
    assert float(rows[0]["foreign_share_max"]) == 0.09 and rows[1]["foreign_share_max"] == ""

    quiet = [r for r in runs() if r.run_id != "r1"]
    plain = render_comparison(build_comparison(quiet, profiles=["base", "spec"], baseline="base", preset=PRESET,
                                               host="h1"), "text")
    assert MARK not in plain and "not this run's" not in plain


def test_runs_tables_and_detail_mark_the_shared_run():
    rs = [r.to_dict() for r in runs()]
    text = render_runs(rs, "text")
    lines = text.splitlines()
    assert MARK in lines[1] and MARK not in lines[2]
    assert f"{MARK} run r1: 9.0% of the tokens" in text
    rows = list(csv.DictReader(io.StringIO(render_runs(rs, "csv"))))
    assert [r["foreign_share"] for r in rows] == ["0.09", "0.0", "", ""]
    detail = render_run_detail(rs[0])
    assert f"{MARK} shared its server: 9.0% of the tokens" in detail
    assert MARK not in render_run_detail(rs[1]) and "no foreign load" in render_run_detail(rs[1])
    unknown = dict(rs[2], foreign_load={"known": False, "why": "/metrics: HTTP 404", "marked": False})
    assert "foreign load not known (/metrics: HTTP 404)" in render_run_detail(unknown)


def test_history_keeps_lists_and_exports_the_mark(env):
    store = HistoryStore()
    for r in runs():
        store.save_run(r)
    details = {e.id: e.detail for e in store.entries() if e.kind == "run"}
    assert details["1"].endswith(f"{MARK} 9.0% foreign load")
    assert all(MARK not in details[i] for i in ("2", "3", "4"))
    back = RunResult.from_dict(store.run(1))
    assert back.foreign and back.foreign_load["share"] == 0.09
    assert not RunResult.from_dict(store.run(2)).foreign
    md = store.export(["1", "2"], "md")
    assert f"{MARK} run 1: 9.0% of the tokens" in md
    exported = json.loads(store.export(["1"], "json"))["runs"][0]
    assert exported["foreign_load"]["share"] == 0.09


def test_an_old_history_file_loads_without_marks(tmp_path):
    path = tmp_path / "history.sqlite3"
    HistoryStore(path)
    old = fake_run("r1", "base", 80.0).to_dict()
    del old["foreign_load"]  # as an earlier spectui wrote it
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("INSERT INTO runs (run_id, host, started_at, saved_at, state, data) VALUES (?,?,?,?,?,?)",
                   ("r1", "h1", old["started_at"], 1.0, "done", json.dumps(old)))
    store = HistoryStore(path)
    run = RunResult.from_dict(store.run(1))
    assert run.foreign_load is None and not run.foreign
    assert MARK not in store.entries()[0].detail
    comp = build_comparison([run], profiles=["base"], baseline="base", preset=PRESET, host="h1")
    assert MARK not in render_comparison(comp, "text")
    assert "foreign load not measured" in render_run_detail(store.run(1))
