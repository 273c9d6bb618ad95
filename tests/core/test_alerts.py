"""The alert rules: each fires on its scenario after for_s and clears after clear_s, and none fires on a
steady server; the settings' alerts: section is read over the defaults with one sentence a problem."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from spectui.core.alerts import (DEFAULT_RULES, RECENT_FRAMES, REFERENCE_MIN, AlertConfig, AlertEngine, AlertInputs,
                                 GpuInput, ServerInput, alert_config, notify_webhook)


def server(**kw) -> ServerInput:
    base = dict(name="kimi-ngram", state="ready", speculative=True, queue_req=0, accept_source="metrics-counters")
    base.update(kw)
    return ServerInput(**base)


def run(engine: AlertEngine, frames, *, start=0.0, step=1.0):
    """Evaluate one input per second; every change with its time."""
    out = []
    for i, inputs in enumerate(frames):
        out += engine.evaluate(start + i * step, inputs)
    return out


def steady(n: int, accept=2.0, tps=60.0) -> list[AlertInputs]:
    frames = []
    for i in range(1, n + 1):
        frames.append(AlertInputs(servers=(server(accept_lengths=(accept,) * i, throughputs=(tps,) * i,
                                                  l_star=1.5, l_star_source="measured", queue_req=2),),
                                  gpus=(GpuInput(0, 70_000, 80_000),)))
    return frames


def test_a_steady_server_fires_nothing():
    assert run(AlertEngine(), steady(400)) == []


def test_below_break_even_fires_after_for_s_and_names_its_source():
    frames = [AlertInputs(servers=(server(accept_lengths=(1.4,), l_star=1.6, l_star_source="predicted"),))] * 40
    changes = run(AlertEngine(), frames)
    (fired,) = changes
    assert fired.kind == "fired" and fired.at == DEFAULT_RULES["below_break_even"].for_s
    assert fired.alert.subject == "kimi-ngram"
    assert "1.40 (metrics-counters)" in fired.alert.message and "L* 1.60 (predicted)" in fired.alert.message
    assert "speculation now costs throughput" in fired.alert.message


def test_an_alert_clears_only_after_clear_s_so_it_does_not_flap():
    below = AlertInputs(servers=(server(accept_lengths=(1.4,), l_star=1.6),))
    above = AlertInputs(servers=(server(accept_lengths=(1.8,), l_star=1.6),))
    engine = AlertEngine(alert_config({"below_break_even": {"for_s": 2, "clear_s": 3}})[0])
    changes = run(engine, [below] * 3 + [above, below] * 3 + [above] * 4)
    kinds = [(c.kind, c.at) for c in changes]
    assert kinds == [("fired", 2.0), ("cleared", 12.0)]


def test_no_l_star_or_no_fresh_frame_is_no_alarm():
    frames = [AlertInputs(servers=(server(accept_lengths=(None,), l_star=1.6),)),
              AlertInputs(servers=(server(accept_lengths=(1.0,), l_star=None),))] * 40
    assert run(AlertEngine(), frames) == []


def test_accept_collapse_against_its_own_level():
    history = [2.4] * (REFERENCE_MIN + 20)
    frames = []
    for _ in range(40):
        history.append(1.1)
        frames.append(AlertInputs(servers=(server(accept_lengths=tuple(history)),)))
    changes = [c for c in run(AlertEngine(), frames) if c.alert.rule == "accept_collapse"]
    assert changes and changes[0].kind == "fired"
    assert "fell to 1.10" in changes[0].alert.message and "from 2.40" in changes[0].alert.message
    # needs a reference first: a server that just started low is not a collapse
    short = [AlertInputs(servers=(server(accept_lengths=(2.4,) * 5 + (1.1,) * RECENT_FRAMES),))] * 60
    assert run(AlertEngine(), short) == []


def test_server_down_fires_at_once():
    (c,) = run(AlertEngine(), [AlertInputs(servers=(server(state="crashed"),))])
    assert c.kind == "fired" and c.at == 0 and c.alert.message == "kimi-ngram is crashed."


def test_gpu_memory_near_full():
    full = AlertInputs(gpus=(GpuInput(3, 79_500, 80_000), GpuInput(4, 60_000, 80_000)))
    changes = run(AlertEngine(), [full] * 61)
    (c,) = changes
    assert c.alert.subject == "GPU 3" and "(99%)" in c.alert.message


def test_throughput_collapse_only_while_requests_queue():
    history = [60.0] * (REFERENCE_MIN + 20) + [5.0] * 30
    queued = AlertInputs(servers=(server(throughputs=tuple(history), queue_req=8, speculative=False),))
    idle = AlertInputs(servers=(server(throughputs=tuple(history), queue_req=0, speculative=False),))
    (c,) = run(AlertEngine(), [queued] * 20)
    assert c.alert.rule == "throughput_collapse" and "8 requests queued" in c.alert.message
    assert run(AlertEngine(), [idle] * 20) == []


def test_settings_section_over_the_defaults():
    config, problems = alert_config({"gpu_memory": {"fraction": 0.9, "for_s": 5}, "accept_collapse": False,
                                     "bell": True, "webhook": "https://example.org/hook"})
    assert problems == []
    assert config.rules["gpu_memory"].fraction == 0.9 and config.rules["gpu_memory"].for_s == 5
    assert not config.rules["accept_collapse"].enabled and config.rules["server_down"].enabled
    assert config.bell and config.webhook == "https://example.org/hook"


@pytest.mark.parametrize("data, where, words", [
    ({"gpu_mem": {}}, ("alerts", "gpu_mem"), "unknown alert rule 'gpu_mem'"),
    ({"gpu_memory": {"fraction": 2}}, ("alerts", "gpu_memory", "fraction"), "above 0 and at most 1"),
    ({"server_down": {"ratio": 0.5}}, ("alerts", "server_down", "ratio"), "has no ratio"),
    ({"webhook": "ftp://x"}, ("alerts", "webhook"), "http:// or https://"),
    ({"below_break_even": {"for_s": "soon"}}, ("alerts", "below_break_even", "for_s"), "a number"),
])
def test_a_bad_setting_is_one_sentence_and_keeps_its_default(data, where, words):
    config, problems = alert_config(data)
    ((fpath, sentence),) = problems
    assert fpath == where and words in sentence
    assert config.rules == AlertConfig().rules


def test_the_webhook_posts_the_change_as_json():
    got = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.handle_request, daemon=True).start()
    (change,) = run(AlertEngine(), [AlertInputs(servers=(server(state="unresponsive"),))])
    notify_webhook(f"http://127.0.0.1:{srv.server_port}/", change).join(10)
    srv.server_close()
    assert got == [{"source": "spectui", **change.to_dict()}]
    assert got[0]["kind"] == "fired" and got[0]["rule"] == "server_down"


def test_a_dead_webhook_is_logged_not_raised(caplog):
    (change,) = run(AlertEngine(), [AlertInputs(servers=(server(state="failed"),))])
    notify_webhook("http://127.0.0.1:9/", change, timeout_s=2).join(10)
    assert any("alert webhook" in r.getMessage() for r in caplog.records)
