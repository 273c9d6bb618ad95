"""Benchmark history: every run, comparison and probe result, kept in SQLite in the user's data folder.

``<data>/history.sqlite3`` (``spectui.core.paths.user_data_dir()``, ``$SPECTUI_DATA_DIR`` in
tests). A run is saved as soon as it ends, finished or not: its ``state`` says ``done``,
``interrupted`` or ``failed``. Each keeps its provenance: host, GPU names, SGLang version, the
profile's content (env values redacted) and hash, the launch argv (secret flags redacted),
the preset, spectui's version, and every per-request record.

Probe results (``spectui probe``, ``p`` in the console) are kept too, as the JSON-ready records
``spectui.core.probe.history_record`` builds (schema ``spectui.history.probe/1``): what was
measured or modelled, how (backend, versions, hardware model), on which host and for which
profile (name and content hash), and the L* it predicts.

Ids: runs are numbers (``12``), comparisons ``c`` and a number (``c3``), probes ``p`` and a
number (``p2``).

A run that shared its server with another run (``--allow-overlap``) keeps the other runs' host
run ids in ``overlapped_with`` (in its data, and in the ``runs.overlapped_with`` column, which
a history file made before the column existed gains when it is opened); lists, tables and
exports mark it. A run measured beside requests spectui did not send keeps its ``foreign_load`` (the
share of the server's tokens and requests that were not its own) in its data; lists, tables and
exports mark it too. A run saved before spectui measured it has none (not measured), and no mark.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spectui.core.errors import SpectuiError
from spectui.core.paths import user_data_dir

if TYPE_CHECKING:
    from spectui.core.bench.runs import RunResult

# the benchmark modules (runs, tables, presets and their YAML) load where a run is saved, listed, exported or
# imported: the console reads its profiles' earlier probes at start without them

# The file's schema, kept in its header (``PRAGMA user_version``): 1 the first release's tables,
# 2 with ``runs.overlapped_with``. A file with 0 is new, or was written before the version was kept
# there (its ``meta`` table says which): its tables are made or completed. ``MIGRATIONS[n]`` takes
# a file from version n to n + 1; a file newer than this spectui is refused, never changed.
SCHEMA_VERSION = 2
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
    overlapped_with TEXT,
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
CREATE TABLE IF NOT EXISTS probes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    host TEXT,
    profile TEXT,
    profile_hash TEXT,
    measured_at REAL,
    recorded_at REAL NOT NULL,
    kind TEXT,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS probes_by_profile ON probes (host, profile);
"""
PROBE_KIND = "probe"  # the ``kind`` of a probe history record (spectui.core.probe.RECORD_KIND)
EXPORT_FORMATS = ("md", "csv", "json")


class HistoryError(SpectuiError):
    """A history id or file that does not exist or cannot be read (one sentence)."""


#: an import's line names this many ids of each kind; the others are counted
IDS_NAMED = 10


def _ids(ids: list[str]) -> str:
    named = ", ".join(ids[:IDS_NAMED])
    return named + (f" and {len(ids) - IDS_NAMED:,} more (spectui history list)" if len(ids) > IDS_NAMED else "")


@dataclass
class ImportOutcome:
    """What an import did: the history ids of the runs it ``added``, and of those already ``present``."""

    added: list[str]
    present: list[str]

    def sentence(self, what: str, source: str) -> str:
        """One line for the operator: ``imported N entries from WHAT in SOURCE: ids``, at most
        :data:`IDS_NAMED` ids of each kind, and the runs that were already there."""
        n = len(self.added)
        text = f"imported {'no entry' if n == 0 else f'{n} entr' + ('y' if n == 1 else 'ies')} from {what} in {source}"
        if self.added:
            text += ": " + _ids(self.added)
        k = len(self.present)
        if k:
            runs = f"run {self.present[0]} (left as it was)" if k == 1 else f"runs {_ids(self.present)} (left as they were)"
            if not self.added:
                text += (": the run is" if k == 1 else f": its {k} runs are") + f" already in the history as {runs}"
            else:
                text += f"; {k} run{' was' if k == 1 else 's were'} already in the history as {runs}"
        return text


@dataclass(frozen=True)
class Entry:
    """A row of ``history list``."""

    id: str
    kind: str  # run | comparison | probe
    when: float | None
    host: str
    what: str
    state: str
    detail: str
    overlapped_with: tuple[str, ...] = ()  # the other runs (history ids where known, else host run ids)


# Columns added after the first release, with their type: a history file made before gains them at open.
ADDED_RUN_COLUMNS = (("overlapped_with", "TEXT"),)


def _add_missing_columns(db: sqlite3.Connection) -> None:
    have = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    for name, kind in ADDED_RUN_COLUMNS:
        if name in have:
            continue
        try:
            db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
        except sqlite3.OperationalError as exc:  # another process added it meanwhile
            if "duplicate column" not in str(exc):
                raise


def _add_overlapped_with(db: sqlite3.Connection) -> None:
    _add_missing_columns(db)


MIGRATIONS = {1: _add_overlapped_with}


def _meta_schema(db: sqlite3.Connection) -> int | None:
    """The version an unversioned file's ``meta`` table records (None: no such table or row)."""
    if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() is None:
        return None
    row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    try:
        return int(row[0]) if row is not None else None
    except (TypeError, ValueError):
        return None


def default_path() -> Path:
    return user_data_dir() / FILENAME


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), allow_nan=True, default=str)


class HistoryStore:
    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_path()
        if self.path.is_dir():
            raise HistoryError(f"{self.path} is a folder where the history database should be; move it aside, "
                               "or set SPECTUI_DATA_DIR to another folder")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HistoryError(f"cannot create the folder {self.path.parent} for the history database "
                               f"({exc.strerror or exc}); make it writable, or set SPECTUI_DATA_DIR to "
                               "another folder") from None
        with self._open() as db:
            self._migrate(db)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(str(self.path), timeout=30)
        db.row_factory = sqlite3.Row
        return db

    @contextmanager
    def _open(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection; with ``write``, one transaction. SQLite's errors leave as one ``HistoryError``."""
        try:
            db = self._connect()
        except sqlite3.Error as exc:
            raise self._unusable(exc) from None
        try:
            if write:
                with db:
                    yield db
            else:
                yield db
        except sqlite3.Error as exc:
            raise self._unusable(exc) from None
        finally:
            db.close()

    def _unusable(self, exc: sqlite3.Error) -> HistoryError:
        text = str(exc)
        if "readonly" in text:
            return HistoryError(f"the history database {self.path} is read-only ({text}); make it and its folder "
                                "writable, or set SPECTUI_DATA_DIR to a writable folder")
        if "unable to open" in text:
            return HistoryError(f"cannot open the history database {self.path} ({text}); check that it and its "
                                "folder are readable and writable, or set SPECTUI_DATA_DIR to another folder")
        if "locked" in text or "busy" in text:
            return HistoryError(f"the history database {self.path} is locked by another program ({text}); "
                                "try again once it is done")
        return HistoryError(f"{self.path} is not a usable history database ({text}); move it aside (spectui "
                            "then starts a new one) or restore it from a backup")

    def _future(self, version: int) -> HistoryError:
        return HistoryError(f"{self.path} holds history schema {version}, newer than the {SCHEMA_VERSION} this "
                            "spectui reads; upgrade spectui, or set SPECTUI_DATA_DIR to another folder")

    def _migrate(self, db: sqlite3.Connection) -> None:
        """Bring the file to ``SCHEMA_VERSION`` (one transaction); a file already there is not written."""
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise self._future(version)
        db.isolation_level = None  # the transaction is ours: BEGIN IMMEDIATE holds off another migration
        db.execute("BEGIN IMMEDIATE")
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise self._future(version)
            if version == 0:
                recorded = _meta_schema(db)
                if recorded is not None and recorded > SCHEMA_VERSION:
                    raise self._future(recorded)
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                _add_missing_columns(db)
            else:
                for step in range(version, SCHEMA_VERSION):
                    MIGRATIONS[step](db)
            db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(SCHEMA_VERSION),))
            db.execute(f"PRAGMA user_version = {int(SCHEMA_VERSION)}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    # --- runs --------------------------------------------------------------------------------
    def save_run(self, run: RunResult | dict, comparison_key: str | None = None) -> int:
        """Insert or update (same host and run id) a run; returns its id."""
        with self._open(write=True) as db:
            return self._save_run(db, run, comparison_key)

    @staticmethod
    def _save_run(db: sqlite3.Connection, run: RunResult | dict, comparison_key: str | None = None) -> int:
        from spectui.core.bench.runs import RunResult

        d = run.to_dict() if isinstance(run, RunResult) else dict(run)
        d.pop("id", None)
        if comparison_key:
            d["comparison_key"] = comparison_key
        preset = (d.get("preset") or {}).get("name")
        overlapped = ",".join(d.get("overlapped_with") or []) or None
        values = (d["run_id"], d["host"], d.get("started_at"), time.time(), d.get("profile"), d.get("profile_hash"),
                  preset, d.get("concurrency"), d.get("repeat"), d.get("engine"), d["state"], d.get("reason"),
                  d.get("comparison_key"), _dumps(d), overlapped)
        row = db.execute("SELECT id FROM runs WHERE host = ? AND run_id = ?", (d["host"], d["run_id"])).fetchone()
        if row is None:
            cur = db.execute(
                "INSERT INTO runs (run_id, host, started_at, saved_at, profile, profile_hash, preset, concurrency,"
                " repeat, engine, state, reason, comparison_key, data, overlapped_with)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", values)
            return int(cur.lastrowid)
        db.execute("UPDATE runs SET run_id=?, host=?, started_at=?, saved_at=?, profile=?, profile_hash=?, preset=?,"
                   " concurrency=?, repeat=?, engine=?, state=?, reason=?, comparison_key=?, data=?,"
                   " overlapped_with=? WHERE id=?", values + (row["id"],))
        return int(row["id"])

    def refs(self) -> dict[tuple[str, str], str]:
        """{(host, host run id): history id} of every run kept: to name an overlapped run's other runs."""
        with self._open() as db:
            return {(r["host"], r["run_id"]): str(r["id"]) for r in db.execute("SELECT id, host, run_id FROM runs")}

    def overlapped(self) -> list[dict]:
        """The runs marked overlapped (another run measured the same server meanwhile), oldest first."""
        with self._open() as db:
            rows = db.execute("SELECT id, data FROM runs WHERE overlapped_with IS NOT NULL ORDER BY id").fetchall()
        return [dict(json.loads(r["data"]), id=r["id"]) for r in rows]

    def has_run(self, host: str, run_id: str) -> bool:
        with self._open() as db:
            return db.execute("SELECT 1 FROM runs WHERE host = ? AND run_id = ?", (host, run_id)).fetchone() is not None

    def run(self, run_id: int) -> dict:
        with self._open() as db:
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
        with self._open() as db:
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
        with self._open(write=True) as db:
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
        with self._open() as db:
            row = db.execute("SELECT id, data FROM comparisons WHERE id = ?", (int(n),)).fetchone()
        if row is None:
            raise HistoryError(f"there is no comparison c{n} in the history ({self.path}); see 'spectui history list'")
        return dict(json.loads(row["data"]), id=f"c{row['id']}")

    def comparisons(self) -> list[dict]:
        with self._open() as db:
            rows = db.execute("SELECT id, data FROM comparisons ORDER BY id").fetchall()
        return [dict(json.loads(r["data"]), id=f"c{r['id']}") for r in rows]

    # --- probes -----------------------------------------------------------------------------------
    def save_probe(self, record: dict) -> str:
        """Keep a probe record (``spectui.core.probe.history_record``); returns its id (``p2``).

        The same record saved again (same host, profile and recording time: an import of an
        export, say) updates the one kept instead of adding another.
        """
        if not isinstance(record, dict) or record.get("kind") != PROBE_KIND:
            raise HistoryError("a probe history record has kind 'probe' (see spectui.core.probe.history_record)")
        d = dict(record)
        d.pop("id", None)
        recorded = d.get("recorded_at")
        if not isinstance(recorded, (int, float)):
            recorded = d["recorded_at"] = time.time()
        prov = d.get("provenance") or {}
        values = (d.get("host"), d.get("profile"), d.get("profile_hash"), d.get("measured_at"), float(recorded),
                  prov.get("kind"), _dumps(d))
        with self._open(write=True) as db:
            row = db.execute("SELECT id FROM probes WHERE host IS ? AND profile IS ? AND recorded_at = ?",
                             (d.get("host"), d.get("profile"), float(recorded))).fetchone()
            if row is None:
                cur = db.execute("INSERT INTO probes (host, profile, profile_hash, measured_at, recorded_at, kind, data)"
                                 " VALUES (?,?,?,?,?,?,?)", values)
                return f"p{int(cur.lastrowid)}"
            db.execute("UPDATE probes SET host=?, profile=?, profile_hash=?, measured_at=?, recorded_at=?, kind=?, "
                       "data=? WHERE id=?", values + (row["id"],))
            return f"p{int(row['id'])}"

    def probe(self, pid: str | int) -> dict:
        n = str(pid).strip().lstrip("pP")
        if not n.isdigit():
            raise HistoryError(f"{pid!r} is not a probe id (p1, p2, ...)")
        with self._open() as db:
            row = db.execute("SELECT id, data FROM probes WHERE id = ?", (int(n),)).fetchone()
        if row is None:
            raise HistoryError(f"there is no probe p{n} in the history ({self.path}); see 'spectui history list'")
        return dict(json.loads(row["data"]), id=f"p{row['id']}")

    def probes(self, host: str | None = None, profile: str | None = None) -> list[dict]:
        """Probe records, oldest first; only ``host``'s and ``profile``'s when given."""
        q, args = "SELECT id, data FROM probes", []
        where = []
        if host is not None:
            where.append("host = ?")
            args.append(host)
        if profile is not None:
            where.append("profile = ?")
            args.append(profile)
        if where:
            q += " WHERE " + " AND ".join(where)
        q += " ORDER BY COALESCE(measured_at, recorded_at), recorded_at, id"
        with self._open() as db:
            rows = db.execute(q, args).fetchall()
        return [dict(json.loads(r["data"]), id=f"p{r['id']}") for r in rows]

    def latest_probe(self, host: str, profile: str, profile_hash: str | None = None) -> dict | None:
        """The newest probe of ``profile`` on ``host``; with ``profile_hash``, only one made for that
        exact profile content (a changed profile may verify a different number of tokens)."""
        found = [p for p in self.probes(host, profile)
                 if profile_hash is None or p.get("profile_hash") in (None, profile_hash)]
        return found[-1] if found else None

    # --- reading ----------------------------------------------------------------------------------
    def get(self, ident: str) -> dict:
        """A run (``12``) or a comparison (``c3``) by id (a probe, ``p2``: :meth:`probe`)."""
        s = str(ident).strip()
        if s[:1] in ("c", "C"):
            return self.comparison(s)
        if s[:1] in ("p", "P") and s[1:].isdigit():
            self.probe(s)  # a probe id that does not exist says so
            raise HistoryError(f"{s} is a probe result: 'spectui history export {s}' prints it (Markdown, or "
                               f"--format json)")
        if not s.isdigit():
            raise HistoryError(f"{ident!r} is not a history id: runs are numbers (12), comparisons c and a number "
                               f"(c3), probes p and a number (p2)")
        return self.run(int(s))

    def entries(self, limit: int | None = None) -> list[Entry]:
        """Runs, comparisons and probes, oldest first (the rows of ``history list``); those of one time,
        or of none (an sglang import keeps no start time), by kind and then by number (2 before 10)."""
        from spectui.core.bench.table import FOREIGN_MARK, OVERLAP_MARK

        out = []
        refs = self.refs()
        with self._open() as db:
            for r in db.execute("SELECT id, host, data, overlapped_with FROM runs").fetchall():
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
                others = tuple(refs.get((r["host"], o), o) for o in (r["overlapped_with"] or "").split(",") if o)
                if others:
                    runs = f"run{'s' if len(others) > 1 else ''} {', '.join(others)}"
                    detail += f", {OVERLAP_MARK} overlapped with {runs}"
                load = d.get("foreign_load") or {}
                if load.get("marked"):
                    detail += f", {FOREIGN_MARK} {100 * load['share']:.1f}% foreign load"
                out.append(Entry(str(r["id"]), "run", d.get("started_at"), d.get("host") or "?", what,
                                 d.get("state") or "?", detail, others))
            for r in db.execute("SELECT id, data FROM comparisons").fetchall():
                d = json.loads(r["data"])
                names = ", ".join(p["name"] for p in d.get("profiles") or [])
                what = f"compare {names} / {(d.get('preset') or {}).get('name')}"
                state = "done" if d.get("state") == "complete" else d.get("state") or "?"
                out.append(Entry(f"c{r['id']}", "comparison", d.get("created_at"), d.get("host") or "?", what,
                                 state, f"{len(d.get('run_ids') or [])} runs, baseline {d.get('baseline')}"))
            for r in db.execute("SELECT id, data FROM probes").fetchall():
                d = json.loads(r["data"])
                out.append(Entry(f"p{r['id']}", "probe", d.get("measured_at") or d.get("recorded_at"),
                                 d.get("host") or "?", probe_what(d), probe_state(d), probe_detail(d)))
        out.sort(key=_entry_order)
        return out[-limit:] if limit else out

    # --- export / import -----------------------------------------------------------------------------
    def export(self, ids: list[str] | None = None, fmt: str = "md") -> str:
        """Runs and comparisons in Markdown (pastes into an issue), CSV or JSON (``import_json`` reads it back)."""
        from spectui.core.bench.table import comparison_csv, render_comparison, render_runs, to_json

        if fmt not in EXPORT_FORMATS:
            raise HistoryError(f"unknown export format {fmt!r}: choose md, csv or json")
        items = [self.probe(i) if _is_probe_id(i) else self.get(i) for i in ids] if ids else self.runs()
        comps = [i for i in items if i.get("kind") == "comparison"]
        probes = [i for i in items if i.get("kind") == PROBE_KIND]
        runs = [i for i in items if i.get("kind") not in ("comparison", PROBE_KIND)]
        if fmt == "json":
            return to_json({"kind": "spectui-history", "version": SCHEMA_VERSION, "runs": runs, "comparisons": comps,
                            "probes": probes})
        if fmt == "csv":
            if sum(1 for kind in (runs, comps, probes) if kind) > 1:
                raise HistoryError("CSV holds one kind of table: export runs, comparisons and probes separately")
            if comps:
                parts = [comparison_csv(c) for c in comps]
                return parts[0] + "".join(p.split("\n", 1)[1] for p in parts[1:])
            if probes:
                return render_probes(probes, "csv")
            return render_runs(runs, "csv")
        sections = [f"### Comparison {c['id']}\n\n" + render_comparison(c, "markdown") for c in comps]
        if runs:
            sections.append(render_runs(runs, "markdown", refs=self.refs()))
        if probes:
            sections.append("### Verify-cost probes\n\n" + render_probes(probes, "markdown"))
        return "\n".join(sections)

    def import_json(self, text: str, source: str = "<json>") -> list[str]:
        """Save the runs and comparisons of a JSON export; returns their ids here."""
        from spectui.core.bench.sglang_import import check_import_size

        check_import_size(text, source)
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise HistoryError(f"{source}: not JSON ({exc.msg} at line {exc.lineno})") from None
        if isinstance(doc, dict) and doc.get("kind") == "comparison":
            doc = {"runs": [], "comparisons": [doc]}
        if isinstance(doc, dict) and doc.get("kind") == PROBE_KIND:
            doc = {"runs": [], "probes": [doc]}
        if not isinstance(doc, dict) or not isinstance(doc.get("runs", []), list):
            raise HistoryError(f"{source}: not a spectui history export (no 'runs' list)")
        ids = []
        for r in doc.get("runs", []):
            if not isinstance(r, dict) or "run_id" not in r or "host" not in r or "state" not in r:
                raise HistoryError(f"{source}: a run lacks run_id, host or state")
            ids.append(str(self.save_run(r)))
        for c in doc.get("comparisons", []):
            ids.append(self.save_comparison(c, c.get("key")))
        for p in doc.get("probes", []) or []:
            if not isinstance(p, dict) or p.get("kind") != PROBE_KIND:
                raise HistoryError(f"{source}: an entry of 'probes' is not a probe record (kind 'probe')")
            ids.append(self.save_probe(p))
        return ids

    def import_runs(self, results: list[RunResult]) -> ImportOutcome:
        """Keep the imported runs that are not in the history yet, in one transaction. A run whose id is
        there already (an imported run's id is a hash of what the tool wrote, whatever the host label) is
        left as it was: importing the same output again, under another profile or host, changes nothing."""
        outcome = ImportOutcome([], [])
        wanted = {r.run_id for r in results}
        with self._open(write=True) as db:
            kept: dict[str, str] = {}
            for row in db.execute("SELECT id, run_id FROM runs ORDER BY id DESC"):  # one pass, however many runs
                if row["run_id"] in wanted:
                    kept[row["run_id"]] = str(row["id"])  # the first one kept, where several hosts have it
            present = set(kept.values())
            for r in results:
                if r.run_id not in kept:
                    kept[r.run_id] = str(self._save_run(db, r))
                    outcome.added.append(kept[r.run_id])
                elif kept[r.run_id] in present and kept[r.run_id] not in outcome.present:
                    outcome.present.append(kept[r.run_id])
        return outcome

    def import_results(self, results: list[RunResult]) -> list[str]:
        """The ids of the runs :meth:`import_runs` added."""
        return self.import_runs(results).added


# ---------------------------------------------------------------------------------------------
# Probe records, for lists and exports
# ---------------------------------------------------------------------------------------------

def _entry_order(e: Entry) -> tuple[float, str, int, str]:
    """Oldest first; then by kind, and the id's number as a number (``c2`` before ``c10``)."""
    digits = e.id.lstrip("cCpP")
    return (e.when or 0, e.kind, int(digits) if digits.isdigit() else -1, e.id)


def _is_probe_id(ident: str) -> bool:
    s = str(ident).strip()
    return s[:1] in ("p", "P") and s[1:].isdigit()


def probe_how(d: dict) -> str:
    """How a probe's numbers were obtained, in a few words."""
    prov = d.get("provenance") or {}
    if prov.get("kind") == "sim-hardware-model":
        return f"simulator's hardware model ({prov.get('preset') or '?'})"
    bits = [f"measured, {prov.get('backend') or '?'} on {prov.get('device') or '?'}"]
    if prov.get("world_size"):
        bits.append(f"{prov['world_size']} ranks")
    if prov.get("torch"):
        bits.append(f"torch {prov['torch']}")
    if prov.get("nccl"):
        bits.append(f"NCCL {prov['nccl']}")
    return ", ".join(bits)


def probe_state(d: dict) -> str:
    kind = (d.get("provenance") or {}).get("kind")
    return {"measured": "measured", "sim-hardware-model": "modelled"}.get(kind, kind or "?")


def probe_what(d: dict) -> str:
    what = f"probe {d.get('profile') or '(no profile)'}"
    if d.get("interconnect"):
        what += f" on {d['interconnect']}"
    return what


def probe_detail(d: dict) -> str:
    row = d.get("profile_l_star") or {}
    if row.get("predicted") is not None:
        text = f"L* {row['predicted']:.2f}"
        if row.get("comm_only") is not None:
            text += f" (comm-only {row['comm_only']:.2f})"
        return text
    if row.get("extra_comm_ms") is not None:
        return f"+{row['extra_comm_ms']:.2f} ms all-reduce per verify step (no decode step time: no L*)"
    return "no speculative settings: no L*"


PROBE_FIELDS = ("id", "when", "host", "profile", "profile_hash", "how", "interconnect", "model", "world_size",
                "decode_step_ms", "verify_tokens", "extra_comm_ms", "l_star_predicted", "l_star_comm_only",
                "reachable")


def probe_row(d: dict) -> dict:
    row = d.get("profile_l_star") or {}
    pred = d.get("prediction") or {}
    return {
        "id": d.get("id"), "when": _when(d.get("measured_at") or d.get("recorded_at")), "host": d.get("host"),
        "profile": d.get("profile"), "profile_hash": d.get("profile_hash"), "how": probe_how(d),
        "interconnect": d.get("interconnect"), "model": (d.get("model") or {}).get("model"),
        "world_size": (d.get("allreduce") or {}).get("world_size"), "decode_step_ms": pred.get("decode_step_ms"),
        "verify_tokens": row.get("draft_tokens"), "extra_comm_ms": row.get("extra_comm_ms"),
        "l_star_predicted": row.get("predicted"), "l_star_comm_only": row.get("comm_only"),
        "reachable": row.get("reachable"),
    }


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


def render_probes(probes: list[dict], fmt: str = "markdown") -> str:
    """Probe records as a Markdown table (with their provenance) or CSV."""
    rows = [probe_row(p) for p in probes]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(PROBE_FIELDS), lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: "" if r.get(k) is None else r[k] for k in PROBE_FIELDS})
        return buf.getvalue()

    def num(v, nd):
        return "-" if v is None else f"{v:.{nd}f}"

    head = ["id", "when", "host", "profile", "GPUs", "how", "decode step ms", "verify tokens", "+all-reduce ms",
            "L* predicted", "L* comm-only"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        cells = [r["id"] or "-", r["when"], r["host"] or "-", r["profile"] or "-", r["interconnect"] or "-", r["how"],
                 num(r["decode_step_ms"], 2), "-" if r["verify_tokens"] is None else str(r["verify_tokens"]),
                 num(r["extra_comm_ms"], 2), num(r["l_star_predicted"], 2), num(r["l_star_comm_only"], 2)]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    notes = ["- L* predicted: the accept length at which speculation breaks even, from the probe's all-reduce "
             "latencies (and drafting and compute where known); L* comm-only: its lower bound from communication "
             "alone (docs/probe.md)"]
    return "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n"
