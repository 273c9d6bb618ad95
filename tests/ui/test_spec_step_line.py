"""The speculative panel's step-cost line and width line, drawn by the real app from a fixed host.

The fixed host's frames (``tests/ui/fixed_host.py``) get the step counters a 0.5.23 server publishes (JSON form,
``spectui.core.server_frames``): a plain server's timed decode steps, a speculative server's verify and draft
seconds per cycle, with or without the device timer, and the draft width in force with its last change.
"""

from __future__ import annotations

import pytest

from spectui.core.stepcost import TIMER_ENV
from tests.ui import fixed_host
from tests.ui.fixed_host import NOW
from tests.ui.test_snapshots import console, settled  # noqa: F401  (fixture)

SIZES = [(160, 50), (80, 24)]
ORIGIN = NOW - 1000.0
DECODE_S, CYCLE_S = 0.0122, {"target_verify": 0.0294, "eagle_draft": 0.00348, "eagle_draft_extend": 0.00116}
WIDTH_CHANGED = NOW - 30.0
ORIGINAL = fixed_host.server_frame


def timed(timer: bool):
    def server_frame(name, seq, t, *, speculative, accept, tok_s, running=1.0):
        d = ORIGINAL(name, seq, t, speculative=speculative, accept=accept, tok_s=tok_s, running=running)
        elapsed = t - ORIGIN
        if speculative:
            cycles = 25.0 * elapsed
            seconds = [[{"category": c}, cycles * s] for c, s in CYCLE_S.items()]
            d["speculative"] = dict(speculative, adaptive={"steps": 3, "draft_tokens": 4, "source": "metrics-gauge",
                                                           "launch_steps": 3})
            d["width_now"] = {"steps": 3, "draft_tokens": 4, "source": "sglang:spec_num_draft_tokens", "read_at": t}
            d["width_changes"] = [{"t": WIDTH_CHANGED, "old": {"steps": 1, "draft_tokens": 2},
                                   "new": {"steps": 3, "draft_tokens": 4}}]
        else:
            cycles = 80.0 * elapsed
            seconds = [[{"category": "decode"}, cycles * DECODE_S]]
        d["step_series"] = {"cuda_graph_passes_total": [[{"mode": "decode_cuda_graph"}, cycles]],
                            "scheduler_idle_seconds_total": [[{}, 0.0]]}
        if timer:
            d["step_series"]["forward_execution_seconds_total"] = seconds
        return d

    return server_frame


def panel_text(app) -> tuple[str, list[str], int, int]:
    panel = app.dashboard.query_one("#spec")
    strips = panel.text.split("\n")
    region = panel.scrollable_content_region
    return " ".join(s.strip() for s in strips), strips, region.width, region.height


async def show(console, monkeypatch, size, timer):  # noqa: F811
    monkeypatch.setattr(fixed_host, "server_frame", timed(timer))
    app, _ = console(serving="kimi-eagle3", served_before="kimi-baseline")
    async with app.run_test(size=size) as pilot:
        await settled(pilot)
        return panel_text(app)


def hms(t):
    import time
    return time.strftime("%H:%M:%S", time.gmtime(t))


@pytest.mark.parametrize("size", SIZES, ids=["160x50", "80x24"])
async def test_the_timer_line_names_each_figure_its_source_and_window_and_is_not_cut(
        console, monkeypatch, size):  # noqa: F811
    text, strips, width, height = await show(console, monkeypatch, size, timer=True)
    step_ms = 1000.0 * sum(CYCLE_S.values())
    decode_ms = 1000.0 * DECODE_S
    line = (f"verify+draft {step_ms:.1f} ms per step (server timer, last 10 s) · decode {decode_ms:.1f} ms "
            f"(kimi-baseline's timer, 10 s to {hms(NOW - 181)}) → L* {step_ms / decode_ms:.2f}")
    assert line in text, text
    assert f"width 4 draft tokens · 3 steps, since {hms(WIDTH_CHANGED)} (spec_num_draft_tokens gauge)" in text
    assert all(len(s.rstrip()) <= width for s in strips)
    first = next(i for i, s in enumerate(strips) if "verify+draft" in s)
    accept = next(i for i, s in enumerate(strips) if s.startswith("accept length"))
    assert accept < first < height  # under the accept length, in view without scrolling


@pytest.mark.parametrize("size", SIZES, ids=["160x50", "80x24"])
async def test_without_the_timer_the_line_names_the_l_star_used_instead(console, monkeypatch, size):  # noqa: F811
    text, strips, width, _ = await show(console, monkeypatch, size, timer=False)
    assert f"no server timer ({TIMER_ENV}=1 starts it) → L* " in text, text
    assert "from the baseline run (kimi-baseline)" in text
    assert "verify+draft" not in text
    assert all(len(s.rstrip()) <= width for s in strips)


async def test_the_live_l_star_heads_the_panel_the_glance_row_and_the_alerts(console, monkeypatch):  # noqa: F811
    """Where the servers' timers give a live L*, it is the L* the accept length is judged against everywhere: the
    panel's headline, the glance row (80x24) and the alert rules, each naming it; the baseline run's and the
    probe's stay as fallbacks."""
    monkeypatch.setattr(fixed_host, "server_frame", timed(True))
    app, _ = console(serving="kimi-eagle3", served_before="kimi-baseline")
    live = f"{sum(CYCLE_S.values()) / DECODE_S:.2f}"
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(pilot)
        spec = app.dashboard.query_one("#spec").view
        assert spec.breakeven is not None and f"{spec.breakeven.l_star:.2f}" != live  # two different L*s at hand
        head = next(s for s in app.dashboard.query_one("#spec").text.split("\n") if s.startswith("accept length"))
        assert f"L* {live} (server timer)" in head, head
        glance = " ".join(app.dashboard.query_one("#glance").text.split())
        assert f"L* {live} server timer" in glance, glance
        assert app.alerts.l_stars(app.host)["kimi-eagle3"] == (float(live), "server timer")
