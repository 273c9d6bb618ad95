"""``spectui history import`` of SGLang's bench_serving output: figures out of range refused, the same run
imported twice kept once and as it was, and a paste too large refused before it is read into runs.

The inputs are the real fixtures (see tests/fixtures/real/bench_serving/README.md and
tests/bench/fixtures/README.md), changed where a test needs a bad figure.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spectui.cli.main import main
from spectui.core.bench.sglang_import import (IMPORT_LIMIT_BYTES, SglangImportError, detect_format,
                                              parse_printed_blocks, parse_sglang_jsonl, results_from_printed)
from spectui.core.history import HistoryStore, ImportOutcome

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "bench_serving"
EAGLE = REAL / "pr-9588-sglang-0.5-eagle-accept-length.txt"
TWO_BLOCKS = REAL / "cookbook-kimi-k2.5-sglang-0.5.6-two-blocks.md"
JSONL = Path(__file__).parent / "fixtures" / "sglang_serving.jsonl"


def printed(old: str, new: str) -> str:
    text = EAGLE.read_text(encoding="utf-8")
    assert old in text
    return text.replace(old, new)


def jsonl_with(**changes) -> str:
    first, second = JSONL.read_text().splitlines()
    row = json.loads(first)
    row.update(changes)
    return json.dumps(row) + "\n" + second + "\n"


def refused(env, capsys, tmp_path, text: str) -> str:
    f = tmp_path / "bench.txt"
    f.write_text(text, encoding="utf-8")
    assert main(["history", "import", str(f)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(f) in err and "Traceback" not in err, err
    assert HistoryStore().runs() == []  # nothing of the file was kept
    return err


@pytest.mark.parametrize("old, new, names", [
    ("Successful requests:                     200", "Successful requests:                     -200",
     ("'Successful requests'", "-200")),
    ("Accept length:                           3.46", "Accept length:                           -3.46",
     ("'Accept length'", "-3.46")),
    ("Mean TTFT (ms):                          31.66", "Mean TTFT (ms):                          -31.66",
     ("'Mean TTFT (ms)'", "-31.66")),
    ("Benchmark duration (s):                  40.23", "Benchmark duration (s):                  -1",
     ("'Benchmark duration (s)'", "-1")),
    ("Max request concurrency:                 4 ", "Max request concurrency:                 0 ",
     ("'Max request concurrency'", "0")),
])
def test_a_printed_figure_out_of_range_is_one_sentence_naming_its_row(env, capsys, tmp_path, old, new, names):
    err = refused(env, capsys, tmp_path, printed(old, new))
    assert all(n in err for n in names) and "nothing was imported" in err, err


@pytest.mark.parametrize("changes, names", [
    ({"completed": -10}, ("completed", "-10")),
    ({"accept_length": -2.04}, ("accept_length", "-2.04")),
    ({"total_output_tokens": 1.5}, ("total_output_tokens", "1.5")),
    ({"request_rate": -4}, ("request_rate", "-4")),
    ({"duration": "soon"}, ("duration", "'soon'")),
    ({"max_concurrency": True}, ("max_concurrency", "True")),
    ({"ttfts": [0.03, "x"]}, ("ttfts", "'x'")),
    ({"ttfts": [0.03, -0.03]}, ("ttfts", "-0.03")),
    ({"itls": [[0.01, -0.01]]}, ("itls", "-0.01")),
    ({"output_lens": {"a": 1}}, ("output_lens", "not a list")),
])
def test_a_jsonl_figure_out_of_range_is_one_sentence_naming_its_field(env, capsys, tmp_path, changes, names):
    err = refused(env, capsys, tmp_path, jsonl_with(**changes))
    assert all(n in err for n in names) and "nothing was imported" in err, err


def test_the_real_fixtures_still_import(env, capsys):
    for path in (EAGLE, TWO_BLOCKS, JSONL):
        assert main(["history", "import", str(path)]) == 0, capsys.readouterr().err
    assert len(HistoryStore().runs()) == 5


def test_the_same_block_under_another_profile_is_not_relabelled(env, capsys):
    assert main(["history", "import", str(EAGLE), "--profile", "eagle-a"]) == 0
    (first,) = HistoryStore().runs()
    capsys.readouterr()
    assert main(["history", "import", str(EAGLE), "--profile", "eagle-b", "--host", "other"]) == 0
    (again,) = HistoryStore().runs()
    assert (again["id"], again["profile"], again["host"]) == (first["id"], "eagle-a", "imported")
    out = capsys.readouterr().out
    assert f"already in the history as run {first['id']} (left as it was)" in out, out


def test_an_import_says_which_runs_were_already_in_the_history(env):
    text = EAGLE.read_text(encoding="utf-8")
    store = HistoryStore()
    (run,), _ = results_from_printed(text, source="a.txt", profile="eagle-a")
    first = store.import_runs([run])
    assert len(first.added) == 1 and first.present == []
    doubled, _ = results_from_printed(text + "\n" + text, source="b.txt", profile="eagle-b")
    assert len(doubled) == 2 and doubled[0].run_id == doubled[1].run_id == run.run_id
    outcome = store.import_runs(doubled)
    assert outcome.added == [] and outcome.present == [first.added[0]]
    sentence = outcome.sentence("2 printed sglang.bench_serving result blocks", "b.txt")
    assert sentence == (f"imported no entry from 2 printed sglang.bench_serving result blocks in b.txt: the run is "
                        f"already in the history as run {first.added[0]} (left as it was)")
    assert [r["profile"] for r in store.runs()] == ["eagle-a"]


def test_the_ids_of_a_large_import_are_summed_up():
    outcome = ImportOutcome(added=[str(i) for i in range(1, 26)], present=["100", "101", "102"])
    line = outcome.sentence("25 sglang.benchmark.serving JSONL lines", "f.jsonl")
    assert line == ("imported 25 entries from 25 sglang.benchmark.serving JSONL lines in f.jsonl: 1, 2, 3, 4, 5, 6, "
                    "7, 8, 9, 10 and 15 more (spectui history list); 3 runs were already in the history as runs "
                    "100, 101, 102 (left as they were)")
    assert ImportOutcome(added=["7"], present=[]).sentence("1 x", "f") == "imported 1 entry from 1 x in f: 7"


def test_a_paste_over_the_limit_is_refused_in_one_sentence(env, capsys, tmp_path):
    block = EAGLE.read_text(encoding="utf-8")
    big = block * (IMPORT_LIMIT_BYTES // len(block.encode()) + 2)
    for parse in (parse_printed_blocks, parse_sglang_jsonl, HistoryStore().import_json):
        with pytest.raises(SglangImportError) as exc:
            parse(big, "paste.txt")
        assert str(exc.value).startswith("paste.txt is ") and f"at most {IMPORT_LIMIT_BYTES >> 20} MiB" in str(exc.value)
    err = refused(env, capsys, tmp_path, big)
    assert f"{IMPORT_LIMIT_BYTES >> 20} MiB" in err and "nothing was imported" in err
    assert parse_printed_blocks(block, "ok.txt")[0] and detect_format(block) is not None  # under it, as before


def test_many_skipped_blocks_are_named_ten_and_counted(env, capsys, tmp_path):
    vllm = (REAL / "vllm-pr-51742-not-sglang.txt").read_text(encoding="utf-8")
    rows, skipped = parse_printed_blocks(vllm * 25 + EAGLE.read_text(encoding="utf-8"), "p.txt")
    assert len(rows) == 1 and len(skipped) == 11 and skipped[-1] == "15 more blocks of p.txt for the same reasons"
    assert all("no Backend: row" in s for s in skipped[:10])
