"""Every figure on the speculative and throughput panels says what it is: a cumulative accept length only once
it covers enough requests, NGRAM's settings as SGLang resolves them (the same on the panel, the profiles row and
``spectui profiles list``), no bare ``?`` for a source, TPOT named as SGLang's bench_serving names it, and chart
axes fitted to the data seen."""

from __future__ import annotations

import types

import pytest

from spectui.cli.main import main
from spectui.core.profiles import load_profiles
from spectui.core.server_frames import Measured, ServerFrame, ServerSeries
from spectui.ui import derive, snapshots
from spectui.ui.draw import DEFAULT_STYLES
from spectui.ui.widgets.speculative import SpecPanel
from spectui.ui.widgets.throughput import ThroughputPanel
from spectui.ui.widgets.sources import source_text
from tests.ui.fixed_host import NOW, server_frame, server_record
from tests.ui.test_snapshots import SHIPPED, STORY

LIBRARY = load_profiles([SHIPPED / f"{n}.yaml" for n in STORY], layers=[])
PROFILES = LIBRARY.profiles
NGRAM_RESOLVED = {"algorithm": "NGRAM", "num_steps": 0, "topk": 10, "draft_tokens": 8}  # /server_info's, 0.5.23
EAGLE = {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4}


def link_with(name: str, frames: list[dict]) -> types.SimpleNamespace:
    """A connected host link holding ``name``'s record (ready) and ``frames``."""
    series = ServerSeries()
    for d in frames:
        series.add(ServerFrame.from_event(d, d["t"]))
    rec = server_record(PROFILES[name], "ready", pid=4000, started_at=NOW - 300, ready_at=NOW - 290)
    return types.SimpleNamespace(servers={name: rec}, series={name: series}, connected=True, now=lambda: NOW,
                                 server_interval_s=1.0)


def frames_of(name: str, speculative: dict, accepts: list[float], **over) -> list[dict]:
    out = []
    for i, a in enumerate(accepts):
        d = server_frame(name, i + 1, NOW - len(accepts) + 1 + i, speculative=None, accept=None, tok_s=40.0)
        d["speculative"] = speculative
        d["accept_length"] = {"value": a, "source": "metrics-counters", "stale": False, "window_s": 30.0}
        d.update(over)
        out.append(d)
    return out


def drawn(panel, view, width: int = 90) -> str:
    rows = panel.draw(types.SimpleNamespace(draw_height=30), view, width, DEFAULT_STYLES)
    return "\n".join(r.plain for r in rows)


# --- 1: the cumulative accept length ----------------------------------------------------------------------------
def cumulative(value: float, requests: int | None) -> dict:
    d = {"value": value, "source": "server_info", "cumulative": True}
    if requests is not None:
        d["requests"] = requests
    return d


def test_a_cumulative_accept_length_over_a_few_requests_is_not_shown_as_a_figure():
    few = derive.CUMULATIVE_MIN_REQUESTS - 1
    link = link_with("kimi-eagle3", frames_of("kimi-eagle3", EAGLE, [2.1, 2.2],
                                              cumulative_accept_length=cumulative(3.5, few)))
    text = drawn(SpecPanel, snapshots.spec_view(link, "kimi-eagle3", PROFILES["kimi-eagle3"], None))
    assert "3.50" not in text
    assert f"since start: after {derive.CUMULATIVE_MIN_REQUESTS} requests" in text


def test_a_cumulative_accept_length_over_enough_requests_says_over_how_many():
    many = derive.CUMULATIVE_MIN_REQUESTS + 5
    link = link_with("kimi-eagle3", frames_of("kimi-eagle3", EAGLE, [2.1, 2.2],
                                              cumulative_accept_length=cumulative(2.04, many)))
    text = drawn(SpecPanel, snapshots.spec_view(link, "kimi-eagle3", PROFILES["kimi-eagle3"], None))
    line = next(x for x in text.splitlines() if x.startswith("since start"))
    assert "2.04" in line and f"{many} requests" in line


# --- 2: NGRAM's settings ------------------------------------------------------------------------------------------
def test_ngram_settings_read_the_same_on_the_panel_the_profiles_row_and_profiles_list(capsys, monkeypatch):
    link = link_with("kimi-ngram", frames_of("kimi-ngram", NGRAM_RESOLVED, [1.4, 1.5]))
    panel = snapshots.spec_view(link, "kimi-ngram", PROFILES["kimi-ngram"], None).settings
    row = next(r for r in snapshots.profiles_view(None, list(PROFILES.values()), 0, [], None).rows
               if r.name == "kimi-ngram").settings
    monkeypatch.setenv("SPECTUI_PROFILES_PATH", str(SHIPPED))
    assert main(["profiles", "list"]) == 0
    listed = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("kimi-ngram "))
    assert panel == row and panel in listed
    assert "draft tokens 8" in panel and "10" in panel  # SGLang's default BFS breadth, the resolved topk
    assert "steps" not in panel  # draft tokens // breadth is no step count NGRAM runs


# --- 3: no bare "?" -----------------------------------------------------------------------------------------------
def test_a_figure_without_a_source_says_so_in_words():
    assert "?" not in source_text(Measured(12.0, None))
    assert "?" not in source_text(Measured(12.0, None, window_s=5.0))
    assert "?" not in source_text(Measured(None, None))


def test_every_source_the_agent_names_has_words():
    assert "tpot-histogram" not in source_text(Measured(30.0, "tpot-histogram", window_s=5.0))


def test_the_throughput_panel_explains_every_dash():
    d = server_frame("kimi-baseline", 1, NOW, speculative=None, accept=None, tok_s=40.0)
    d["per_stream"] = {"value": None}
    d["itl_ms"] = None
    d["ttft_ms"] = None
    link = link_with("kimi-baseline", [d])
    text = drawn(ThroughputPanel, snapshots.throughput_view(link, "kimi-baseline"))
    assert "?" not in text
    for line in text.splitlines():
        if "–" in line and "┤" not in line and "└" not in line:
            assert "(" in line.split("–", 1)[1], f"a dash without a reason: {line!r}"


# --- 4: TPOT, per token ------------------------------------------------------------------------------------------
def test_the_live_per_token_latency_is_named_tpot_as_sglang_names_it():
    link = link_with("kimi-eagle3", frames_of("kimi-eagle3", EAGLE, [2.1, 2.2]))
    text = drawn(ThroughputPanel, snapshots.throughput_view(link, "kimi-eagle3"))
    assert "TPOT" in text and "ms/token" in text
    assert "ITL" not in text.replace("ITL histogram", "")  # ITL is the per-chunk gap of bench output


# --- 5: chart axes fitted to the data -------------------------------------------------------------------------
@pytest.mark.parametrize("name,spec", [("kimi-ngram", NGRAM_RESOLVED), ("kimi-eagle3", EAGLE)])
def test_the_accept_length_axis_follows_the_data_not_the_draft_tokens(name, spec):
    seen = [1.3, 1.4, 1.5, 1.45]
    link = link_with(name, frames_of(name, spec, seen))
    view = snapshots.spec_view(link, name, PROFILES[name], None)
    assert max(seen) < view.scale_max <= max(seen) + 0.5
    labels = [float(line.split("┤")[0]) for line in drawn(SpecPanel, view).splitlines() if "┤" in line]
    top, bottom = labels[0], labels[-1]  # the y axis as drawn
    assert max(seen) < top <= max(seen) + 0.5 and min(seen) - 0.5 <= bottom < min(seen)


def test_bench_output_says_its_itl_is_per_chunk_and_tpot_per_token():
    from spectui.core.bench import table
    lat = {"p50": 30.0, "p90": 34.0, "p99": 40.0, "mean": 34.4}
    run = {"run_id": "r1", "profile": "kimi-eagle3", "host": "demo", "concurrency": 1, "state": "done",
           "stats": {"requests": 4, "completed": 4, "errors": 0, "ttft_ms": lat, "itl_ms": lat,
                     "tpot_ms": dict(lat, mean=23.4), "e2e_ms": lat}}
    lines = table.render_run_detail(run).splitlines()
    itl = next(x for x in lines if x.startswith("ITL"))
    tpot = next(x for x in lines if x.startswith("TPOT"))
    assert "chunk" in itl and "token" in tpot
    assert any("chunk" in c for c in table.COLUMNS if "ITL" in c)
    assert any("chunk" in c for c in table.MD_RUN_HEAD if "ITL" in c)


def test_the_speculative_panel_explains_a_missing_accept_length():
    d = frames_of("kimi-eagle3", EAGLE, [2.0])[0]
    d["accept_length"] = None
    d["accept_rate"] = []
    link = link_with("kimi-eagle3", [d])
    text = drawn(SpecPanel, snapshots.spec_view(link, "kimi-eagle3", PROFILES["kimi-eagle3"], None))
    assert "?" not in text
    head = next(x for x in text.splitlines() if x.startswith("accept length"))
    assert "–" in head and "(" in head.split("–", 1)[1], head


# --- the server panel's load line ---------------------------------------------------------------------------------
def test_a_load_without_progress_says_so_instead_of_a_question_mark():
    from spectui.ui.views import ServerView
    from spectui.ui.widgets.server import ServerPanel

    def load_line(progress):
        view = ServerView("kimi-eagle3", "loading", pid=4242, port=30000, gpus=(0, 1), uptime_s=3.0,
                          progress=progress)
        rows = [r.plain for r in ServerPanel.draw(None, view, 60, DEFAULT_STYLES)]
        return next(r for r in rows if r.startswith("load "))

    assert "?" not in load_line(None) and load_line(None).endswith("no progress reported yet")
    assert load_line((40.0, 2, 5)).endswith("40% 2/5 shards")
