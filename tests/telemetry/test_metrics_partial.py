"""A /metrics text with a histogram's ``_count`` or ``_sum`` line missing (a partial paste, a proxy
that drops lines): the count comes from the ``+Inf`` bucket, and without a sum there is no mean.

The texts are SGLang's own published samples (tests/fixtures/real/metrics/) with one family's lines
cut out; every expectation is read from the complete text, and the complete text's reading is checked
against prometheus_client's parser."""

import math
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from spectui.agent.servers import figures as lf
from spectui.agent.servers.metrics import (
    MetricsWindow, histogram_mean, parse_metrics, quantile_bound, window_stats)
from spectui.ui.draw import DEFAULT_STYLES
from spectui.ui.snapshots import latency_view
from spectui.ui.widgets.throughput import latency_rows

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "metrics"
PROM = "docs_2025-03_production_metrics.prom"
FAMILY = "time_to_first_token_seconds"


def real(name=PROM):
    return (REAL / name).read_text()


def without(text, family, part):
    """The text with the ``sglang:<family>_<part>`` sample lines cut out."""
    cut = "\n".join(line for line in text.splitlines() if not line.startswith("sglang:%s_%s" % (family, part)))
    assert cut != text.rstrip("\n"), "the fixture has no %s_%s line to cut" % (family, part)
    return cut + "\n"


def untyped(text):
    return "\n".join(line for line in text.splitlines() if not line.startswith("#")) + "\n"


def later(text, family, extra):
    """The same text a little later: ``extra`` more observations in the ``+Inf`` bucket of ``family`` (and
    its ``_count``), as a server that saw ``extra`` slow requests would show."""
    out = []
    for line in text.splitlines():
        if line.startswith("sglang:%s_bucket{le=\"+Inf\"" % family) or line.startswith("sglang:%s_count" % family):
            name, value = line.rsplit(" ", 1)
            line = "%s %r" % (name, float(value) + extra)
        out.append(line)
    return "\n".join(out) + "\n"


def inf_bucket(text, family):
    return next(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                if re.match(r'sglang:%s_bucket\{le="\+Inf"' % family, line))


@pytest.mark.parametrize("strip_types", [False, True], ids=["typed", "untyped"])
def test_count_without_count_line_is_the_inf_bucket(strip_types):
    full = parse_metrics(real(), taken_at=0.0).histograms[FAMILY]
    text = without(real(), FAMILY, "count")
    if strip_types:
        text = untyped(text)
    hist = parse_metrics(text, taken_at=0.0).histograms[FAMILY]
    assert full.count > 0
    assert hist.count == full.count == inf_bucket(real(), FAMILY)
    assert hist.buckets == full.buckets and hist.sum == full.sum
    assert histogram_mean(hist) == pytest.approx(full.sum / full.count)


@pytest.mark.parametrize("strip_types", [False, True], ids=["typed", "untyped"])
def test_no_sum_line_gives_no_mean(strip_types):
    full = parse_metrics(real(), taken_at=0.0).histograms[FAMILY]
    assert histogram_mean(full) == pytest.approx(full.sum / full.count) and full.sum > 0
    text = without(real(), FAMILY, "sum")
    if strip_types:
        text = untyped(text)
    hist = parse_metrics(text, taken_at=0.0).histograms[FAMILY]
    assert hist.count == full.count and hist.buckets == full.buckets
    assert hist.sum is None
    assert histogram_mean(hist) is None


def test_neither_count_nor_sum_still_counts_and_shows_no_mean():
    text = without(without(real(), FAMILY, "count"), FAMILY, "sum")
    hist = parse_metrics(text, taken_at=0.0).histograms[FAMILY]
    assert hist.count == inf_bucket(real(), FAMILY) and histogram_mean(hist) is None
    assert parse_metrics(text, taken_at=0.0).to_dict()["histograms"][FAMILY]["sum"] is None


def test_window_counts_from_inf_bucket_and_has_no_mean_without_sums():
    extra = 7.0
    cut = without(without(real(), FAMILY, "count"), FAMILY, "sum")
    window = MetricsWindow()
    assert window.update(parse_metrics(cut, taken_at=0.0)) is None
    ws = window.update(parse_metrics(later(cut, FAMILY, extra), taken_at=30.0))
    assert ws.ttft.count == extra and ws.ttft.sum is None
    assert histogram_mean(ws.ttft) is None
    lat = lf.latency(ws, "ttft", quantile_bound, histogram_mean)
    assert lat["count"] == int(extra) and lat["mean"] is None
    assert lat["p50"] is not None  # the buckets still tell the quantiles


def test_window_with_sums_keeps_its_mean():
    # the same window over the complete text: the anchor for the one above
    extra = 7.0
    a = parse_metrics(real(), taken_at=0.0)
    b = parse_metrics(later(real(), FAMILY, extra), taken_at=30.0)
    ws = window_stats(a, b)
    assert ws.ttft.count == extra and ws.ttft.sum == 0.0
    assert lf.latency(ws, "ttft", quantile_bound, histogram_mean)["mean"] == 0.0


def test_sum_appearing_or_vanishing_mid_window_gives_no_mean():
    extra = 3.0
    cut = without(real(), FAMILY, "sum")
    for first, second in ((real(), cut), (cut, real())):
        ws = window_stats(parse_metrics(first, taken_at=0.0), parse_metrics(later(second, FAMILY, extra), taken_at=5.0))
        assert ws.ttft.count == extra and ws.ttft.sum is None and histogram_mean(ws.ttft) is None


def test_console_shows_no_mean_without_sum():
    cut = without(real(), FAMILY, "sum")
    ws = window_stats(parse_metrics(cut, taken_at=0.0), parse_metrics(later(cut, FAMILY, 4.0), taken_at=30.0))
    view = latency_view(lf.latency(ws, "ttft", quantile_bound, histogram_mean))
    assert view is not None and view.mean is None and view.count == 4
    text = "".join(t for row in latency_rows("TTFT", view, "", DEFAULT_STYLES, 200) for t, _ in row.runs)
    assert "mean –" in text and "mean 0" not in text


def test_per_stream_speed_needs_a_sum():
    tpot_family = "time_per_output_token_seconds"
    full = parse_metrics(real(), taken_at=0.0).histograms[tpot_family]
    ws = SimpleNamespace(itl=None, tpot=full, elapsed_s=30.0)
    assert lf.per_stream(10.0, ws, None, None, 162, lf.Holder())["source"] == "tpot-histogram"
    cut = parse_metrics(without(real(), tpot_family, "sum"), taken_at=0.0).histograms[tpot_family]
    for ws in (SimpleNamespace(itl=None, tpot=cut, elapsed_s=30.0), SimpleNamespace(itl=cut, tpot=None, elapsed_s=30.0)):
        fig = lf.per_stream(10.0, ws, None, None, 162, lf.Holder())
        assert fig["source"] not in ("tpot-histogram", "itl-histogram") or fig["value"] is None


@pytest.mark.parametrize("name", sorted(p.name for p in REAL.glob("*.prom")))
def test_complete_real_text_agrees_with_prometheus_client(name):
    text = real(name)
    snap = parse_metrics(text, taken_at=0.0)
    seen = 0
    for family in text_string_to_metric_families(text):
        if family.type != "histogram" or not family.name.startswith("sglang:"):
            continue
        base = family.name[len("sglang:"):]
        hist = snap.histograms[base]
        parts = {"count": 0.0, "sum": 0.0}
        buckets = {}
        for sample in family.samples:
            part = sample.name[len(family.name) + 1:]
            if part == "bucket":
                le = float(sample.labels["le"])
                buckets[le] = buckets.get(le, 0.0) + sample.value
            else:
                parts[part] += sample.value
        assert hist.count == parts["count"] == buckets[math.inf]
        assert hist.sum == pytest.approx(parts["sum"])
        assert hist.buckets == sorted(buckets.items())
        assert histogram_mean(hist) == pytest.approx(parts["sum"] / parts["count"])
        seen += 1
    assert seen == sum(1 for line in text.splitlines() if line.startswith("# TYPE sglang:") and line.endswith(" histogram"))
