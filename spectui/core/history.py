"""Benchmark history: every run and comparison, kept in SQLite in the user's data folder.

``<data>/history.sqlite3`` (``spectui.core.paths.user_data_dir()``, ``$SPECTUI_DATA_DIR`` in
tests). A run is saved as soon as it ends, finished or not: its ``state`` says ``done``,
``interrupted`` or ``failed``. Each keeps its provenance: host, GPU names, SGLang version, the
profile's content (env values redacted) and hash, the launch argv (secret flags redacted),
the preset, spectui's version, and every per-request record.

Ids: runs are numbers (``12``), comparisons ``c`` and a number (``c3``).
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spectui.core.bench.runs import RunResult
from spectui.core.bench.table import comparison_csv, render_comparison, render_runs, to_json
from spectui.core.errors import SpectuiError
from spectui.core.paths import user_data_dir

SCHEMA_VERSION = 1
FILENAME = "history.sqlite3"
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    host TEXT NOT NULL,
    started_at REAL,
    saved_at REAL NOT NULL,
    profile TEXT,
    profile_hash TEXT,
    preset TEXT,
    concurrency INTEGER,
    repeat INTEGER,
    engine TEXT,
    state TEXT NOT NULL,
    reason TEXT,
    comparison_key TEXT,
    data TEXT NOT NULL,
    UNIQUE (host, run_id)
);
CREATE TABLE IF NOT EXISTS comparisons (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT UNIQUE,
    created_at REAL NOT NULL,
    host TEXT,
    preset TEXT,
    baseline TEXT,
    profiles TEXT,
    state TEXT NOT NULL,
    data TEXT NOT NULL
);
"""
EXPORT_FORMATS = ("md", "csv", "json")


class HistoryError(SpectuiError):
    """A history id or file that does not exist or cannot be read (one sentence)."""


@dataclass(frozen=True)
class Entry:
    """A row of ``history list``."""

    id: str
    kind: str  # run | comparison
    when: float | None
    host: str
    what: str
    state: str
    detail: str


def default_path() -> Path:
    return user_data_dir() / FILENAME


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), allow_nan=True, default=str)


class HistoryStore:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(self._connect()) as db, db:
            db.executescript(SCHEMA)
            db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', ?)", (str(SCHEMA_VERSION),))

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(str(self.path), timeout=30)
        db.row_factory = sqlite3.Row
        return db

    # --- runs --------------------------------------------------------------------------------
    def save_run(self, run: RunResult | dict, comparison_key: str | None = None) -> int:
        """Insert or update (same host and run id) a run; returns its id."""
        d = run.to_dict() if isinstance(run, RunResult) else dict(run)
        d.pop("id", None)
        if comparison_key:
            d["comparison_key"] = comparison_key
        preset = (d.get("preset") or {}).get("name")
        values = (d["run_id"], d["host"], d.get("started_at"), time.time(), d.get("profile"), d.get("profile_hash"),
                  preset, d.get("concurrency"), d.get("repeat"), d.get("engine"), d["state"], d.get("reason"),
                  d.get("comparison_key"), _dumps(d))
        with closing(self._connect()) as db, db:
            row = db.execute("SELECT id FROM runs WHERE host = ? AND run_id = ?", (d["host"], d["run_id"])).fetchone()
            if row is None:
                cur = db.execute(
                    "INSERT INTO runs (run_id, host, started_at, saved_at, profile, profile_hash, preset, concurrency,"
                    " repeat, engine, state, reason, comparison_key, data) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", values)
                return int(cur.lastrowid)
            db.execute("UPDATE runs SET run_id=?, host=?, started_at=?, saved_at=?, profile=?, profile_hash=?, preset=?,"
                       " concurrency=?, repeat=?, engine=?, state=?, reason=?, comparison_key=?, data=? WHERE id=?",
                       values + (row["id"],))
            return int(row["id"])

    def has_run(self, host: str, run_id: str) -> bool:
        with closing(self._connect()) as db:
            return db.execute("SELECT 1 FROM runs WHERE host = ? AND run_id = ?", (host, run_id)).fetchone() is not None

    def run(self, run_id: int) -> dict:
        with closing(self._connect()) as db:
            row = db.execute("SELECT id, data FROM runs WHERE id = ?", (int(run_id),)).fetchone()
        if row is None:
            raise HistoryError(f"there is no run {run_id} in the history ({self.path}); see 'spectui history list'")
        return dict(json.loads(row["data"]), id=row["id"])

    def runs(self, *, limit: int | None = None, comparison_key: str | None = None) -> list[dict]:
        q = "SELECT id, data FROM runs"
        args: tuple = ()
        if comparison_key:
            q += " WHERE comparison_key = ?"
            args = (comparison_key,)
        q += " ORDER BY id"
        with closing(self._connect()) as db:
            rows = db.execute(q, args).fetchall()
        out = [dict(json.loads(r["data"]), id=r["id"]) for r in rows]
        return out[-limit:] if limit else out

    # --- comparisons -----------------------------------------------------------------------------
    def save_comparison(self, comp: dict, key: str | None = None) -> str:
        """Insert or update (same key) a comparison and link its runs; returns its id (``c3``)."""
        key = key or comp.get("key") or f"k{time.time_ns()}"
        d = dict(comp, key=key)
        d.pop("id", None)
        values = (key, d.get("created_at") or time.time(), d.get("host"), (d.get("preset") or {}).get("name"),
                  d.get("baseline"), ",".join(p["name"] for p in d.get("profiles") or []), d.get("state") or "complete",
                  _dumps(d))
        with closing(self._connect()) as db, db:
            row = db.execute("SELECT id FROM comparisons WHERE key = ?", (key,)).fetchone()
            if row is None:
                cur = db.execute("INSERT INTO comparisons (key, created_at, host, preset, baseline, profiles, state, data)"
                                 " VALUES (?,?,?,?,?,?,?,?)", values)
                cid = int(cur.lastrowid)
            else:
                cid = int(row["id"])
                db.execute("UPDATE comparisons SET key=?, created_at=?, host=?, preset=?, baseline=?, profiles=?, "
                           "state=?, data=? WHERE id=?", values + (cid,))
            for run_id in d.get("run_ids") or []:
                db.execute("UPDATE runs SET comparison_key = ? WHERE run_id = ? AND host = ?", (key, run_id, d.get("host")))
        return f"c{cid}"

    def comparison(self, cid: str | int) -> dict:
        n = str(cid).lstrip("cC")
        if not n.isdigit():
            raise HistoryError(f"{cid!r} is not a comparison id (c1, c2, ...)")
        with closing(self._connect()) as db:
            row = db.execute("SELECT id, data FROM comparisons WHERE id = ?", (int(n),)).fetchone()
        if row is None:
            raise HistoryError(f"there is no comparison c{n} in the history ({self.path}); see 'spectui history list'")
        return dict(json.loads(row["data"]), id=f"c{row['id']}")

    def comparisons(self) -> list[dict]:
        with closing(self._connect()) as db:
            rows = db.execute("SELECT id, data FROM comparisons ORDER BY id").fetchall()
        return [dict(json.loads(r["data"]), id=f"c{r['id']}") for r in rows]

    # --- reading ----------------------------------------------------------------------------------
    def get(self, ident: str) -> dict:
        """A run (``12``) or a comparison (``c3``) by id."""
        s = str(ident).strip()
        if s[:1] in ("c", "C"):
            return self.comparison(s)
        if not s.isdigit():
            raise HistoryError(f"{ident!r} is not a history id: runs are numbers (12), comparisons c and a number (c3)")
        return self.run(int(s))

    def entries(self, limit: int | None = None) -> list[Entry]:
        """Runs and comparisons, oldest first (the rows of ``history list``)."""
        out = []
        with closing(self._connect()) as db:
            for r in db.execute("SELECT id, data FROM runs").fetchall():
                d = json.loads(r["data"])
                s = d.get("stats") or {}
                acc = (s.get("accept_length") or {}).get("per_request")
                if acc is None:
                    acc = (s.get("accept_length") or {}).get("metrics")
                detail = f"{s['output_tok_s']:.1f} tok/s" if s.get("output_tok_s") is not None else "- tok/s"
                if acc is not None:
                    detail += f", accept {acc:.2f}"
                if s.get("errors"):
                    detail += f", {s['errors']} errors"
                what = f"{d.get('profile') or '?'} / {(d.get('preset') or {}).get('name') or '?'}"
                if d.get("concurrency") is not None:
                    what += f" c={d['concurrency']}"
                out.append(Entry(str(r["id"]), "run", d.get("started_at"), d.get("host") or "?", what,
                                 d.get("state") or "?", detail))
            for r in db.execute("SELECT id, data FROM comparisons").fetchall():
                d = json.loads(r["data"])
                names = ", ".join(p["name"] for p in d.get("profiles") or [])
                what = f"compare {names} / {(d.get('preset') or {}).get('name')}"
                state = "done" if d.get("state") == "complete" else d.get("state") or "?"
                out.append(Entry(f"c{r['id']}", "comparison", d.get("created_at"), d.get("host") or "?", what,
                                 state, f"{len(d.get('run_ids') or [])} runs, baseline {d.get('baseline')}"))
        out.sort(key=lambda e: (e.when or 0, e.kind, e.id))
        return out[-limit:] if limit else out

    # --- export / import -----------------------------------------------------------------------------
    def export(self, ids: list[str] | None = None, fmt: str = "md") -> str:
        """Runs and comparisons in Markdown (pastes into an issue), CSV or JSON (``import_json`` reads it back)."""
        if fmt not in EXPORT_FORMATS:
            raise HistoryError(f"unknown export format {fmt!r}: choose md, csv or json")
        items = [self.get(i) for i in ids] if ids else self.runs()
        comps = [i for i in items if i.get("kind") == "comparison"]
        runs = [i for i in items if i.get("kind") != "comparison"]
        if fmt == "json":
            return to_json({"kind": "spectui-history", "version": SCHEMA_VERSION, "runs": runs, "comparisons": comps})
        if fmt == "csv":
            if comps and runs:
                raise HistoryError("CSV holds one kind of table: export runs and comparisons separately")
            if comps:
                parts = [comparison_csv(c) for c in comps]
                return parts[0] + "".join(p.split("\n", 1)[1] for p in parts[1:])
            return render_runs(runs, "csv")
        sections = [f"### Comparison {c['id']}\n\n" + render_comparison(c, "markdown") for c in comps]
        if runs:
            sections.append(render_runs(runs, "markdown"))
        return "\n".join(sections)

    def import_json(self, text: str, source: str = "<json>") -> list[str]:
        """Save the runs and comparisons of a JSON export; returns their ids here."""
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise HistoryError(f"{source}: not JSON ({exc.msg} at line {exc.lineno})") from None
        if isinstance(doc, dict) and doc.get("kind") == "comparison":
            doc = {"runs": [], "comparisons": [doc]}
        if not isinstance(doc, dict) or not isinstance(doc.get("runs", []), list):
            raise HistoryError(f"{source}: not a spectui history export (no 'runs' list)")
        ids = []
        for r in doc.get("runs", []):
            if not isinstance(r, dict) or "run_id" not in r or "host" not in r or "state" not in r:
                raise HistoryError(f"{source}: a run lacks run_id, host or state")
            ids.append(str(self.save_run(r)))
        for c in doc.get("comparisons", []):
            ids.append(self.save_comparison(c, c.get("key")))
        return ids

    def import_results(self, results: list[RunResult]) -> list[str]:
        return [str(self.save_run(r)) for r in results]
