"""The first screen tells the story at every size: on a short or narrow terminal, where the panels scroll, the
watched server's state, its accept length and L*, per-stream and all-streams tok/s and the GPUs' load are on the
screen without scrolling, each as its panel shows it. A fixed host (tests/ui/fixed_host.py) serves kimi-eagle3
after a baseline run, so the break-even L* is measured."""

from __future__ import annotations

import pytest

from spectui.ui.widgets.sources import source_text
from spectui.ui.widgets.speculative import WORDS as SPEC_WORDS
from tests.ui.support import wait_for
from tests.ui.test_reflow import screen_lines
from tests.ui.test_selection_by_name import fixed_console, ready  # noqa: F401 (the fixture)

SIZES = [(80, 24), (100, 30), (120, 40), (160, 50), (240, 70)]


def _figures(app) -> dict[str, str]:
    """The figures the story turns on, formatted as the panels draw them."""
    dash = app.dashboard
    spec, tput, gpus = (dash.query_one(f"#{w}").view for w in ("spec", "throughput", "gpus"))
    utils = [g.util for g in gpus.rows if g.util is not None]
    return {"accept length": f"{spec.accept.value:.2f}", "L*": f"{spec.breakeven.l_star:.2f}",
            "per stream": f"{tput.per_stream.value:.1f}", "all streams": f"{tput.gen.value:.1f}",
            "GPU": f"{sum(utils) / len(utils):.0f}%", "state": "ready"}


def _have_figures(app) -> bool:
    dash = app.dashboard
    spec, tput = dash.query_one("#spec").view, dash.query_one("#throughput").view
    return bool(spec and spec.accept.value is not None and spec.breakeven and tput and tput.per_stream.value
                and tput.gen.value is not None)


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_the_watched_servers_figures_are_on_the_first_screen_at_every_size(fixed_console, size):  # noqa: F811
    app, _ = fixed_console(serving="kimi-eagle3", served_before="kimi-baseline")
    async with app.run_test(size=size) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: _have_figures(app), 30, "the figures")
        await pilot.pause(0.5)
        figures, screen = _figures(app), "\n".join(screen_lines(app))
        missing = {what: value for what, value in figures.items() if value not in screen}
        assert not missing, f"{size}: not on the first screen: {missing}\n{screen}"
        assert "kimi-eagle3" in screen


async def test_the_glance_row_names_each_figures_window_and_what_l_star_is(fixed_console):  # noqa: F811
    app, _ = fixed_console(serving="kimi-eagle3", served_before="kimi-baseline")
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: _have_figures(app), 30, "the figures")
        await pilot.pause(0.5)
        glance = app.dashboard.query_one("#glance")
        assert glance.display
        text = " ".join(glance.text.split())
        spec = app.dashboard.query_one("#spec").view
        verdict = "<" if spec.accept.value < spec.breakeven.l_star else "≥"
        assert f"accept {spec.accept.value:.2f} {verdict} L* {spec.breakeven.l_star:.2f} measured" in text, text
        assert source_text(spec.accept, SPEC_WORDS) in text, text  # the accept length's source, as the panel says
        tput = app.dashboard.query_one("#throughput").view
        for v in (tput.per_stream, tput.gen):
            assert v.window_s and f"{v.value:.1f}" in text and f"({v.window_s:g} s)" in text, text


async def test_a_tall_wide_screen_shows_the_panels_alone(fixed_console):  # noqa: F811
    app, _ = fixed_console(serving="kimi-eagle3", served_before="kimi-baseline")
    async with app.run_test(size=(160, 50)) as pilot:
        await ready(pilot, app)
        assert not app.dashboard.query_one("#glance").display
        await pilot.resize_terminal(80, 24)
        await wait_for(pilot, lambda: app.dashboard.query_one("#glance").display, 10, "the glance row")


async def test_without_a_baseline_run_or_a_probe_the_glance_says_what_gives_l_star(fixed_console):  # noqa: F811
    app, _ = fixed_console(serving="kimi-eagle3")
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: (v := app.dashboard.query_one("#spec").view) and v.accept.value is not None,
                       30, "an accept length")
        await pilot.pause(0.5)
        screen = " ".join("\n".join(screen_lines(app)).split())
        assert "L* – (a baseline run or the probe, p, gives it)" in screen, screen
