"""The live exporter and a recording's Prometheus export name the same figures alike: the same frames, the same
GPU sample, the same L* and alert give the same series (metric and label names), so one Grafana dashboard reads
both; the dashboard's every series is one both write."""

from __future__ import annotations

import json
import re
import time
from importlib import resources

from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families

from spectui.core.recording import RecordingWriter, read_recording
from spectui.core.recording_export import HELP, LIVE_ONLY, series, to_openmetrics
from tests.exporter.test_exporter_metrics import EAGLE, fed_host, frame, scrape


def shapes(pairs) -> set[tuple[str, tuple[str, ...]]]:
    return {(name, tuple(sorted(labels))) for name, labels in pairs}


def test_a_recording_exports_the_series_the_exporter_serves(tmp_path):
    host = fed_host(tmp_path)
    live = scrape([host])
    path = tmp_path / "s.spectui.gz"
    w = RecordingWriter(path, {"host": {"hostname": "gpu-box"}, "target": host.label})
    for i in range(3):
        w.write("server_frame", frame("kimi-eagle3", i, accept=2.06, spec=EAGLE))
    w.write("gpu", {"seq": 1, "t": time.time(), "source": "sim", "gpus": [
        {"index": 0, "util_pct": 91.0, "mem_used_mib": 70000.0, "mem_total_mib": 81920.0, "power_w": 612.0}]})
    w.write("l_star", {"server": "kimi-eagle3", "value": 2.58, "source": "measured"})
    w.write("alert", {"kind": "fired", "rule": "below_break_even", "subject": "kimi-eagle3", "message": "x"})
    w.close()
    text = to_openmetrics(series(read_recording(path)))
    exported = {f.name: f for f in openmetrics_families(text)}
    assert set(exported) == set(HELP) - set(LIVE_ONLY)
    live_shapes = shapes((n, s.labels) for n, f in live.items() for s in f.samples
                         if n not in LIVE_ONLY and s.labels.get("server", "kimi-eagle3") == "kimi-eagle3")
    exported_shapes = shapes((n, s.labels) for n, f in exported.items() for s in f.samples)
    assert exported_shapes == live_shapes
    hosts = {s.labels["host"] for f in exported.values() for s in f.samples}
    assert hosts == {host.label}


def test_the_dashboard_reads_series_both_forms_write():
    dash = json.loads(resources.files("spectui.data").joinpath("grafana/spectui.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    names = {m for e in exprs for m in re.findall(r"\bspectui_[a-z_]+", e)}
    assert names == set(HELP) - set(LIVE_ONLY)
