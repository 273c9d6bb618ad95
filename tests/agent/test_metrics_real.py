"""/metrics texts published by SGLang itself (tests/fixtures/real/metrics/, URLs in each file's
first line and in SOURCES.json), read with every release's names; expectations copied by hand
from the texts."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from spectui.agent.servers import figures as lf
from spectui.agent.servers.metrics import parse_metrics

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "metrics"


def text(name):
    return (REAL / name).read_text()


def snap(name):
    return parse_metrics(text(name), taken_at=0.0)


def test_every_fixture_names_its_public_source():
    for path in REAL.glob("*.prom"):
        first = path.read_text().splitlines()[0]
        assert first.startswith("# source: https://github.com/"), path.name


def test_first_metrics_names_are_read_under_todays_names():
    s = snap("docs_2024-11_first_metrics.prom")
    # sglang:num_requests_running / sglang:num_requests_waiting, both 0.0 in the sample
    assert s.gauges["num_running_reqs"] == 0.0 and s.gauges["num_queue_reqs"] == 0.0
    assert "num_requests_running" not in s.gauges and "num_requests_waiting" not in s.gauges
    (labels, _), = s.gauge_series["num_running_reqs"]
    assert labels == {"name": "google/gemma-2-9b-it"}
    assert s.gauges["token_usage"] == pytest.approx(0.01)
    assert s.counters["prompt_tokens_total"] == 506780 and s.counters["generation_tokens_total"] == 424549
    tpot = s.histograms["time_per_output_token_seconds"]
    assert tpot.count == 422425 and tpot.sum == pytest.approx(29846.5393948555)
    assert s.histograms["time_to_first_token_seconds"].count == 2124


def test_production_metrics_sample_of_the_0_4_era():
    s = snap("docs_2025-03_production_metrics.prom")
    assert s.gauges["num_running_reqs"] == 162 and s.gauges["num_queue_reqs"] == 2826
    assert s.gauges["gen_throughput"] == pytest.approx(86.50814177726902)
    assert s.gauges["num_used_tokens"] == 123859
    assert s.counters["prompt_tokens_total"] == 8128902 and s.counters["generation_tokens_total"] == 7557572
    ttft = s.histograms["time_to_first_token_seconds"]
    assert ttft.count == 11008 and dict(ttft.buckets)[1.0] == 27 and dict(ttft.buckets)[30.0] == 2513
    tpot = s.histograms["time_per_output_token_seconds"]
    assert tpot.count == 7400757 and dict(tpot.buckets)[0.1] == 4950195
    assert "inter_token_latency_seconds" not in s.histograms
    assert s.dp_ranks == []


def test_a_paste_without_type_lines_reads_the_same():
    # the same published sample with its "# HELP" / "# TYPE" lines gone, as `grep -v '^#'` gives
    samples = "\n".join(l for l in text("docs_2025-03_production_metrics.prom").splitlines() if not l.startswith("#"))
    s = parse_metrics(samples + "\n", taken_at=0.0)
    assert s.gauges["gen_throughput"] == pytest.approx(86.50814177726902)
    assert s.gauges["num_running_reqs"] == 162 and s.gauges["cache_hit_rate"] == pytest.approx(0.007507552643049313)
    assert s.counters["generation_tokens_total"] == 7557572
    tpot = s.histograms["time_per_output_token_seconds"]
    assert tpot.count == 7400757 and tpot.sum == pytest.approx(866964.5791549598)
    assert dict(tpot.buckets)[float("inf")] == 7400757
    assert s.histograms["e2e_request_latency_seconds"].count == 11228


def test_untyped_count_without_buckets_is_a_gauge():
    s = parse_metrics('sglang:routing_key_all_req_count{model_name="m"} 3\n', taken_at=0.0)
    assert s.gauges["routing_key_all_req_count"] == 3 and not s.histograms


def test_a_0_5_1_server_paste():
    s = snap("issue13485_v0.5.1_head.prom")
    assert s.gauges["num_running_reqs"] == 1.0
    assert s.gauges["gen_throughput"] == pytest.approx(0.8371284457403783)
    assert s.gauges["token_usage"] == 0.0


def test_per_stream_speed_from_the_old_time_per_output_token_histogram():
    tpot = snap("docs_2025-03_production_metrics.prom").histograms["time_per_output_token_seconds"]
    ws = SimpleNamespace(itl=None, tpot=tpot, elapsed_s=30.0)
    fig = lf.per_stream(10.0, ws, None, None, 162, lf.Holder())
    assert fig["source"] == "tpot-histogram"
    # 7400757 observations / 866964.58 s of mean seconds per token = 8.536 tokens/s
    assert fig["value"] == pytest.approx(8.536, abs=0.001)


DP_TEXT = """# TYPE sglang:gen_throughput gauge
sglang:gen_throughput{dp_rank="0",engine_type="unified",model_name="m",tp_rank="0"} 40.0
sglang:gen_throughput{dp_rank="1",engine_type="unified",model_name="m",tp_rank="4"} 25.0
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{dp_rank="0",engine_type="unified",model_name="m",tp_rank="0"} 2.0
sglang:spec_accept_length{dp_rank="1",engine_type="unified",model_name="m",tp_rank="4"} 3.0
"""


def test_dp_ranks_are_summed_for_throughput_averaged_for_accept_length_and_counted():
    # label layout of sglang 0.5.23, srt/observability/metrics_collector.py:1382-1392 (dp_rank when set)
    s = parse_metrics(DP_TEXT, taken_at=0.0)
    assert s.dp_ranks == ["0", "1"]
    assert s.gauges["gen_throughput"] == 65.0 and s.gauges["spec_accept_length"] == 2.5
    fig = lf.throughput(5.0, None, None, s.gauges, None, None, {}, lf.Changes(), 3, lf.Holder(), True,
                        len(s.dp_ranks))
    assert fig["source"] == "metrics-gauge" and fig["value"] == 65.0 and fig["ranks"] == 2


def test_accept_length_gauge_is_labelled_as_the_last_log_interval():
    fig = lf.accept_length(5.0, None, None, {"spec_accept_length": 2.5}, None, None, lf.Changes(), True,
                           lf.Holder(), 2)
    assert fig["source"] == "metrics-gauge" and fig["value"] == 2.5
    assert fig["window"] == "last decode-log interval" and fig["ranks"] == 2
