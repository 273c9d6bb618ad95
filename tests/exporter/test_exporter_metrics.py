"""``spectui exporter``'s /metrics text, read back with prometheus_client's own parser: a link fed the agent's
events exactly as a host sends them (no host runs), a scrape taken from another thread as an HTTP server's is."""

from __future__ import annotations

import asyncio
import time

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from spectui.core.alerts import AlertConfig, AlertEngine, RuleConfig
from spectui.core.exporter import Exporter, WatchedHost, collector
from spectui.core.live import HostLink, LinkState
from spectui.core.recording_export import HELP, LIVE_ONLY
from spectui.core.rpc import Event
from spectui.core.session import HostTarget

EAGLE = {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4}
PLAIN_TOK_S = 80.0
SPEC_TOK_S_PER_ACCEPT = 31.0   # a verify step takes 1/31 s at one request, a plain step 1/80 s


def record(name: str, state: str, spec: dict | None) -> dict:
    args = {"speculative-algorithm": spec["algorithm"]} if spec else {}
    return {"name": name, "state": state, "pid": 4000, "port": 30000, "gpus": [0], "origin": "spectui",
            "started_at": time.time() - 60, "ready_at": time.time() - 59, "profile": {"args": args}}


def frame(name: str, seq: int, *, accept: float | None, spec: dict | None) -> dict:
    tok_s = SPEC_TOK_S_PER_ACCEPT * accept if accept else PLAIN_TOK_S
    return {"name": name, "seq": seq, "t": time.time(), "state": "ready",
            "accept_length": {"value": accept, "source": "metrics-counters"} if accept else None,
            "accept_rate": [{"value": 0.35, "formula": "drafts-only", "source": "derived"}] if accept else [],
            "gen_throughput": {"value": tok_s, "source": "realtime-counter"},
            "per_stream": {"value": tok_s, "source": "itl-histogram"},
            "running_req": 1, "queue_req": 0,
            "ttft_ms": {"p50": 100.0, "p50_rel": "<", "p99": 250.0, "mean": 61.0, "count": 40},
            "itl_ms": {"p50": 12.5, "p99": 19.5, "mean": 12.3, "count": 900},
            "speculative": spec or {}, "version": "0.5.23"}


def fed_host(tmp_path) -> WatchedHost:
    link = HostLink(HostTarget.demo(str(tmp_path / "demo")))
    link.state = LinkState.CONNECTED   # as after the session opened; the events below are what the host sends
    emit = lambda name, data: link._on_event(Event(name, data, time.time()))  # noqa: E731
    emit("server", record("kimi-baseline", "ready", None))
    for i in range(14):
        emit("server_frame", frame("kimi-baseline", i, accept=None, spec=None))
    emit("server", record("kimi-baseline", "stopped", None))
    emit("server", record("kimi-eagle3", "ready", EAGLE))
    for i in range(14):
        emit("server_frame", frame("kimi-eagle3", i, accept=2.06, spec=EAGLE))
    emit("gpu", {"seq": 1, "t": time.time(), "source": "sim", "gpus": [
        {"index": 0, "util_pct": 91.0, "mem_used_mib": 70000.0, "mem_total_mib": 81920.0, "power_w": 612.0}]})
    rules = AlertConfig(rules={"below_break_even": RuleConfig(for_s=0.0), "server_down": RuleConfig(for_s=0.0)})
    return WatchedHost(link, alerts=AlertEngine(rules, host=link.target.label))


def scrape(hosts: list[WatchedHost]) -> dict:
    """One scrape's families, by name: the text taken in a worker thread while the loop serves the snapshot."""
    async def go() -> str:
        exporter = Exporter(hosts)
        exporter.loop = asyncio.get_running_loop()
        for h in hosts:
            h.evaluate(time.time())
        registry = CollectorRegistry(auto_describe=False)
        registry.register(collector(exporter))
        return (await asyncio.get_running_loop().run_in_executor(None, generate_latest, registry)).decode()
    text = asyncio.run(go())
    return {f.name: f for f in text_string_to_metric_families(text)}


def samples(fams: dict, name: str) -> list:
    return fams[name].samples if name in fams else []


def test_every_figure_is_a_named_series_with_its_host_and_source(tmp_path):
    host = fed_host(tmp_path)
    fams = scrape([host])
    assert set(fams) == set(HELP)
    assert all(fams[n].documentation == HELP[n] for n in fams)
    label = host.label
    (accept,) = samples(fams, "spectui_accept_length")
    assert accept.labels == {"host": label, "server": "kimi-eagle3", "source": "metrics-counters"}
    assert accept.value == 2.06
    (lstar,) = samples(fams, "spectui_break_even_accept_length")
    assert lstar.labels["source"] == "measured"
    # L* = verify step time / plain step time, both at one request
    assert abs(lstar.value - (2.06 / (SPEC_TOK_S_PER_ACCEPT * 2.06)) / (1 / PLAIN_TOK_S)) < 0.01
    (rate,) = samples(fams, "spectui_accept_rate")
    assert rate.labels == {"host": label, "server": "kimi-eagle3", "formula": "drafts-only", "source": "derived"}
    # a stopped server's last frame is no live figure
    assert {s.labels["server"] for s in samples(fams, "spectui_per_stream_tok_s")} == {"kimi-eagle3"}
    ttft = {s.labels["stat"]: s.value for s in samples(fams, "spectui_ttft_seconds")}
    assert ttft == {"0.5": 0.1, "0.99": 0.25, "mean": 0.061}
    states = {(s.labels["server"], s.labels["state"]) for s in samples(fams, "spectui_server_state") if s.value == 1}
    assert states == {("kimi-baseline", "stopped"), ("kimi-eagle3", "ready")}
    (mem,) = samples(fams, "spectui_gpu_memory_used_bytes")
    assert mem.value == 70000.0 * 1024 * 1024 and mem.labels == {"host": label, "gpu": "0"}
    assert [s.value for s in samples(fams, "spectui_gpu_power_watts")] == [612.0]
    alerts = {(s.labels["rule"], s.labels["subject"]): s.value for s in samples(fams, "spectui_alert")}
    assert alerts[("below_break_even", "kimi-eagle3")] == 1.0   # 2.06 is below L*
    assert alerts[("server_down", "kimi-eagle3")] == 0.0          # judged, not firing
    assert [s.value for s in samples(fams, "spectui_host_connected")] == [1.0]


def test_a_lost_link_shows_no_live_figures_but_says_it_is_down(tmp_path):
    host = fed_host(tmp_path)
    host.link.state = LinkState.RECONNECTING
    fams = scrape([host])
    assert [s.value for s in samples(fams, "spectui_host_connected")] == [0.0]
    for name in ("spectui_accept_length", "spectui_per_stream_tok_s", "spectui_gpu_utilization_percent"):
        assert samples(fams, name) == [], name


def test_the_live_only_series_are_the_exporters_own():
    assert set(LIVE_ONLY) <= set(HELP)
