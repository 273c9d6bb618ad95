"""The history store and its exports: JSON, CSV and Markdown round-trip."""

import csv
import io
import json

import pytest

from spectui.cli.main import main
from spectui.core.bench.compare import build_comparison
from spectui.core.bench.presets import Preset
from spectui.core.bench.runs import RunResult
from spectui.core.bench.stats import run_stats
from spectui.core.bench.table import parse_markdown_table, run_row
from spectui.core.history import HistoryError, HistoryStore

PRESET = Preset(name="p", dataset="reasoning", input_len=10, output_len=5, num_prompts=2, concurrency=(1,), repeats=2)


def fake_run(run_id, profile, tok_per_req, *, accept=None, state="done", repeat=1):
    recs = []
    for i in range(2):
        spec = {"verify_ct": 4, "accept_length": accept, "correct_drafts": 4, "proposed_drafts": 12,
                "histogram": [1, 2, 1, 0]} if accept else None
        recs.append({"i": i, "ok": True, "t_start": 100.0 + i, "ttft_ms": 20.0, "e2e_ms": 1000.0 / tok_per_req * 5,
                     "output_tokens": 5, "first_chunk_tokens": 1, "itl_ms": [10.0, 12.5], "chunk_tokens": [2, 2],
                     "prompt_tokens": 10, "spec": spec})
    stats = run_stats(recs, {"duration_s": 2 * 5 / tok_per_req}, draft_tokens=4 if accept else None,
                      speculative=bool(accept))
    return RunResult(run_id=run_id, host="h1", state=state, reason=None if state == "done" else "cancelled",
                     profile=profile, profile_hash="ab" * 32, profile_content={"name": profile, "env": {"T": "<redacted>"}},
                     launch_argv=["python3", "-m", "sglang.launch_server", "--api-key", "<redacted>"],
                     preset=PRESET.to_dict(), concurrency=1, repeat=repeat, started_at=1_700_000_000.0 + repeat,
                     gpus=["GPU X"] * 2, sglang_version="0.5.23",
                     speculative={"algorithm": "EAGLE3", "draft_tokens": 4} if accept else None,
                     stats=stats, summary={"duration_s": 1.0}, records=recs)


@pytest.fixture
def store(env):
    s = HistoryStore()
    runs = [fake_run("r1", "base", 80.0), fake_run("r2", "base", 82.0, repeat=2),
            fake_run("r3", "spec", 60.0, accept=2.0), fake_run("r4", "spec", 58.0, accept=2.0, repeat=2, state="interrupted")]
    for r in runs:
        s.save_run(r)
    comp = build_comparison(runs, profiles=["base", "spec"], baseline="base", preset=PRESET, host="h1")
    s.save_comparison(comp, "key1")
    return s


def test_runs_keep_provenance_and_state(store):
    r = store.run(4)
    assert r["state"] == "interrupted" and r["reason"] == "cancelled"
    assert r["profile_content"]["env"] == {"T": "<redacted>"} and r["launch_argv"][-1] == "<redacted>"
    assert r["gpus"] == ["GPU X", "GPU X"] and r["sglang_version"] == "0.5.23" and r["spectui_version"]
    assert r["preset"]["name"] == "p" and len(r["records"]) == 2
    kinds = [(e.id, e.state) for e in store.entries()]
    assert ("4", "interrupted") in kinds and ("c1", "done") in kinds
    with pytest.raises(HistoryError, match="no run 99"):
        store.get("99")
    with pytest.raises(HistoryError, match="not a history id"):
        store.get("x1")


def test_json_export_round_trips(store, tmp_path, monkeypatch):
    text = store.export(["1", "2", "3", "4", "c1"], "json")
    monkeypatch.setenv("SPECTUI_DATA_DIR", str(tmp_path / "other"))
    other = HistoryStore()
    ids = other.import_json(text)
    assert ids == ["1", "2", "3", "4", "c1"]
    assert other.export(ids, "json") == text


def test_csv_export_round_trips(store):
    rows = list(csv.DictReader(io.StringIO(store.export(["1", "2", "3", "4"], "csv"))))
    originals = [run_row(store.run(i)) for i in (1, 2, 3, 4)]
    assert len(rows) == 4
    for got, want in zip(rows, originals):
        assert got["run_id"] == want["run_id"] and got["state"] == want["state"]
        assert float(got["out_tok_s"]) == pytest.approx(want["out_tok_s"])
        assert (got["accept_length_per_request"] == "") == (want["accept_length_per_request"] is None)
    comp_rows = list(csv.DictReader(io.StringIO(store.export(["c1"], "csv"))))
    assert [r["profile"] for r in comp_rows] == ["base", "spec"]
    assert float(comp_rows[1]["speedup"]) == pytest.approx(store.get("c1")["profiles"][1]["cells"]["1"]["speedup"])
    with pytest.raises(HistoryError, match="separately"):
        store.export(["1", "c1"], "csv")


def test_markdown_export_round_trips_to_the_same_cells(store):
    md = store.export(["1", "2", "3", "4"], "md")
    table = parse_markdown_table(md)
    head, body = table[0], table[1:]
    assert head[:4] == ["id", "when", "host", "profile"]
    assert [r[0] for r in body] == ["1", "2", "3", "4"]
    assert [r[6] for r in body] == ["done", "done", "done", "interrupted"]
    assert body[2][8] == "2.00" and body[0][8] == "-"
    assert body[0][7] == f"{store.run(1)['stats']['output_tok_s']:.1f}"
    comp_md = store.export(["c1"], "md")
    ctable = parse_markdown_table(comp_md)
    assert [r[0] for r in ctable[1:]] == ["base", "spec"]
    assert "accept rate: correct drafts / proposed drafts" in comp_md


def test_cli_list_show_export(store, capsys, tmp_path):
    assert main(["history", "list"]) == 0
    out = capsys.readouterr().out
    assert "interrupted" in out and "c1" in out and "compare base, spec" in out
    assert main(["history", "show", "3"]) == 0
    out = capsys.readouterr().out
    assert "accept length 2.000 per request" in out and "correct drafts / proposed drafts" in out
    assert main(["history", "show", "c1"]) == 0
    assert "SPEEDUP" in capsys.readouterr().out
    target = tmp_path / "out.json"
    assert main(["history", "export", "--format", "json", "-o", str(target), "1", "c1"]) == 0
    doc = json.loads(target.read_text())
    assert [r["run_id"] for r in doc["runs"]] == ["r1"] and doc["comparisons"][0]["id"] == "c1"
    assert main(["history", "show", "77"]) == 1
    assert "no run 77" in capsys.readouterr().err
