"""Importing the result blocks sglang.bench_serving prints, as people posted them (see the fixtures' README).

Expected figures are copied by hand from the posted text.
"""

import io
import math
from pathlib import Path

import pytest

from spectui.cli.main import main
from spectui.core.bench.sglang_import import (SGLANG_JSONL, SGLANG_PRINTED, SPECTUI_EXPORT, detect_format,
                                              parse_printed_blocks, results_from_printed)
from spectui.core.history import HistoryStore

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "bench_serving"
JSONL = Path(__file__).parent / "fixtures" / "sglang_serving.jsonl"


def one_row(name: str) -> dict:
    rows, skipped = parse_printed_blocks((REAL / name).read_text(encoding="utf-8"), name)
    assert skipped == [] and len(rows) == 1
    return rows[0]


def test_every_fixture_is_named_in_the_readme_with_its_url():
    readme = (REAL / "README.md").read_text(encoding="utf-8")
    names = sorted(p.name for p in REAL.iterdir() if p.name != "README.md")
    assert len(names) == 7
    for name in names:
        row = next(line for line in readme.splitlines() if f"`{name}`" in line)
        assert "https://github.com/" in row, name


def test_a_03_era_block_after_the_shell_commands():
    row = one_row("issue-2097-sglang-0.3-shell-session.txt")
    assert row["_line"] == 6  # the header, after the launch and bench commands
    assert row["backend"] == "sglang" and row["request_rate"] == 4.0
    assert "max_concurrency" not in row  # no concurrency row before 0.4.0
    assert row["completed"] == 1200 and row["duration"] == 302.97
    assert row["total_input_tokens"] == 269081 and row["total_output_tokens"] == 226901
    assert row["output_throughput"] == 748.92 and row["request_throughput"] == 3.96
    assert row["total_throughput"] == 1637.07
    assert row["mean_e2e_latency_ms"] == 2564.81 and row["median_e2e_latency_ms"] == 1575.29
    assert (row["mean_ttft_ms"], row["median_ttft_ms"], row["p99_ttft_ms"]) == (38.23, 31.98, 95.83)
    assert "mean_tpot_ms" not in row  # the paste ends at the TPOT section's title


def test_the_misspelt_concurrency_row_of_040_reads_as_not_set():
    row = one_row("issue-2805-sglang-0.4.0-shell-session.txt")
    assert "max_concurrency" in row and row["max_concurrency"] is None  # "Max reqeuest concurrency: not set"
    assert row["request_rate"] == math.inf
    assert row["completed"] == 1648 and row["duration"] == 170.41
    assert row["output_throughput"] == 1915.40 and row["input_throughput"] == 2165.94
    assert row["total_output_tokens_retokenized"] == 326356
    assert row["mean_ttft_ms"] == 44294.80 and "median_ttft_ms" not in row


def test_speculative_blocks_keep_accept_length_labelled_as_the_servers_cumulative_figure():
    text = (REAL / "issue-4759-sglang-0.4-mtp-accept-length.txt").read_text(encoding="utf-8")
    (run,), skipped = results_from_printed(text, source="r1.txt", host="gpu-b", profile="r1-mtp")
    assert skipped == []
    assert run.engine == "sglang" and run.host == "gpu-b" and run.profile == "r1-mtp"
    assert run.request_rate is None and run.concurrency is None  # inf, and "not set"
    s = run.stats
    assert s["output_tok_s"] == 160.95 and s["duration_s"] == 79.53 and s["completed"] == 100
    assert s["output_tokens"] == 12800 and s["prompt_tokens"] == 12800
    assert s["speculative"] is True
    assert s["accept_length"]["server_cumulative"] == 2.52
    assert s["accept_length"]["per_request"] is None and s["accept_length"]["metrics"] is None
    assert "flush_cache" in s["accept_length"]["server_cumulative_since"]
    assert s["e2e_ms"]["mean"] == 37806.13 and s["e2e_ms"]["p50"] == 36031.24 and s["e2e_ms"]["p99"] is None
    assert s["ttft_ms"]["mean"] == 20923.17 and s["ttft_ms"]["p50"] is None
    assert s["source"] == "sglang.bench_serving printed result"
    assert run.summary["imported_from"] == "r1.txt" and run.summary["line"] == 3
    assert "rounded" in run.summary["format"]
    assert run.records == []


def test_an_eagle_block_with_concurrency_and_itl():
    text = (REAL / "pr-9588-sglang-0.5-eagle-accept-length.txt").read_text(encoding="utf-8")
    (run,), _ = results_from_printed(text, source="pr.txt")
    assert run.concurrency == 4 and run.preset["concurrency"] == 4 and run.preset["num-prompts"] == 200
    s = run.stats
    assert s["output_tok_s"] == 1067.83 and s["request_s"] == 4.97 and s["duration_s"] == 40.23
    assert s["accept_length"]["server_cumulative"] == 3.46
    assert (s["ttft_ms"]["mean"], s["ttft_ms"]["p50"], s["ttft_ms"]["p99"]) == (31.66, 24.22, 158.63)
    assert (s["itl_ms"]["mean"], s["itl_ms"]["p50"]) == (3.56, 2.82)
    assert run.sglang_result["concurrency"] == 3.94


def test_a_056_block_with_peak_rows_and_no_trailing_spaces():
    row = one_row("pr-26445-sglang-0.5-peak-rows.txt")
    assert row["max_concurrency"] == 8 and row["completed"] == 500 and row["duration"] == 10821.24
    assert row["total_input_text_tokens"] == 193761 and row["total_output_tokens"] == 2048000
    assert row["max_output_tokens_per_s"] == 465.00 and row["max_concurrent_requests"] == 16
    assert row["output_throughput"] == 189.26 and row["concurrency"] == 7.94
    assert row["p90_e2e_latency_ms"] == 172984.00 and row["p99_e2e_latency_ms"] == 175397.60
    assert row["p99_ttft_ms"] == 1920.03
    assert "accept_length" not in row


def test_two_whole_blocks_inside_markdown_with_commands_between():
    text = (REAL / "cookbook-kimi-k2.5-sglang-0.5.6-two-blocks.md").read_text(encoding="utf-8")
    rows, skipped = parse_printed_blocks(text, "kimi.md")
    assert skipped == [] and [r["max_concurrency"] for r in rows] == [1, 16]
    first, second = rows
    assert first["output_throughput"] == 106.10 and first["duration"] == 39.77 and first["completed"] == 10
    assert (first["mean_tpot_ms"], first["median_tpot_ms"], first["p99_tpot_ms"]) == (9.22, 9.32, 12.72)
    assert (first["p95_itl_ms"], first["p99_itl_ms"], first["max_itl_ms"]) == (13.23, 14.17, 29.38)
    assert second["output_throughput"] == 258.18 and second["duration"] == 158.05 and second["completed"] == 80
    assert second["p90_e2e_latency_ms"] == 57126.31 and second["median_ttft_ms"] == 375.51
    assert second["max_itl_ms"] == 655.61
    # the closing ===== line ends the first block: nothing of the second one leaks into it
    assert first["total_output_tokens"] == 4220 and second["total_output_tokens"] == 40805
    runs, _ = results_from_printed(text, source="kimi.md")
    assert runs[0].stats["tpot_ms"]["p50"] == 9.32 and runs[1].stats["e2e_ms"]["p90"] == 57126.31
    assert runs[0].stats["accept_length"] is None and runs[0].stats["speculative"] is False
    assert runs[0].run_id != runs[1].run_id


def test_vllms_block_under_the_same_header_is_skipped_with_a_reason():
    text = (REAL / "vllm-pr-51742-not-sglang.txt").read_text(encoding="utf-8")
    rows, skipped = parse_printed_blocks(text, "v.txt")
    assert rows == [] and skipped == ["v.txt:2: that block has no Backend: row, so it is not sglang's (vLLM's "
                                      "benchmark prints the same header)"]


def test_a_quoted_paste_reads_the_same():
    text = (REAL / "pr-9588-sglang-0.5-eagle-accept-length.txt").read_text(encoding="utf-8")
    quoted = "".join("> " + line for line in text.splitlines(keepends=True))
    assert parse_printed_blocks(quoted)[0] == parse_printed_blocks(text)[0]


def test_format_detection():
    assert detect_format((REAL / "issue-2805-sglang-0.4.0-shell-session.txt").read_text(encoding="utf-8")) \
        == SGLANG_PRINTED
    assert detect_format(JSONL.read_text()) == SGLANG_JSONL
    assert detect_format('{"kind": "spectui-history", "runs": []}') == SPECTUI_EXPORT
    assert detect_format("$ ls\nnothing here\n") is None


def test_cli_imports_every_block_of_a_file_and_says_what_it_read(env, capsys):
    path = REAL / "cookbook-kimi-k2.5-sglang-0.5.6-two-blocks.md"
    assert main(["history", "import", str(path), "--profile", "kimi-k2.5", "--host", "h200"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("imported 2 entries from 2 printed sglang.bench_serving result blocks in ")
    runs = HistoryStore().runs()
    assert [(r["engine"], r["host"], r["profile"], r["stats"]["output_tok_s"]) for r in runs] == [
        ("sglang", "h200", "kimi-k2.5", 106.10), ("sglang", "h200", "kimi-k2.5", 258.18)]
    main(["history", "import", str(path), "--profile", "kimi-k2.5", "--host", "h200"])
    assert len(HistoryStore().runs()) == 2  # the same blocks again update, they do not duplicate


def test_cli_reads_stdin_and_reports_skipped_blocks(env, capsys, monkeypatch):
    text = ((REAL / "pr-9588-sglang-0.5-eagle-accept-length.txt").read_text(encoding="utf-8")
            + "\n" + (REAL / "vllm-pr-51742-not-sglang.txt").read_text(encoding="utf-8"))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode("utf-8"))))  # a real stdin has .buffer
    assert main(["history", "import", "-"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("imported 1 entry from 1 printed sglang.bench_serving result block in <stdin>: ")
    assert "skipped <stdin>:" in captured.err and "no Backend: row" in captured.err
    (run,) = HistoryStore().runs()
    assert run["stats"]["accept_length"]["server_cumulative"] == 3.46


def test_cli_jsonl_still_says_what_it_read(env, capsys):
    assert main(["history", "import", str(JSONL)]) == 0
    assert "imported 2 entries from 2 sglang.benchmark.serving JSONL lines in " in capsys.readouterr().out


@pytest.mark.parametrize("content, expected", [
    ("$ python3 -m sglang.bench_serving --help\nusage: bench_serving.py [-h]\n",
     "holds no spectui JSON export, no sglang.benchmark.serving JSONL line and no "
     "'==== Serving Benchmark Result ====' block, so nothing was imported"),
    ((REAL / "vllm-pr-51742-not-sglang.txt").read_text(encoding="utf-8"),
     "no printed sglang.bench_serving result imported: "),
])
def test_cli_a_file_with_no_run_is_one_sentence_naming_it(env, capsys, tmp_path, content, expected):
    f = tmp_path / "notes.txt"
    f.write_text(content)
    assert main(["history", "import", str(f)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"spectui: {f}") and expected in err
    assert "\n" not in err and "Traceback" not in err
    assert HistoryStore().runs() == []
