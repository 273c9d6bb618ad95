"""Nothing on the console's other screens is cut: the alert list (``!``) and the source browser's header wrap
their long sentences to the screen's width."""

from __future__ import annotations

import dataclasses

import pytest

from spectui.ui.screens.alerts import AlertsScreen
from tests.ui.support import wait_for
from tests.ui.test_nothing_cut import BELOW, firing, shown
from tests.ui.test_reflow import norm, screen_lines
from tests.ui.test_selection_by_name import console_maker
from tests.ui.test_source_hit_opens_at_line import source_app, source_screen  # noqa: F401 (a fixture)

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def fixed_console(tmp_path, monkeypatch):
    return console_maker(tmp_path, monkeypatch)


@pytest.mark.parametrize("size", [(80, 24), (160, 50)])
async def test_the_alert_list_wraps_each_alert_whole(fixed_console, monkeypatch, size):
    message = BELOW + " The step costs throughput at every request rate measured on this host since it started."
    firing(monkeypatch, message)
    app, _ = fixed_console(serving="kimi-eagle3", served_before="kimi-baseline")
    async with app.run_test(size=size) as pilot:
        await shown(pilot, app)
        await pilot.press("exclamation_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, AlertsScreen), 5, "the alert list")
        await wait_for(pilot, lambda: "Firing now: 1" in " ".join(screen_lines(app)), 10, "the list drawn")
        # the list's rows are laid out in a later frame than its count on a loaded machine: wait for them, and a
        # cut alert never matches
        try:
            await wait_for(pilot, lambda: norm(message) in norm(" ".join(screen_lines(app))), 20, "the alert whole")
        except AssertionError:
            raise AssertionError(screen_lines(app)) from None


@pytest.mark.parametrize("size", [(80, 24), (160, 50)])
async def test_the_source_header_wraps_its_note_whole(source_app, size):  # noqa: F811
    info = source_app.browser.info
    note = ("the demo host has no SGLang: reading sglang 0.5.23's published wheel from "
            "/home/op/.cache/spectui/sglang/wheels/sglang-0.5.23-py3-none-any.whl/extracted/site-packages, "
            "fetched once")
    source_app.browser.info = dataclasses.replace(info, note=note)
    async with source_app.run_test(size=size) as pilot:
        screen = await source_screen(pilot)
        await pilot.pause(0.2)
        title = screen.query_one("#source-title")
        rows = screen_lines(source_app)[title.region.y:title.region.bottom]
        assert "".join(f"({note})".split()) in "".join("".join(rows).split()), rows  # a path may break at a / too
