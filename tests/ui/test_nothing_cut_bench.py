"""The benchmark screen cuts nothing: its sentences (the verdict, the notes, where a run's figures come from)
wrap to the screen's width; a table's rows stay whole and move sideways together with ← →, and a line above
them says which columns show."""

from __future__ import annotations

import types

import pytest
from textual.app import App

from spectui.ui.screens import bench
from spectui.ui.screens.bench import BenchScreen, WideLines
from tests.bench.test_predicted_lstar import comparison
from tests.ui.support import wait_for
from tests.ui.test_reflow import SIZES, norm, screen_lines

pytestmark = pytest.mark.timeout(120)


class Host(App):
    def __init__(self, job) -> None:
        super().__init__()
        self.job = job

    def on_mount(self) -> None:
        self.push_screen(BenchScreen(self.job))


def done_job():
    comp = comparison()
    comp["verdicts"] = [v + " " + "and the drafter's steps are measured at one request on this host" for v in
                        comp["verdicts"]]
    return types.SimpleNamespace(active=False, state="done", comparison=comp, result=None, saved_id="c7",
                                 exported=None, title=lambda: "Comparison · base, spec · s")


async def every_page(pilot, screen) -> list[str]:
    """The screen's rows at each page of the results, top to bottom (what scrolling down shows)."""
    scroll = screen.query_one("#bench-scroll")
    lines: list[str] = []
    for y in range(0, int(scroll.max_scroll_y) + scroll.size.height, max(1, scroll.size.height)):
        scroll.scroll_to(y=y, animate=False)
        await pilot.pause(0.05)
        lines += screen_lines(pilot.app)
    scroll.scroll_to(y=0, animate=False)
    await pilot.pause(0.05)
    return lines


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
async def test_sentences_wrap_and_tables_move_sideways_with_their_position_shown(monkeypatch, size):
    monkeypatch.setattr(bench, "progress_text", lambda job, st=None: bench.Text("done"))
    job = done_job()
    app = Host(job)
    async with app.run_test(size=size) as pilot:
        screen = await wait_for(pilot, lambda: isinstance(app.screen, BenchScreen) and app.screen.query(WideLines)
                                and app.screen, 10, "the results")
        await pilot.pause(0.2)
        text = norm(" ".join(await every_page(pilot, screen)))
        for verdict in job.comparison["verdicts"]:
            assert norm(verdict) in text, (size, verdict)  # wrapped, whole
        assert "spectui history show c7" in text
        table = screen.query(WideLines).first()
        wide, view = table.content_width, table.size.width
        cols = screen.query_one("#bench-cols")
        head = next(r for r in table.rows if r.plain.startswith("PROFILE"))
        if wide <= view:
            assert not cols.display and head.plain.rstrip() in table.shown_text[table.rows.index(head)]
            return
        assert cols.display and f"cols 1-{view} of {wide}" in text and "→" in str(cols.content)
        seen = table.shown_text[table.rows.index(head)]
        for _ in range(40):
            await pilot.press("right")
            seen += table.shown_text[table.rows.index(head)][-BenchScreen.COL_STEP:]
        await pilot.pause(0.1)
        assert screen.col == wide - view and f"cols {wide - view + 1}-{wide} of {wide} ←" in str(cols.content)
        assert head.plain.rstrip() in seen.rstrip() or head.plain.rstrip().endswith(seen.split()[-1])
        assert table.shown_text[table.rows.index(head)].rstrip().endswith(head.plain.rstrip()[-8:])
