"""`spectui recording info|export`: a recording's series as CSV, JSON and OpenMetrics text that the Prometheus
client library's own parser reads back, a time range, stale figures left out, the shipped Grafana dashboard
reading only series the export writes, and one sentence for a bad file."""

from __future__ import annotations

import csv
import json
import re
from importlib import resources

from prometheus_client.openmetrics.parser import text_string_to_metric_families

from spectui.cli.main import main
from spectui.core.recording import RecordingWriter
from spectui.core.recording_export import HELP


class Clock:
    t = 1_764_496_800.0

    def __call__(self):
        return self.t


def record(path):
    clock = Clock()
    w = RecordingWriter(path, {"host": {"hostname": "gpu-box"}, "target": "root@gpu-box"}, clock=clock)
    for i in range(20):
        clock.t += 1.0
        stale = i == 7
        w.write("server_frame", {
            "name": "kimi-eagle3", "seq": i, "state": "ready", "running_req": 1, "queue_req": 0,
            "accept_length": {"value": 2.0 + i / 100, "source": "metrics-counters", "stale": stale},
            "accept_rate": [{"value": 0.33, "formula": "drafts-only"},
                            {"value": 0.5, "formula": "incl-bonus/draft-tokens"}],
            "gen_throughput": {"value": 58.0 + i, "source": "realtime-counter"},
            "per_stream": {"value": 60.0, "source": "itl-histogram", "held": True}})
        w.write("gpu", {"seq": i, "gpus": [{"index": 0, "util_pct": 90.0, "mem_used_mib": 70000.0, "power_w": 400.0}]})
    w.write("l_star", {"server": "kimi-eagle3", "value": 1.62, "source": "measured"})
    w.write("alert", {"kind": "fired", "rule": "below_break_even", "subject": "kimi-eagle3", "message": "x"})
    w.close()


def test_prometheus_export_parses_with_the_client_library(tmp_path, capsys):
    record(tmp_path / "s.gz")
    out = tmp_path / "s.om"
    assert main(["recording", "export", str(tmp_path / "s.gz"), "--format", "prometheus", "-o", str(out)]) == 0
    fams = {f.name: f for f in text_string_to_metric_families(out.read_text())}
    accept = fams["spectui_accept_length"].samples
    assert len(accept) == 19                        # the stale frame is not a measurement
    assert {s.labels["source"] for s in accept} == {"metrics-counters"}
    assert accept[0].value == 2.0 and float(accept[0].timestamp) == Clock.t + 1.0
    assert "spectui_per_stream_tok_s" not in fams   # held every time: nothing new was measured
    assert {s.labels["formula"] for s in fams["spectui_accept_rate"].samples} == {"drafts-only",
                                                                                "incl-bonus/draft-tokens"}
    assert fams["spectui_gpu_memory_used_bytes"].unit == "bytes"
    assert fams["spectui_gpu_memory_used_bytes"].samples[0].value == 70000.0 * 1024 * 1024
    assert fams["spectui_break_even_accept_length"].samples[0].value == 1.62
    assert fams["spectui_alert"].samples[0].labels == {"host": "root@gpu-box", "rule": "below_break_even",
                                                       "subject": "kimi-eagle3"}
    assert {s.labels["host"] for f in fams.values() for s in f.samples} == {"root@gpu-box"}


def test_csv_and_json_and_a_time_range(tmp_path, capsys):
    record(tmp_path / "s.gz")
    assert main(["recording", "export", str(tmp_path / "s.gz"), "--format", "csv", "-o", str(tmp_path / "csv"),
                 "--from", "5", "--to", "9"]) == 0
    path = tmp_path / "csv" / "spectui_gen_throughput_tok_s-host=root_gpu-box-server=kimi-eagle3-source=realtime-counter.csv"
    rows = list(csv.DictReader(path.open()))
    assert [float(r["spectui_gen_throughput_tok_s"]) for r in rows] == [62.0, 63.0, 64.0, 65.0, 66.0]
    assert main(["recording", "export", str(tmp_path / "s.gz"), "--format", "json", "-o", str(tmp_path / "s.json")]) == 0
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["host"] == {"hostname": "gpu-box"}
    (tp,) = [s for s in doc["series"] if s["metric"] == "spectui_gen_throughput_tok_s"]
    assert len(tp["points"]) == 20


def test_info_and_bad_files(tmp_path, capsys):
    record(tmp_path / "s.gz")
    assert main(["recording", "info", str(tmp_path / "s.gz")]) == 0
    out = capsys.readouterr().out
    assert "gpu-box" in out and "20 server_frame" in out and "alerts fired: 1 (below_break_even)" in out
    (tmp_path / "notes.txt").write_text("baseline 82 tok/s")
    assert main(["recording", "info", str(tmp_path / "notes.txt")]) == 1
    assert capsys.readouterr().err == (f"spectui: {tmp_path / 'notes.txt'} is not a spectui recording (it is empty "
                                       "or not gzip-compressed).\n")
    assert main(["recording", "export", str(tmp_path / "s.gz"), "--format", "csv", "-o", "x", "--from", "9",
                 "--to", "2"]) == 2
    assert "before --from" in capsys.readouterr().err


def test_the_grafana_dashboard_reads_only_exported_series():
    dash = json.loads(resources.files("spectui.data").joinpath("grafana/spectui.json").read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    names = {m for e in exprs for m in re.findall(r"\bspectui_[a-z_]+", e)}
    assert names and names <= set(HELP)
    titles = " / ".join(p["title"] for p in dash["panels"])
    for words in ("break-even", "per stream and aggregate", "Accept rate", "GPU"):
        assert words in titles
