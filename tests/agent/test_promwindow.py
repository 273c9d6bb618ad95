"""/metrics snapshots and windows: SGLang 0.5.23 exposition text, resets, quantiles."""

import sys
from pathlib import Path

import pytest

from spectui.agent.servers.metrics import (
    Histogram,
    MetricsUnavailable,
    MetricsWindow,
    counter_increase,
    histogram_increase,
    histogram_quantile,
    parse_metrics,
    prometheus_client_missing,
    window_stats,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
INF = float("inf")


def snapshot(name, at):
    return parse_metrics((FIXTURES / ("sglang_0523_metrics_%s.prom" % name)).read_text(), taken_at=at)


@pytest.fixture
def snaps():
    return [snapshot("t0", 0.0), snapshot("t1", 30.0), snapshot("t2", 60.0)]


def test_fixture_says_where_it_comes_from():
    head = (FIXTURES / "sglang_0523_metrics_t1.prom").read_text().splitlines()[:4]
    assert any("sglang==0.5.23" in line for line in head)
    assert any("metrics_collector.py" in line for line in head)


def test_snapshot_of_sglang_0523_metrics(snaps):
    s = snaps[1]
    assert s.gauges["num_running_reqs"] == 2 and s.gauges["num_queue_reqs"] == 0
    assert s.gauges["gen_throughput"] == pytest.approx(71.4)
    assert s.gauges["token_usage"] == pytest.approx(0.03)
    assert s.gauges["cache_hit_rate"] == pytest.approx(0.1)
    assert s.gauges["spec_accept_length"] == pytest.approx(2.13)
    assert s.gauges["spec_accept_rate"] == pytest.approx(0.16)
    assert s.gauges["spec_num_steps"] == 3 and s.gauges["spec_num_draft_tokens"] == 8
    # counters keep "_total" and are summed over is_streaming
    assert s.counters["prompt_tokens_total"] == 56000
    assert s.counters["generation_tokens_total"] == 24200
    assert s.counters["spec_verify_calls_total"] == 12000
    assert s.counters["num_requests_total"] == 60
    ttft = s.histograms["time_to_first_token_seconds"]
    assert ttft.count == 60 and ttft.buckets[-1] == (INF, 60)
    assert dict(ttft.buckets)[0.1] == 30  # 30 non-streaming + 0 streaming under 0.1 s
    assert set(s.histograms) >= {"time_to_first_token_seconds", "inter_token_latency_seconds", "e2e_request_latency_seconds"}
    labels, value = s.gauge_series["num_running_reqs"][0]
    assert labels["tp_rank"] == "0" and labels["pp_rank"] == "0" and labels["model_name"] == "moonshotai/Kimi-K2.5"


def test_snapshot_to_dict_is_json_ready(snaps):
    import json

    d = json.loads(json.dumps(snaps[1].to_dict()))
    assert d["counters"]["spec_verify_calls_total"] == 12000
    assert d["histograms"]["inter_token_latency_seconds"]["buckets"][-1] == ["+Inf", 1100]


def test_text_that_is_not_exposition_format_is_a_value_error():
    with pytest.raises(ValueError):
        parse_metrics("<html>502 Bad Gateway</html>\n", taken_at=0)


def test_window_accept_length_and_quantiles(snaps):
    w = window_stats(snaps[0], snaps[1])
    assert w.elapsed_s == 30.0
    assert w.generation_tokens == 4200 and w.verify_calls == 2000
    assert w.accept_length == pytest.approx(2.1)  # 4200 / 2000, exact
    assert not w.stale and w.resets == []
    assert w.prompt_tokens == 6000 and w.requests == 10
    assert w.generation_tokens_per_s == pytest.approx(140.0)
    # TTFT in the window: 4 in (0.1, 0.2], 4 in (0.2, 0.4], 2 in (0.4, 0.6] (the 50
    # observations before t0 must not count).
    # p50: rank 5 -> (0.2, 0.4], 4 below: 0.2 + 0.2 * (5 - 4) / 4 = 0.25
    # p99: rank 9.9 -> (0.4, 0.6], 8 below: 0.4 + 0.2 * (9.9 - 8) / 2 = 0.59
    assert w.ttft_p50 == pytest.approx(0.25)
    assert w.ttft_p99 == pytest.approx(0.59)
    # ITL: 50 in (0.010, 0.015], 40 in (0.015, 0.020], 10 in (0.030, 0.035]
    # p50: rank 50 -> 0.010 + 0.005 * 50 / 50 = 0.015; p99: rank 99 -> 0.030 + 0.005 * 9 / 10 = 0.0345
    assert w.itl_p50 == pytest.approx(0.015)
    assert w.itl_p99 == pytest.approx(0.0345)
    # e2e: 5 in (2, 4], 5 in (4, 6]: p50 = 2 + 2 * 5/5 = 4.0; p99 = 4 + 2 * 4.9/5 = 5.96
    assert w.e2e_p50 == pytest.approx(4.0)
    assert w.e2e_p99 == pytest.approx(5.96)
    assert w.to_dict()["accept_length"] == pytest.approx(2.1)


def test_window_across_a_restart_counts_from_zero(snaps):
    w = window_stats(snaps[1], snaps[2])
    assert w.generation_tokens == 900 and w.verify_calls == 500  # not 900 - 24200
    assert w.accept_length == pytest.approx(1.8)
    assert {"generation_tokens_total", "spec_verify_calls_total", "time_to_first_token_seconds"} <= set(w.resets)
    # TTFT after the restart: 3 in (0.6, 0.8]: p50 = 0.6 + 0.2 * 1.5/3 = 0.7, p99 = 0.6 + 0.2 * 2.97/3
    assert w.ttft_p50 == pytest.approx(0.7)
    assert w.ttft_p99 == pytest.approx(0.798)
    # ITL: 30 in (0.008, 0.010]: p50 = 0.009
    assert w.itl_p50 == pytest.approx(0.009)


def test_window_over_several_snapshots_sums_steps_across_the_reset(snaps):
    w = window_stats(*snaps)
    assert w.generation_tokens == 4200 + 900 and w.verify_calls == 2000 + 500
    assert w.accept_length == pytest.approx(5100 / 2500)
    assert w.elapsed_s == 60.0
    assert w.requests == 13


def test_idle_window_is_stale(snaps):
    again = parse_metrics((FIXTURES / "sglang_0523_metrics_t1.prom").read_text(), taken_at=45.0)
    w = window_stats(snaps[1], again)
    assert w.accept_length is None and w.stale
    assert w.generation_tokens == 0 and w.ttft_p50 is None
    # while the gauge still shows the last log interval's value
    assert again.gauges["spec_accept_length"] == pytest.approx(2.13)


def test_metrics_window_class(snaps):
    w = MetricsWindow()
    assert w.update(snaps[0]) is None
    assert w.update(snaps[1]).accept_length == pytest.approx(2.1)
    assert w.update(snaps[2]).accept_length == pytest.approx(1.8)  # previous snapshot only
    assert w.latest is snaps[2]
    long = MetricsWindow(span_s=60)
    long.update(snaps[0])
    long.update(snaps[1])
    assert long.update(snaps[2]).accept_length == pytest.approx(5100 / 2500)
    short = MetricsWindow(span_s=30)
    short.update(snaps[0])
    short.update(snaps[1])
    assert short.update(snaps[2]).accept_length == pytest.approx(1.8)
    text = (FIXTURES / "sglang_0523_metrics_t0.prom").read_text()
    fresh = MetricsWindow()
    assert fresh.update(parse_metrics(text, taken_at=1.0)) is None


def test_counter_increase():
    assert counter_increase(10, 25) == (15, False)
    assert counter_increase(25, 7) == (7, True)  # went down: restarted, rose by 7
    assert counter_increase(None, 7) == (7, False)  # appeared (a labelled series' first sample): rose from zero
    assert counter_increase(5, None) == (None, False)


def test_histogram_increase_and_reset():
    a = Histogram([(1.0, 2), (2.0, 5), (INF, 6)], 6, 7.5)
    b = Histogram([(1.0, 4), (2.0, 8), (INF, 10)], 10, 12.0)
    inc, reset = histogram_increase(a, b)
    assert not reset and inc == Histogram([(1.0, 2), (2.0, 3), (INF, 4)], 4, 4.5)
    inc, reset = histogram_increase(b, a)
    assert reset and inc == a
    other_bounds = Histogram([(5.0, 1), (INF, 1)], 1, 3.0)
    inc, reset = histogram_increase(a, other_bounds)
    assert reset and inc == other_bounds


def test_histogram_quantile_by_hand():
    h = Histogram([(0.1, 0), (0.5, 10), (1.0, 30), (INF, 40)], 40, 20.0)
    # rank 20 in (0.5, 1.0] with 10 below and 20 inside: 0.5 + 0.5 * 10/20
    assert histogram_quantile(0.5, h) == pytest.approx(0.75)
    # rank 2 in (0.1, 0.5]: 0.1 + 0.4 * 2/10
    assert histogram_quantile(0.05, h) == pytest.approx(0.18)
    # rank 39.6 falls in +Inf: the largest finite bound, as Prometheus does
    assert histogram_quantile(0.99, h) == 1.0
    first = Histogram([(2.0, 4), (INF, 4)], 4, 3.0)
    assert histogram_quantile(0.5, first) == pytest.approx(1.0)  # the first bucket starts at 0
    assert histogram_quantile(0.5, Histogram([(1.0, 0), (INF, 0)], 0, 0.0)) is None
    assert histogram_quantile(0.5, None) is None


def _exposition(series):
    """Write exposition text with prometheus_client itself (the reader is what is tested)."""
    from prometheus_client import CollectorRegistry, Gauge, generate_latest

    registry = CollectorRegistry()
    labels = ["model_name", "engine_type", "tp_rank", "pp_rank", "moe_ep_rank", "dp_rank"]
    gauges = {}
    for name, rows in series.items():
        gauges[name] = Gauge("sglang:" + name, name, labelnames=labels, registry=registry)
        for (dp, tp), value in rows:
            gauges[name].labels(model_name="m", engine_type="unified", tp_rank=str(tp), pp_rank="0",
                                moe_ep_rank="0", dp_rank=str(dp)).set(value)
    return generate_latest(registry).decode()


def test_gauges_over_ranks_rank0_per_dp_group_then_combined():
    # DP attention, 2 DP groups of 4 TP ranks; all schedulers export (the TP ranks of a
    # group repeat its values; rank 0 of each group is taken).
    rows = lambda a, b: [((0, 0), a), ((0, 1), a), ((0, 3), a), ((1, 4), b), ((1, 5), b)]  # noqa: E731
    text = _exposition({
        "num_running_reqs": rows(3, 5),
        "gen_throughput": rows(100.0, 50.0),
        "token_usage": rows(0.2, 0.5),
        "spec_accept_length": rows(2.0, 3.0),
        "spec_num_steps": rows(3, 3),
    })
    s = parse_metrics(text, taken_at=0)
    assert s.gauges["num_running_reqs"] == 8  # summed over DP groups, not over TP ranks
    assert s.gauges["gen_throughput"] == pytest.approx(150.0)
    assert s.gauges["token_usage"] == pytest.approx(0.5)  # the fullest group
    assert s.gauges["spec_accept_length"] == pytest.approx(2.5)  # the groups' mean
    assert s.gauges["spec_num_steps"] == 3
    assert len(s.gauge_series["token_usage"]) == 5


def test_missing_prometheus_client_is_one_clear_sentence(monkeypatch):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    monkeypatch.setitem(sys.modules, "prometheus_client.parser", None)
    message = prometheus_client_missing()
    assert "prometheus_client is not installed" in message and message.endswith(".")
    with pytest.raises(MetricsUnavailable, match="prometheus_client is not installed"):
        parse_metrics("sglang:num_running_reqs 1\n")


def test_prometheus_client_present():
    assert prometheus_client_missing() is None
