"""An alert tells the truth for as long as it is shown: it ends when its server stops, when the host serves
another server, or when its condition ends; while it fires its sentence carries the value of the last
evaluation; the history keeps what it said when it fired, its values, and when and why it ended."""

from __future__ import annotations

from types import SimpleNamespace

from spectui.core.alerts import FRESH_S, AlertConfig, AlertEngine, AlertInputs, RuleConfig, ServerInput, inputs_from_link
from spectui.core.server_frames import ServerFrame, ServerSeries

FAST = AlertConfig(rules={"below_break_even": RuleConfig(for_s=0.0, clear_s=5.0),
                          "server_down": RuleConfig(for_s=0.0, clear_s=5.0)})


def server(name: str, accept: float | None, *, state: str = "ready", age_s: float | None = 0.5,
           origin: str = "spectui") -> ServerInput:
    return ServerInput(name=name, state=state, accept_lengths=(accept,), speculative=True, l_star=2.80,
                       l_star_source="measured", accept_source="metrics-counters", age_s=age_s, origin=origin)


def test_an_alert_of_a_server_that_stopped_ends_at_once_and_says_why():
    engine = AlertEngine(FAST)
    (fired,) = engine.evaluate(100.0, AlertInputs(servers=(server("kimi-eagle3", 2.06),)))
    assert fired.kind == "fired" and "2.06" in fired.alert.message
    # kimi-eagle3 is stopped: its last frame is what the link still holds (2.06), long ago; kimi-ngram serves
    stopped = AlertInputs(servers=(server("kimi-eagle3", 2.06, state="stopped", age_s=600.0),
                                   server("kimi-ngram", 3.10)))
    (ended,) = engine.evaluate(101.0, stopped)
    assert ended.kind == "cleared" and ended.alert.subject == "kimi-eagle3"
    assert ended.alert.reason == "kimi-eagle3 is stopped" and ended.alert.ended_at == 101.0
    assert engine.active == {}
    # nothing fires again from the frames a stopped server left behind
    assert engine.evaluate(700.0, stopped) == []
    (fired_record, ended_record) = [c.to_dict() for c in engine.history]
    assert fired_record["first_value"] == 2.06 and ended_record["reason"] == "kimi-eagle3 is stopped"


def test_an_alert_ends_when_the_host_serves_another_server_even_if_its_record_still_says_ready():
    engine = AlertEngine(FAST)
    engine.evaluate(0.0, AlertInputs(servers=(server("kimi-eagle3", 2.06),)))
    # the record was not updated (a listing from the last known state), but its frames stopped coming
    moved_on = AlertInputs(servers=(server("kimi-eagle3", 2.06, age_s=FRESH_S + 5), server("kimi-ngram", 3.2)))
    (ended,) = engine.evaluate(20.0, moved_on)
    assert ended.kind == "cleared" and ended.alert.reason == "the host serves kimi-ngram now"


def test_a_firing_alert_carries_the_live_value_and_keeps_its_first_one():
    engine = AlertEngine(FAST)
    engine.evaluate(0.0, AlertInputs(servers=(server("kimi-ngram", 1.14),)))
    for t, value in ((1.0, 1.39), (2.0, 1.41), (3.0, 1.40)):
        assert engine.evaluate(t, AlertInputs(servers=(server("kimi-ngram", value),))) == []
    (alert,) = engine.active.values()
    assert "accept length 1.40" in alert.message and "1.14" not in alert.message
    assert alert.value == 1.40 and alert.first_value == 1.14 and "1.14" in alert.first_message
    assert (alert.low, alert.high) == (1.14, 1.41) and alert.since == 0.0 and alert.updated_at == 3.0


def test_a_condition_that_ends_clears_after_clear_s_with_its_reason():
    engine = AlertEngine(FAST)
    engine.evaluate(0.0, AlertInputs(servers=(server("kimi-ngram", 1.4),)))
    above = AlertInputs(servers=(server("kimi-ngram", 3.1),))
    assert engine.evaluate(1.0, above) == []
    (ended,) = engine.evaluate(6.0, above)
    assert ended.alert.reason == "its condition ended" and ended.alert.value == 1.4


def test_a_crash_alert_ends_once_the_host_serves_another_server_and_does_not_fire_again():
    engine = AlertEngine(FAST)
    crashed = server("crashes", None, state="crashed", age_s=100.0)
    (fired,) = engine.evaluate(0.0, AlertInputs(servers=(crashed,)))
    assert fired.alert.rule == "server_down"
    (ended,) = engine.evaluate(1.0, AlertInputs(servers=(crashed, server("alpha", 3.0))))
    assert ended.alert.reason == "the host serves alpha now"
    assert engine.evaluate(2.0, AlertInputs(servers=(crashed, server("alpha", 3.0)))) == []


def test_a_server_spectui_only_found_is_not_judged_and_serves_nothing_of_yours():
    engine = AlertEngine(FAST)
    engine.evaluate(0.0, AlertInputs(servers=(server("crashes", None, state="crashed"),)))
    foreign = server("ext-43100", 3.0, origin="external")
    assert engine.evaluate(1.0, AlertInputs(servers=(server("crashes", None, state="crashed"), foreign))) == []
    assert list(engine.active) == [("server_down", "crashes")]


def test_the_host_names_each_alert():
    engine = AlertEngine(FAST, host="demo-2")
    (fired,) = engine.evaluate(0.0, AlertInputs(servers=(server("kimi-eagle3", 2.0),)))
    assert fired.alert.host == "demo-2" and fired.to_dict()["host"] == "demo-2"


def frame(name: str, accept: float, received_at: float) -> ServerFrame:
    return ServerFrame.from_event({"name": name, "seq": 1, "t": received_at, "state": "ready",
                                   "accept_length": {"value": accept, "source": "metrics-counters"},
                                   "speculative": {"algorithm": "EAGLE3"}}, received_at)


def test_inputs_from_a_link_carry_each_frames_age_and_leave_out_servers_spectui_only_found():
    series = ServerSeries(capacity=10)
    series.add(frame("kimi-eagle3", 2.06, 1000.0))
    foreign = ServerSeries(capacity=10)
    foreign.add(frame("ext-43100", 1.0, 1600.0))
    link = SimpleNamespace(servers={"kimi-eagle3": {"name": "kimi-eagle3", "state": "stopped", "origin": "spectui"},
                                    "ext-43100": {"name": "ext-43100", "state": "ready", "origin": "external"}},
                           series={"kimi-eagle3": series, "ext-43100": foreign}, gpu=None)
    inputs = inputs_from_link(link, {"kimi-eagle3": (2.8, "measured")}, now=1600.0)
    (s,) = inputs.servers
    assert s.name == "kimi-eagle3" and s.age_s == 600.0 and s.state == "stopped"
    engine = AlertEngine(FAST)
    assert engine.evaluate(1600.0, inputs) == []  # a stopped server's last figure is no live one


def test_the_history_is_bounded():
    engine = AlertEngine(AlertConfig(rules={"server_down": RuleConfig(for_s=0.0, clear_s=0.0)}))
    up, down = server("a", 3.0), server("a", None, state="crashed")
    for i in range(2000):
        engine.evaluate(float(i), AlertInputs(servers=(down if i % 2 == 0 else up,)))
    assert 0 < len(engine.history) <= 500


def test_a_crash_beside_a_server_that_was_already_serving_still_fires():
    engine = AlertEngine(FAST)
    alpha = ServerInput(name="alpha", state="ready", age_s=0.5, origin="spectui", started_at=10.0)
    crashed = server("beta", None, state="crashed", age_s=100.0)
    (fired,) = engine.evaluate(50.0, AlertInputs(servers=(alpha, crashed)))
    assert fired.alert.subject == "beta"
    assert engine.evaluate(60.0, AlertInputs(servers=(alpha, crashed))) == []
    assert list(engine.active) == [("server_down", "beta")]
