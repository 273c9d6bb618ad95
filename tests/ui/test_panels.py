"""Panels drawn from frames built here (the ServerFrame / TelemetryFrame contract), no host needed."""

import time

import pytest
from textual.app import App

from spectui.core.console import steptimes
from spectui.core.console.steptimes import StepTimes
from spectui.core.live import HostLink, LinkState
from spectui.core.server_frames import ServerFrame, ServerSeries
from spectui.core.session import HostTarget
from spectui.core.telemetry import TelemetryFrame
from spectui.ui import derive, snapshots
from spectui.ui.draw import column_chart, hbar, DEFAULT_STYLES
from spectui.ui.views import HeaderView
from spectui.ui.widgets.gpu import GpuPanel
from spectui.ui.widgets.header import HeaderBar
from spectui.ui.widgets.speculative import SpecPanel
from spectui.ui.widgets.throughput import ThroughputPanel


class PanelHost(App):
    CSS = "LinePanel { width: 100%; height: 100%; }"

    def __init__(self, panel):
        super().__init__()
        self.panel = panel

    def compose(self):
        yield self.panel


def frame(name="kimi-eagle3", seq=1, *, accept=2.01, accept_stale=False, tps=60.2, running=1, algorithm="EAGLE3",
          cumulative=1.98, rates=True, t=None, stream="same"):
    now = time.time() if t is None else t
    d = {
        "name": name, "seq": seq, "t": now, "window_s": 1.0, "state": "ready",
        "accept_length": None if accept is None else {"value": accept, "source": "metrics-counters",
                                                       "stale": accept_stale},
        "accept_rate": [
            {"value": 0.337, "formula": "drafts-only", "source": "derived", "stale": accept_stale},
            {"value": 0.502, "formula": "incl-bonus/draft-tokens", "source": "derived", "stale": accept_stale},
        ] if rates else [],
        "cumulative_accept_length": None if cumulative is None else {"value": cumulative, "source": "server_info",
                                                                     "cumulative": True, "requests": 57},
        "gen_throughput": {"value": tps, "source": "realtime-counter", "stale": False, "window_s": 2.0, "age_s": 0.0},
        "per_stream": {"value": tps if stream == "same" else stream, "source": "itl-histogram", "stale": False,
                       "window_s": 5.0, "age_s": 0.0},
        "running_req": running, "queue_req": 0, "token_usage": 0.01,
        "ttft_ms": {"p50": 100.0, "p50_rel": "<", "p99": 100.0, "p99_rel": "<", "mean": 41.0, "count": 12,
                    "source": "metrics-histogram", "window_s": 30.0},
        "itl_ms": {"p50": 33.0, "p50_rel": "=", "p99": 35.0, "p99_rel": "=", "mean": 33.4, "count": 800,
                   "source": "metrics-histogram", "window_s": 30.0},
        "speculative": {"algorithm": algorithm, "num_steps": 3 if algorithm else None, "topk": 1 if algorithm else None,
                        "draft_tokens": 4 if algorithm else None},
        "version": "0.5.23", "sources": {"metrics": "ok"},
    }
    return ServerFrame.from_event(d, now)


def link_with(*series_frames):
    link = HostLink(HostTarget.demo("/nonexistent-state"))
    link.state = LinkState.CONNECTED
    for frames in series_frames:
        for f in frames:
            s = link.series.setdefault(f.name, ServerSeries(capacity=100))
            s.add(f)
            link.servers[f.name] = {"name": f.name, "state": "ready"}
    return link


async def shown(panel, view, size=(80, 16)):
    app = PanelHost(panel)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        panel.show(view)
        await pilot.pause()
        return panel.text, panel.border_title


async def test_speculative_panel_shows_accept_length_rates_formulas_and_marks():
    link = link_with([frame(seq=i, accept=1.9 + i / 100) for i in range(1, 12)])
    view = snapshots.spec_view(link, "kimi-eagle3", None, None)
    text, title = await shown(SpecPanel(), view, size=(110, 18))
    assert "accept length 2.01" in text
    assert "(finished requests' counters)" in text
    # one accept-rate row: the headline first (the server's formula); a shows the other
    assert "drafts-only" in text and "33.7%" in text and "a: other formula (1 more)" in text
    assert "incl-bonus/draft-tokens" not in text and "50.2%" not in text
    assert "correct drafts / (steps × (draft tokens − 1))" in text
    other = snapshots.spec_view(link, "kimi-eagle3", None, None, rate_choice=1)
    text2, _ = await shown(SpecPanel(), other, size=(110, 18))
    assert "incl-bonus/draft-tokens" in text2 and "50.2%" in text2 and "33.7%" not in text2
    assert "since start   1.98 cumulative (server_info) over 57 requests" in text
    assert "stale" not in text
    assert "EAGLE3" in title
    assert "4.0 ┤" not in text and "2.3 ┤" in text  # the axis follows the accept lengths seen (1.91-2.01)
    assert "L* (break-even): needs a baseline run here" in text


async def test_stale_accept_length_is_marked_and_leaves_a_gap_in_the_chart():
    frames = [frame(seq=1, accept=2.0), frame(seq=2, accept=2.0, accept_stale=True)]
    link = link_with(frames)
    view = snapshots.spec_view(link, "kimi-eagle3", None, None)
    assert view.series[-1] is None and view.series[-2] == 2.0
    text, _ = await shown(SpecPanel(), view, size=(110, 18))
    assert "accept length 2.00 stale" in text
    assert "drafts-only stale" in text


async def test_break_even_from_frames_at_one_request():
    base = [frame("kimi-baseline", i, accept=None, tps=82.0, algorithm=None, cumulative=None, rates=False)
            for i in range(1, 12)]
    base += [frame("kimi-baseline", 20 + i, accept=None, tps=150.0, running=2, algorithm=None, cumulative=None,
                   rates=False) for i in range(5)]  # two requests: ignored
    spec = [frame("kimi-eagle3", 1, accept=3.0, tps=200.0)]  # its window may have begun at more: ignored
    spec += [frame("kimi-eagle3", i, accept=2.0, tps=60.0) for i in range(2, 10)]
    spec += [frame("kimi-eagle3", 10 + i, accept=3.5, tps=140.0, running=3) for i in range(5)]  # ignored
    spec += [frame("kimi-eagle3", 19, accept=2.8, tps=130.0)]  # the window began at 3 requests: ignored
    # a frame whose per-stream speed is still being measured counts with 0 (as before the fix, zeros lowered the mean)
    spec += [frame("kimi-eagle3", 20 + i, accept=None, tps=0.0) for i in range(2)]
    link = link_with(base, spec)
    algos = {"kimi-baseline": None, "kimi-eagle3": "EAGLE3"}
    be = snapshots.l_star_of(StepTimes().steps(link, algos), "kimi-eagle3")[0]
    assert be is not None
    assert be.base_step_ms == pytest.approx(1000 / 82, abs=0.01)
    assert be.spec_step_ms == pytest.approx(1000 * 2.0 / 48.0, abs=0.01)  # mean tok/s (8 x 60 + 2 x 0) / 10
    assert be.l_star == pytest.approx((1000 * 2.0 / 48.0) / (1000 / 82), abs=0.01)  # 3.42
    assert be.base_samples == 10 and be.spec_samples == 10  # a frame counts when the one before saw 1 request
    view = snapshots.spec_view(link, "kimi-eagle3", None, be)
    text, _ = await shown(SpecPanel(), view, size=(110, 20))
    assert "accept length –  L* 3.42" in text  # the last frame had no accept length
    assert "L* = 41.7 ms / 12.2 ms per step (this server / kimi-baseline)" in text
    assert "measured here at 1 request, 10 + 10 frames" in text
    # with a current accept length the panel says which side of L* it is on
    link2 = link_with(base, spec + [frame("kimi-eagle3", 30, accept=4.5, tps=100.0)])
    be2 = snapshots.l_star_of(StepTimes().steps(link2, algos), "kimi-eagle3")[0]
    assert be2.l_star == pytest.approx((1000 * (20.5 / 9) / (580 / 11)) / (1000 / 82), abs=0.01)
    text, _ = await shown(SpecPanel(), snapshots.spec_view(link2, "kimi-eagle3", None, be2), size=(110, 20))
    assert f"accept length 4.50  L* {be2.l_star:.2f}  ≥ break-even" in text
    # no baseline measured: no L*
    assert snapshots.l_star_of(StepTimes().steps(link_with(spec), algos), "kimi-eagle3")[0] is None


def test_break_even_needs_enough_frames_at_one_request():
    nan = float("nan")
    pairs = steptimes.concurrency_one([2.0] * 10, [60.0] * 10, [1.0] * 10)
    assert len(pairs) == 9 and steptimes.speculative_step_ms(pairs) is None and steptimes.baseline_step_ms(pairs) is None
    pairs = steptimes.concurrency_one([1.0, 2.0, 3.0, nan, 5.0, 6.0], [10.0, 20.0, 30.0, 40.0, nan, 60.0],
                                   [1.0, 1.0, 2.0, 1.0, 1.0, nan])
    # first frame (nothing before), after 2 requests, no tok/s, no request count: left out
    assert pairs == [(2.0, 20.0)]
    few_accepts = [(2.0, 60.0), (2.0, 60.0)] + [(None, 0.0)] * 8
    assert steptimes.speculative_step_ms(few_accepts) is None
    assert steptimes.speculative_step_ms([(2.0, 60.0)] * 3 + [(None, 0.0)] * 7) == (1000 * 2.0 / 18.0, 10)
    assert steptimes.baseline_step_ms([(None, 0.0)] * 10) is None  # nothing generated: no step time


async def test_throughput_panel():
    link = link_with([frame(seq=i, tps=50.0 + i, stream=60.0 + i) for i in range(1, 8)])
    view = snapshots.throughput_view(link, "kimi-eagle3")
    text, title = await shown(ThroughputPanel(), view, size=(80, 18))
    assert "per stream  67.0 tok/s (per-token latency histogram mean, 5 s)" in text
    assert "all streams 57.0 tok/s (per-iteration counter, 2 s)" in text
    assert "running 1  queued 0  token usage 1.0%" in text
    # a TTFT inside the first bucket is a bound, not 50 / 99 ms; the exact mean comes from _sum/_count
    assert "TTFT mean 41.0 ms  p50 <100  p99 <100" in text and "(12 in 30 s; < = in 1st bucket)" in text
    assert "TPOT mean 33.4 ms/token  p50 33.0  p99 35.0" in text
    assert "per stream, each point a 5 s mean" in text and "now" in text  # the chart's time axis
    assert title == "Throughput · kimi-eagle3"
    # narrow: the source and window go to the next row, never cut off
    text, _ = await shown(ThroughputPanel(), view, size=(42, 20))
    assert "(per-token latency histogram mean, 5 s)" in text and "(per-iteration counter, 2 s)" in text
    assert "(12 in 30 s; < = in 1st bucket)" in text and "p99 <100" in text


async def test_throughput_panel_held_and_measuring():
    f = frame(seq=1)
    d = {"name": "kimi-eagle3", "seq": 2, "t": time.time(), "state": "ready", "running_req": 1,
         "gen_throughput": {"value": 61.0, "source": "finished-counters", "window_s": 30.0, "age_s": 7.0, "held": True},
         "per_stream": {"value": None, "source": "itl-histogram", "measuring": True}}
    link = link_with([f, ServerFrame.from_event(d, time.time())])
    text, _ = await shown(ThroughputPanel(), snapshots.throughput_view(link, "kimi-eagle3"), size=(80, 18))
    assert "per stream  measuring…" in text
    assert "all streams 61.0 tok/s held (finished requests, 30 s, 7 s old)" in text
    assert " 0.0 tok/s" not in text


async def test_no_frames_says_no_data():
    link = link_with()
    link.servers["kimi-eagle3"] = {"name": "kimi-eagle3", "state": "ready"}
    text, _ = await shown(SpecPanel(), snapshots.spec_view(link, "kimi-eagle3", None, None))
    assert "no data" in text


def gpu_frame(n):
    gpus = [{"index": i, "name": "NVIDIA RTX PRO 6000 Blackwell", "util_pct": 10.0 * (i % 10),
             "mem_used_mib": 80000.0, "mem_total_mib": 98304.0, "power_w": 300.0, "power_limit_w": 600.0,
             "temp_c": 60.0 + i} for i in range(n)]
    return TelemetryFrame.from_event({"seq": 1, "t": time.time(), "source": "sim", "gpus": gpus}, time.time())


@pytest.mark.parametrize("count", [1, 8])
async def test_gpu_panel_shows_every_gpu_up_to_eight(count):
    link = link_with()
    f = gpu_frame(count)
    link.gpu = f
    link.gpu_history.add(f)
    panel = GpuPanel()
    text, title = await shown(panel, snapshots.gpu_view(link), size=(100, count + 1))
    legend, *rows = text.splitlines()
    assert "utilization %" in legend and "memory GiB" in legend and "power W" in legend and "temp" in legend
    assert len(rows) == count
    assert panel.max_scroll_y == 0  # all of them fit
    for i, row in enumerate(rows):
        assert row.lstrip().startswith(str(i)) and f"{60 + i}°C" in row and "78/96" in row
    assert f"{count}× NVIDIA RTX PRO 6000 Blackwell" in title


async def test_gpu_panel_aggregates_and_scrolls_beyond_eight():
    link = link_with()
    link.gpu = gpu_frame(16)
    panel = GpuPanel()
    app = PanelHost(panel)
    async with app.run_test(size=(100, 10)) as pilot:
        await pilot.pause()
        panel.show(snapshots.gpu_view(link))
        await pilot.pause()
        rows = panel.text.splitlines()
        assert rows[1].startswith("all 16: util avg") and len(rows) == 18
        assert panel.max_scroll_y > 0  # more rows than fit: the panel scrolls


async def test_header():
    view = HeaderView("demo host", "demo", True, "NVIDIA RTX PRO 6000 Blackwell", 8, "0.5.23", "connected", 0.4, True)
    text, _ = await shown(HeaderBar(), view, size=(160, 1))
    assert "8× RTX PRO 6000 Blackwell" in text and "SGLang 0.5.23 (simulated)" in text
    assert "● connected 0.4 ms" in text and "traffic on" in text


def test_switch_stages_live_and_after_the_reply():
    history = [("stopping", 0.0), ("stopped", 1.5), ("starting", 1.5), ("started", 1.7), ("loading", 1.8)]
    live = derive.switch_stages(history, detail={"percent": 45.0, "done": 29, "total": 64}, elapsed_now=3.0,
                                stopped_name="kimi-baseline")
    assert [s.label for s in live] == ["stopping", "starting", "loading"]
    assert live[0].seconds == pytest.approx(1.5) and live[0].detail == "kimi-baseline"
    assert live[-1].current and live[-1].detail == "45% (29/64 shards)" and live[-1].seconds == pytest.approx(1.2)
    done = derive.switch_stages(history + [("ready", 4.0)], result_stages=[
        {"stage": "stopping", "detail": "kimi-baseline", "seconds": 1.1},
        {"stage": "waiting for GPU memory", "detail": "kimi-baseline", "seconds": 0.4},
        {"stage": "started", "seconds": 0.2}, {"stage": "ready", "seconds": 2.2}])
    assert [s.label for s in done] == ["stopping", "waiting for GPU memory", "starting", "loading", "ready"]
    assert done[1].seconds == 0.4 and not any(s.current for s in done)
    # the agent also sends the wait for GPU memory live: shown while it lasts, once after the reply
    hist2 = [("stopping", 0.0), ("waiting for GPU memory", 1.1), ("stopped", 1.5), ("starting", 1.5)]
    live2 = derive.switch_stages(hist2, elapsed_now=1.6, stopped_name="kimi-baseline")
    assert [s.label for s in live2] == ["stopping", "waiting for GPU memory", "starting"]
    done2 = derive.switch_stages(hist2 + [("ready", 4.0)], result_stages=[
        {"stage": "stopping", "detail": "kimi-baseline", "seconds": 1.1},
        {"stage": "waiting for GPU memory", "detail": "kimi-baseline", "seconds": 0.4}])
    assert [s.label for s in done2] == ["stopping", "waiting for GPU memory", "starting", "ready"]


def test_charts_and_bars():
    rows = column_chart([1.0, None, 4.0], 3, 2, 0.0, 4.0)
    assert rows == ["  █", "▄ █"]  # None is a gap, never a repeat
    bar = hbar(0.5, 10, DEFAULT_STYLES.bar, DEFAULT_STYLES.bar_empty)
    assert bar.plain == "█████░░░░░"
    assert hbar(None, 4, DEFAULT_STYLES.bar, DEFAULT_STYLES.bar_empty).plain == "····"


def test_log_levels():
    assert derive.log_level("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate") == "error"
    assert derive.log_level("Traceback (most recent call last):") == "error"
    assert derive.log_level("[2026-11-30 10:00:00] WARNING: slow") == "warning"
    assert derive.log_level("Decode batch, #running-req: 1, accept len: 2.00") is None


def test_break_even_says_what_it_is_waiting_for():
    algos = {"kimi-baseline": None, "kimi-eagle3": "EAGLE3"}
    spec = [frame("kimi-eagle3", i, accept=2.0, tps=60.0) for i in range(1, 12)]
    busy_base = [frame("kimi-baseline", i, accept=None, tps=150.0, running=2, algorithm=None, cumulative=None,
                       rates=False) for i in range(1, 12)]
    assert snapshots.l_star_of(StepTimes().steps(link_with(spec), algos), "kimi-eagle3") == (None, "L* (break-even): needs a baseline run here")
    assert snapshots.l_star_of(StepTimes().steps(link_with(busy_base, spec), algos), "kimi-eagle3")[1] == \
        "L* (break-even): waiting for baseline frames at 1 request"
    base = [frame("kimi-baseline", i, accept=None, tps=82.0, algorithm=None, cumulative=None, rates=False)
            for i in range(1, 12)]
    busy_spec = [frame("kimi-eagle3", i, accept=2.0, tps=140.0, running=3) for i in range(1, 12)]
    assert snapshots.l_star_of(StepTimes().steps(link_with(base, busy_spec), algos), "kimi-eagle3")[1] == \
        "L* (break-even): measuring this server at 1 request"
