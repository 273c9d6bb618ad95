"""The history database's schema version, its migrations, and one sentence for every unusable file."""

import ctypes
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from spectui.cli.main import main
from spectui.core.history import SCHEMA_VERSION, HistoryError, HistoryStore

ROOT = Path(__file__).resolve().parents[2]

# The tables as the first release wrote them (no runs.overlapped_with, no user_version).
FIRST_RELEASE_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, host TEXT NOT NULL,
    started_at REAL, saved_at REAL NOT NULL, profile TEXT, profile_hash TEXT, preset TEXT, concurrency INTEGER,
    repeat INTEGER, engine TEXT, state TEXT NOT NULL, reason TEXT, comparison_key TEXT, data TEXT NOT NULL,
    UNIQUE (host, run_id));
CREATE TABLE comparisons (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT UNIQUE, created_at REAL NOT NULL,
    host TEXT, preset TEXT, baseline TEXT, profiles TEXT, state TEXT NOT NULL, data TEXT NOT NULL);
INSERT INTO meta VALUES ('schema', '1');
"""

RUN = {"run_id": "r1", "host": "gpu-a", "saved_at": 1.0, "profile": "base", "state": "done", "requests": []}


def user_version(path):
    with sqlite3.connect(path) as db:
        return db.execute("PRAGMA user_version").fetchone()[0]


def test_a_new_file_carries_the_schema_version(tmp_path):
    path = tmp_path / "history.sqlite3"
    HistoryStore(path)
    assert SCHEMA_VERSION == 2
    assert user_version(path) == 2


def test_a_first_release_file_is_migrated_and_keeps_its_runs(tmp_path):
    path = tmp_path / "history.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript(FIRST_RELEASE_SCHEMA)
        db.execute("INSERT INTO runs (run_id, host, saved_at, state, data) VALUES ('old', 'gpu-a', 5.0, 'done', "
                   "'{\"run_id\": \"old\", \"host\": \"gpu-a\", \"state\": \"done\"}')")
    store = HistoryStore(path)
    assert user_version(path) == 2
    with sqlite3.connect(path) as db:
        assert "overlapped_with" in {r[1] for r in db.execute("PRAGMA table_info(runs)")}
        assert db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == ("2",)
    assert store.has_run("gpu-a", "old")
    assert store.save_run(dict(RUN)) == 2


def test_an_up_to_date_read_only_file_is_read_and_a_save_is_one_sentence(tmp_path):
    path = tmp_path / "history.sqlite3"
    HistoryStore(path).save_run(dict(RUN))
    out = as_unprivileged(
        "from spectui.core.history import HistoryStore, HistoryError\n"
        "s = HistoryStore(sys.argv[1])\n"
        "print(len(s.entries()))\n"
        "try:\n"
        "    s.save_run({'run_id': 'r2', 'host': 'gpu-a', 'saved_at': 2.0, 'state': 'done'})\n"
        "except HistoryError as exc:\n"
        "    print(exc)\n", path, lambda: os.chmod(path, 0o444), lambda: os.chmod(tmp_path, 0o555))
    assert out.splitlines() == [
        "1",
        f"the history database {path} is read-only (attempt to write a readonly database); make it and its "
        "folder writable, or set SPECTUI_DATA_DIR to a writable folder"]


def test_a_file_from_a_newer_spectui_is_refused_unchanged(tmp_path):
    path = tmp_path / "history.sqlite3"
    HistoryStore(path)
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 7")
    before = path.read_bytes()
    with pytest.raises(HistoryError) as info:
        HistoryStore(path)
    assert str(info.value) == (f"{path} holds history schema 7, newer than the 2 this spectui reads; "
                               "upgrade spectui, or set SPECTUI_DATA_DIR to another folder")
    assert path.read_bytes() == before


def test_an_unversioned_file_whose_meta_says_newer_is_refused(tmp_path):
    path = tmp_path / "history.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); "
                         "INSERT INTO meta VALUES ('schema', '5');")
    with pytest.raises(HistoryError, match=r"holds history schema 5, newer than the 2"):
        HistoryStore(path)


def test_a_file_that_is_no_database_is_one_sentence(tmp_path):
    path = tmp_path / "history.sqlite3"
    path.write_bytes(b"these are not the pages of an SQLite file\n" * 200)
    with pytest.raises(HistoryError) as info:
        HistoryStore(path)
    assert str(info.value) == (f"{path} is not a usable history database (file is not a database); move it "
                               "aside (spectui then starts a new one) or restore it from a backup")


def test_a_truncated_file_is_one_sentence(tmp_path):
    path = tmp_path / "history.sqlite3"
    store = HistoryStore(path)
    for i in range(200):
        store.save_run(dict(RUN, run_id=f"r{i}", requests=[{"i": j, "text": "x" * 200} for j in range(20)]))
    size = path.stat().st_size
    assert size > 100_000
    with open(path, "r+b") as fh:
        fh.truncate(size // 3)
    with pytest.raises(HistoryError) as info:
        HistoryStore(path).entries()
    assert str(info.value) == (f"{path} is not a usable history database (database disk image is malformed); "
                               "move it aside (spectui then starts a new one) or restore it from a backup")


def test_a_folder_in_place_of_the_file_is_one_sentence(tmp_path):
    path = tmp_path / "history.sqlite3"
    path.mkdir()
    with pytest.raises(HistoryError) as info:
        HistoryStore(path)
    assert str(info.value) == (f"{path} is a folder where the history database should be; move it aside, "
                               "or set SPECTUI_DATA_DIR to another folder")


def test_an_unreadable_file_is_one_sentence(tmp_path):
    path = tmp_path / "history.sqlite3"
    HistoryStore(path)
    out = as_unprivileged(
        "from spectui.core.history import HistoryStore, HistoryError\n"
        "try:\n"
        "    HistoryStore(sys.argv[1])\n"
        "except HistoryError as exc:\n"
        "    print(exc)\n", path, lambda: os.chmod(path, 0))
    assert out.strip() == (f"cannot open the history database {path} (unable to open database file); check "
                           "that it and its folder are readable and writable, or set SPECTUI_DATA_DIR to "
                           "another folder")


def test_a_read_only_state_folder_is_one_sentence(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    path = data / "history.sqlite3"
    out = as_unprivileged(
        "from spectui.core.history import HistoryStore, HistoryError\n"
        "try:\n"
        "    HistoryStore(sys.argv[1])\n"
        "except HistoryError as exc:\n"
        "    print(exc)\n", path, lambda: os.chmod(data, 0o555))
    assert out.strip() == (f"cannot open the history database {path} (unable to open database file); check "
                           "that it and its folder are readable and writable, or set SPECTUI_DATA_DIR to "
                           "another folder")


def test_a_state_folder_that_cannot_be_made_is_one_sentence(tmp_path):
    blocker = tmp_path / "data"
    blocker.write_text("a file where the folder should be\n")
    with pytest.raises(HistoryError) as info:
        HistoryStore(blocker / "sub" / "history.sqlite3")
    assert str(info.value) == (f"cannot create the folder {blocker / 'sub'} for the history database (Not "
                               "a directory); make it writable, or set SPECTUI_DATA_DIR to another folder")


def test_the_history_command_prints_the_sentence_and_fails(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(tmp_path))
    (tmp_path / "history.sqlite3").write_bytes(b"\0" * 5000)
    assert main(["history", "list"]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith(f"spectui: {tmp_path / 'history.sqlite3'} is not a usable history database")
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err


# -- running without the privileges that would bypass file permissions ------------------------

def _drop_capabilities():  # in the child, before exec: root then keeps its uid but loses CAP_DAC_*
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(64):
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP; unknown numbers fail harmlessly


def as_unprivileged(code, path, *restrict):
    """Run ``code`` (``sys.argv[1]`` is ``path``) in a child for which file permissions hold, after
    ``restrict`` (chmod calls) is applied; permissions are restored afterwards. Returns its stdout."""
    for fn in restrict:
        fn()
    try:
        r = subprocess.run([sys.executable, "-c", "import sys\n" + code, str(path)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60,
                           preexec_fn=_drop_capabilities if os.geteuid() == 0 else None,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)))
    finally:
        for p in (path, path.parent):
            if p.exists():
                os.chmod(p, 0o755 if p.is_dir() else 0o644)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    return r.stdout
