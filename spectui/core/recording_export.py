"""A recording, or a time range of it, as series: CSV or JSON per series, or OpenMetrics text for Prometheus.

Series (one sample per recorded frame; a stale or held figure is not a new measurement and is left out,
as the console's charts leave a gap); every one carries ``host``, the recording's target. They are the
series ``spectui exporter`` serves live (:mod:`spectui.core.exporter`, docs/exporter.md), under the same
names and labels::

    spectui_accept_length{host, server, source}          accept length, with the frame's source
    spectui_accept_rate{host, server, formula, source}   each accept-rate formula the frame carries
    spectui_gen_throughput_tok_s{host, server, source}   aggregate generation tok/s
    spectui_per_stream_tok_s{host, server, source}       per-stream tok/s
    spectui_running_requests{host, server} / spectui_queued_requests{host, server}
    spectui_ttft_seconds{host, server, stat} / spectui_itl_seconds{host, server, stat}   stat 0.5, 0.99, mean
    spectui_server_state{host, server, state}            1 for the frame's state, 0 for the others
    spectui_gpu_utilization_percent{host, gpu} / spectui_gpu_memory_used_bytes{host, gpu} /
    spectui_gpu_memory_total_bytes{host, gpu} / spectui_gpu_power_watts{host, gpu}
    spectui_break_even_accept_length{host, server, source}  L*, measured or predicted, as the console showed it
    spectui_alert{host, rule, subject}                   1 while an alert is active, 0 when it clears

A figure that is not finite (``NaN``, an infinity: a gauge the host could not read) is not a sample and is
left out of every form. CSV cells that a spreadsheet would run as a formula (starting ``=``, ``+``, ``-`` or
``@``, as OWASP's CSV injection guidance lists) are written as text, behind a single quote; a number stays a
number. Every file is created new and private (0600; a folder created for CSV is 0700), never through a
link; one that exists is replaced only when asked (``replace``), by a new file put in its place.

The Prometheus form is OpenMetrics text with timestamps, which ``promtool tsdb create-blocks-from
openmetrics FILE DIR`` loads into an existing Prometheus (https://prometheus.io/docs/prometheus/latest/storage/#backfilling-from-openmetrics-format);
the Grafana dashboard shipped in ``spectui/data/grafana/spectui.json`` reads these names.
"""

from __future__ import annotations

import csv
import errno
import hashlib
import io
import json
import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from spectui.agent.protocol import SERVER_STATES
from spectui.core.recording import Recording, create_new, private_folder

FORMATS = ("csv", "json", "prometheus")
#: Every series name of spectui's Prometheus forms (this export and ``spectui exporter``) with its help text.
HELP = {
    "spectui_host_connected": "1 while spectui's link to the host is connected, else 0",
    "spectui_server_state": "1 for the state the server is in (label state), 0 for the others",
    "spectui_server_info": "1 for each server the host lists, labelled with its speculative algorithm",
    "spectui_accept_length": "speculative accept length (tokens per verify step) as the console showed it",
    "spectui_accept_rate": "accept rate, labelled with its formula and source",
    "spectui_break_even_accept_length": "break-even accept length L* (measured or predicted)",
    "spectui_gen_throughput_tok_s": "aggregate generation throughput in tokens per second",
    "spectui_per_stream_tok_s": "per-stream generation throughput in tokens per second",
    "spectui_running_requests": "requests running on the server",
    "spectui_queued_requests": "requests waiting in the server's queue",
    "spectui_ttft_seconds": "time to first token: the quantiles (stat 0.5, 0.99) and mean the console showed",
    "spectui_itl_seconds": "inter-token latency: the quantiles (stat 0.5, 0.99) and mean the console showed",
    "spectui_gpu_utilization_percent": "GPU utilization in percent",
    "spectui_gpu_memory_used_bytes": "GPU memory in use in bytes",
    "spectui_gpu_memory_total_bytes": "GPU memory in total in bytes",
    "spectui_gpu_power_watts": "GPU power draw in watts",
    "spectui_alert": "1 while a spectui alert is active, 0 once it cleared",
}
#: The series only a live exporter has (a recording holds no link state): every other name is in both forms.
LIVE_ONLY = ("spectui_host_connected", "spectui_server_info")
UNITS = {"spectui_gpu_memory_used_bytes": "bytes", "spectui_gpu_memory_total_bytes": "bytes",
         "spectui_gpu_power_watts": "watts", "spectui_ttft_seconds": "seconds", "spectui_itl_seconds": "seconds"}
#: A frame's latency figures (``ttft_ms``, ``itl_ms``) and their ``stat`` label.
LATENCY_STATS = (("p50", "0.5"), ("p99", "0.99"), ("mean", "mean"))
#: What a spreadsheet reads as the start of a formula (OWASP, CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
#: The longest series file name kept as it is; a longer one is cut and made unique with a hash.
NAME_MAX = 160
MIB = 1024.0 * 1024.0


@dataclass
class Series:
    metric: str
    labels: tuple[tuple[str, str], ...]
    points: list[tuple[float, float]] = field(default_factory=list)   # (unix time, value)

    @property
    def name(self) -> str:
        """A file-safe name, e.g. ``spectui_accept_length-server=kimi-eagle3-source=metrics-counters``."""
        parts = [self.metric, *(f"{k}={v}" for k, v in self.labels)]
        name = re.sub(r"[^A-Za-z0-9_.=-]+", "_", "-".join(parts))
        if len(name) > NAME_MAX:
            name = name[:NAME_MAX] + "-" + hashlib.sha256("-".join(parts).encode()).hexdigest()[:12]
        return name


def _fresh(m: object) -> float | None:
    if not isinstance(m, dict):
        return None
    v = m.get("value")
    if m.get("stale") or m.get("held") or not isinstance(v, (int, float)) or isinstance(v, bool) or math.isnan(v):
        return None
    return float(v)


def series(rec: Recording, start_s: float = 0.0, end_s: float | None = None) -> list[Series]:
    """Every series of ``rec`` between ``start_s`` and ``end_s`` (seconds since the recording began)."""
    t0 = float(rec.header.get("started", 0.0))
    host = str(rec.header.get("target") or "unknown")
    out: dict[tuple[str, tuple], Series] = {}

    def add(metric: str, labels: dict[str, object], t: float, value: float | None) -> None:
        if value is None or not math.isfinite(value):
            return
        key = (metric, tuple((k, str(v)) for k, v in {"host": host, **labels}.items()))
        s = out.get(key)
        if s is None:
            s = out[key] = Series(metric, key[1])
        s.points.append((t0 + t, value))

    for t, ev, d in rec.between(start_s, end_s):
        if not isinstance(d, dict):
            continue
        if ev == "server_frame":
            _frame_series(add, d, t)
        elif ev == "gpu":
            for g in d.get("gpus") or ():
                idx = g.get("index")
                for metric, key, scale in (("spectui_gpu_utilization_percent", "util_pct", 1.0),
                                           ("spectui_gpu_memory_used_bytes", "mem_used_mib", MIB),
                                           ("spectui_gpu_memory_total_bytes", "mem_total_mib", MIB),
                                           ("spectui_gpu_power_watts", "power_w", 1.0)):
                    add(metric, {"gpu": idx}, t, finite_number(g.get(key), scale))
        elif ev == "l_star":
            v = d.get("value")
            add("spectui_break_even_accept_length", {"server": d.get("server"), "source": d.get("source") or "measured"},
                t, float(v) if isinstance(v, (int, float)) else None)
        elif ev == "alert" and d.get("kind") in ("fired", "cleared"):
            add("spectui_alert", {"rule": d.get("rule"), "subject": d.get("subject")}, t,
                1.0 if d["kind"] == "fired" else 0.0)
    return list(out.values())


def finite_number(v: object, scale: float = 1.0) -> float | None:
    """A finite number of a frame, scaled; else None (``bool`` is not one)."""
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
        return None
    return float(v) * scale


def latency(d: object) -> list[tuple[str, float]]:
    """A frame's ``ttft_ms`` or ``itl_ms`` as ``(stat, seconds)``: each figure the console shows (a quantile the
    host's histogram only bounds is its bucket's edge, as the console shows ``< 100 ms``); none for a window
    without requests."""
    if not isinstance(d, dict) or not d.get("count"):
        return []
    return [(stat, v) for key, stat in LATENCY_STATS if (v := finite_number(d.get(key), 0.001)) is not None]


def _frame_series(add, d: dict, t: float) -> None:
    """The series of one ``server_frame``."""
    name = d.get("name", "?")
    for metric, key in (("spectui_accept_length", "accept_length"),
                        ("spectui_gen_throughput_tok_s", "gen_throughput"),
                        ("spectui_per_stream_tok_s", "per_stream")):
        m = d.get(key)
        add(metric, {"server": name, "source": (m or {}).get("source") or "unknown"}, t, _fresh(m))
    for r in d.get("accept_rate") or ():
        r = r if isinstance(r, dict) else {}
        add("spectui_accept_rate", {"server": name, "formula": r.get("formula") or "unknown",
                                    "source": r.get("source") or "unknown"}, t, _fresh(r))
    for metric, key in (("spectui_running_requests", "running_req"), ("spectui_queued_requests", "queue_req")):
        add(metric, {"server": name}, t, finite_number(d.get(key)))
    for metric, key in (("spectui_ttft_seconds", "ttft_ms"), ("spectui_itl_seconds", "itl_ms")):
        for stat, value in latency(d.get(key)):
            add(metric, {"server": name, "stat": stat}, t, value)
    if isinstance(d.get("state"), str):
        for state in SERVER_STATES:
            add("spectui_server_state", {"server": name, "state": state}, t, float(state == d["state"]))


def cell(text: str) -> str:
    """``text`` as a CSV cell no spreadsheet runs: a formula's first character behind a single quote."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def to_csv(s: Series) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["time", *(cell(k) for k, _ in s.labels), s.metric])
    for t, v in s.points:   # the time and the value are numbers spectui formats: never a formula
        w.writerow([f"{t:.3f}", *(cell(v_) for _, v_ in s.labels), repr(v)])
    return buf.getvalue()


def to_json(all_series: Iterable[Series], header: dict) -> str:
    return json.dumps({"host": header.get("host"), "target": header.get("target"), "started": header.get("started"),
                       "series": [{"metric": s.metric, "labels": dict(s.labels), "points": s.points}
                                  for s in all_series]}, indent=1)


def _label_value(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def to_openmetrics(all_series: Iterable[Series]) -> str:
    by_metric: dict[str, list[Series]] = {}
    for s in all_series:
        by_metric.setdefault(s.metric, []).append(s)
    lines: list[str] = []
    for metric in sorted(by_metric):
        lines.append(f"# TYPE {metric} gauge")
        if metric in UNITS:
            lines.append(f"# UNIT {metric} {UNITS[metric]}")
        lines.append(f"# HELP {metric} {HELP.get(metric, metric)}")
        for s in by_metric[metric]:
            labels = ",".join(f'{k}="{_label_value(v)}"' for k, v in s.labels)
            for t, v in s.points:
                lines.append(f"{metric}{{{labels}}} {v!r} {t:.3f}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def _folder(path: Path, *, follow: bool) -> int:
    """A descriptor of the folder ``path`` (created 0700 when missing); unless ``follow``, never through a link
    (``ELOOP``)."""
    private_folder(path)
    flags = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
    return os.open(path, flags if follow else flags | getattr(os, "O_NOFOLLOW", 0))


def write_new(folder: int, name: str, text: str, *, replace: bool = False) -> None:
    """Write ``name`` in the folder ``folder`` (a descriptor) as a new private file. Where ``name`` exists,
    ``FileExistsError``; with ``replace``, a new file takes its place (a link is replaced, never followed)."""
    target = f".{name}.{os.getpid()}.tmp" if replace else name
    fd = create_new(Path(target), dir_fd=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if replace:
            os.replace(target, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        if replace:
            os.unlink(target, dir_fd=folder)
        raise


def export(rec: Recording, fmt: str, out: Path, *, start_s: float = 0.0, end_s: float | None = None,
           replace: bool = False) -> list[Path]:
    """Write ``rec`` as ``fmt`` under ``out`` (a folder for CSV, one file otherwise); the paths written.

    Raises ``FileExistsError`` for a file that exists (unless ``replace``), ``OSError`` (``ELOOP``) for a CSV
    folder that is a link. CSV writes nothing unless every file can be written new."""
    all_series = series(rec, start_s, end_s)
    if fmt == "csv":
        files = _csv_files(all_series)
        folder = _folder(out, follow=False)
        try:
            if not replace:
                taken = sorted(set(os.listdir(folder)) & set(files))
                if taken:
                    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(out / taken[0]))
            for name, text in files.items():
                write_new(folder, name, text, replace=replace)
        finally:
            os.close(folder)
        return [out / name for name in files]
    text = to_json(all_series, rec.header) if fmt == "json" else to_openmetrics(all_series)
    folder = _folder(out.parent, follow=True)   # the user's folder, wherever it is; the file itself is new
    try:
        write_new(folder, out.name, text, replace=replace)
    finally:
        os.close(folder)
    return [out]


def _csv_files(all_series: list[Series]) -> dict[str, str]:
    """``{file name: CSV}``, every series in its own file: names that came out the same (labels differing only
    in characters a file name cannot hold) are numbered."""
    out: dict[str, str] = {}
    for s in all_series:
        name, n = f"{s.name}.csv", 1
        while name in out:
            n += 1
            name = f"{s.name}-{n}.csv"
        out[name] = to_csv(s)
    return out
