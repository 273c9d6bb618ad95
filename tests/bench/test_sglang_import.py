"""Importing sglang.benchmark.serving's --output-file JSONL by its real key names."""

import json
from pathlib import Path

import pytest

from spectui.cli.main import main
from spectui.core.bench.sglang_import import SglangImportError, import_sglang_file, parse_sglang_jsonl
from spectui.core.history import HistoryStore

FIXTURE = Path(__file__).parent / "fixtures" / "sglang_serving.jsonl"


def test_import_a_0523_line_with_details_and_an_older_line():
    new, old = import_sglang_file(FIXTURE, host="gpu-a", profile="kimi-eagle3")
    raw = [json.loads(line) for line in FIXTURE.read_text().splitlines()]

    assert new.engine == "sglang" and new.host == "gpu-a" and new.profile == "kimi-eagle3"
    assert new.sglang_version == "0.5.23" and new.speculative["algorithm"] == "EAGLE3"
    assert new.speculative["draft_tokens"] == 4
    assert new.concurrency == 4 and new.request_rate is None  # Infinity: all requests at once
    s = new.stats
    assert s["source"] == "sglang.benchmark.serving"
    assert s["output_tok_s"] == raw[0]["output_throughput"]
    assert s["duration_s"] == raw[0]["duration"] and s["completed"] == raw[0]["completed"]
    assert s["ttft_ms"]["p50"] == raw[0]["median_ttft_ms"] and s["ttft_ms"]["p90"] == raw[0]["p90_ttft_ms"]
    assert s["itl_ms"]["p99"] == raw[0]["p99_itl_ms"] and s["e2e_ms"]["mean"] == raw[0]["mean_e2e_latency_ms"]
    # the tool's accept_length is the server's cumulative figure: kept, and labelled so
    assert s["accept_length"]["server_cumulative"] == 2.04 and s["accept_length"]["per_request"] is None
    assert "cumulative" not in str(s["accept_length"]["per_request"])
    # --output-details: per-request records in ms, agreeing with the tool's own percentiles
    assert len(new.records) == 10 and new.records[0]["ttft_ms"] == pytest.approx(raw[0]["ttfts"][0] * 1000)
    from spectui.core.bench.stats import summary
    mine = summary([x for r in new.records for x in r["itl_ms"]])
    assert mine["p50"] == pytest.approx(raw[0]["median_itl_ms"]) and mine["p99"] == pytest.approx(raw[0]["p99_itl_ms"])

    assert old.stats["output_tok_s"] == raw[1]["output_throughput"] and old.request_rate == 2.0
    assert old.stats["ttft_ms"]["p99"] == raw[1]["p99_ttft_ms"] and old.stats["ttft_ms"]["p90"] is None
    assert old.stats["accept_length"] is None and old.records == []
    assert new.run_id != old.run_id


def test_not_sglang_output_is_one_sentence(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"duration": 1}\n')
    with pytest.raises(SglangImportError, match=r"x.jsonl:1: .*not a result of sglang.benchmark.serving"):
        import_sglang_file(bad)
    with pytest.raises(SglangImportError, match=r":2: not a JSON line"):
        parse_sglang_jsonl(FIXTURE.read_text().splitlines()[0] + "\nnot json\n", "f")


def test_history_import_of_sglang_jsonl(env, capsys):
    assert main(["history", "import", str(FIXTURE), "--profile", "kimi-eagle3", "--host", "gpu-a"]) == 0
    assert "imported 2 entries" in capsys.readouterr().out
    runs = HistoryStore().runs()
    assert [r["engine"] for r in runs] == ["sglang", "sglang"]
    # importing the same file again updates, it does not duplicate
    main(["history", "import", str(FIXTURE), "--profile", "kimi-eagle3", "--host", "gpu-a"])
    assert len(HistoryStore().runs()) == 2
