"""A real Prometheus (Debian's ``prometheus``) scrapes ``spectui exporter --demo`` every second: every query of the
shipped Grafana dashboard returns data through Prometheus's HTTP API, and the shipped alerting rule fires on the
demo's EAGLE-3, which accepts about 2.0 tokens a step below its measured break-even L* (about 2.7 to 2.9).

The demo host runs the plain profile, then kimi-eagle3, each under the exporter's demo traffic (one request at a
time), so that L* is measured as the console measures it. The rule file is loaded with ``for: 1s`` instead of the
shipped ``30s`` (the test's only change to it), so that it fires within the test. Every process the test starts
is ended by its id; the simulated servers are stopped with ``spectui servers stop``.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from importlib import resources

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support import ports
from tests.support.ports import free_port

NEEDS = "the Debian package prometheus is not installed: apt-get install prometheus (it brings prometheus and promtool)"
RULE = "SpectuiAcceptLengthBelowBreakEven"


def free_port_base(count: int = 4) -> int:
    """``count`` free ports in a row for the demo's ``--port-base``, in a range of this test worker's own, apart
    from the console's tests' ranges."""
    return ports.free_port_base(count, start=45000, span=500)


def get(url: str, timeout: float = 5.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:   # noqa: S310 (a local URL the test built)
        return r.read().decode()


def wait(what: str, fn, deadline_s: float, every_s: float = 0.5):
    end = time.monotonic() + deadline_s
    last = None
    while time.monotonic() < end:
        try:
            last = fn()
        except OSError as exc:   # not listening yet
            last = exc
        if last and not isinstance(last, Exception):
            return last
        time.sleep(every_s)
    raise AssertionError(f"{what}: not within {deadline_s:g} s (last: {last!r})")


def metrics(url: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(get(url))}


def samples(fams: dict, name: str, **labels) -> list:
    return [s for s in (fams[name].samples if name in fams else []) if all(s.labels.get(k) == v
                                                                           for k, v in labels.items())]


class Runs:
    """Processes the test started, ended by their id when it ends."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def start(self, argv: list[str], log) -> subprocess.Popen:
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(p)
        return p

    def end(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(5)


def spectui(*args: str) -> list[str]:
    return [sys.executable, "-m", "spectui", *args]


def query(prom: str, expr: str) -> list:
    doc = json.loads(get(f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
    assert doc["status"] == "success", (expr, doc)
    return doc["data"]["result"]


def dashboard_queries() -> list[str]:
    dash = json.loads(resources.files("spectui.data").joinpath("grafana/spectui.json").read_text())
    return [t["expr"].replace("$host", ".*").replace("$server", ".*")
            for p in dash["panels"] for t in p["targets"]]


@pytest.mark.timeout(900)  # its own waits bound it: a connection, two switches, the frames, two scrapes, the rule
def test_prometheus_scrapes_the_exporter_reads_every_dashboard_query_and_fires_the_rule(tmp_path):
    prometheus = shutil.which("prometheus")
    assert prometheus, NEEDS
    state, base = str(tmp_path / "demo"), str(free_port_base())
    host = ["--demo", "--state-dir", state, "--port-base", base]
    runs = Runs()
    log = open(tmp_path / "exporter.log", "w")
    try:
        port = free_port()
        runs.start(spectui("exporter", *host, "--listen", f"127.0.0.1:{port}"), log)
        url = f"http://127.0.0.1:{port}/metrics"
        wait("the exporter's first connection", lambda: samples(metrics(url), "spectui_host_connected"), 120)

        # the plain server at one request (the demo traffic), then kimi-eagle3: L* is measured as in the console
        switch = lambda name: subprocess.run(spectui("servers", "switch", name, *host, "--yes"),  # noqa: E731
                                             capture_output=True, text=True, timeout=300)
        done = switch("kimi-baseline")
        assert done.returncode == 0, done.stdout + done.stderr
        seen: set[float] = set()

        def plain_frames():
            fams = metrics(url)
            if [s.value for s in samples(fams, "spectui_running_requests", server="kimi-baseline")] == [1.0]:
                seen.update(s.value for s in samples(fams, "spectui_per_stream_tok_s", server="kimi-baseline"))
            return len(seen) >= 16
        wait("frames of kimi-baseline at one request", plain_frames, 180, every_s=0.4)
        done = switch("kimi-eagle3")
        assert done.returncode == 0, done.stdout + done.stderr
        lstar = wait("kimi-eagle3's measured L*", lambda: samples(
            metrics(url), "spectui_break_even_accept_length", server="kimi-eagle3"), 180)
        accept = wait("kimi-eagle3's accept length", lambda: samples(
            metrics(url), "spectui_accept_length", server="kimi-eagle3"), 60)
        assert accept[0].value < lstar[0].value, (accept, lstar)

        # a real Prometheus: every second, the shipped rule with for: 1s
        rules = resources.files("spectui.data").joinpath("prometheus/spectui-alerts.yml").read_text()
        fast, n = re.subn(r"(?m)^(\s+for:) 30s$", r"\1 1s", rules)
        assert n == 1, "the shipped rule's for: 30s was not found"
        (tmp_path / "rules.yml").write_text(fast)
        (tmp_path / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"rule_files: [{tmp_path / 'rules.yml'}]\n"
            f"scrape_configs:\n  - job_name: spectui\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n")
        check = subprocess.run(["promtool", "check", "config", str(tmp_path / "prometheus.yml")],
                               capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr
        web = free_port()
        runs.start([prometheus, f"--config.file={tmp_path / 'prometheus.yml'}",
                    f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{web}"],
                   open(tmp_path / "prometheus.log", "w"))
        prom = f"http://127.0.0.1:{web}"
        wait("two scrapes of the exporter", lambda: [r for r in query(
            prom, 'count_over_time(spectui_host_connected{job="spectui"}[5m])') if float(r["value"][1]) >= 2], 120)
        empty = [e for e in dashboard_queries() if not query(prom, e)]
        assert not empty, f"dashboard queries without data: {empty}"

        def firing():
            doc = json.loads(get(f"{prom}/api/v1/alerts"))
            return [a for a in doc["data"]["alerts"] if a["labels"].get("alertname") == RULE
                    and a["labels"].get("server") == "kimi-eagle3" and a["state"] == "firing"]
        (alert,) = wait(f"{RULE} firing on kimi-eagle3", firing, 60)
        assert float(alert["value"]) < lstar[0].value + 0.5
    finally:
        runs.end()
        subprocess.run(spectui("servers", "stop", *host, "--yes"), capture_output=True, timeout=120)
        log.close()
