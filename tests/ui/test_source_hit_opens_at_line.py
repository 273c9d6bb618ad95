"""``enter`` on a source search hit opens the file at the hit: scrolled to its line, the cursor and the mark on
it, the first time (a file not open yet) as the next."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App
from textual.widgets import OptionList

from spectui.core.session import HostTarget, open_session
from spectui.core.source.browser import open_browser
from spectui.ui.screens.source import SourceScreen
from spectui.ui.widgets.source_tree import SourceTree
from spectui.ui.widgets.source_view import SourceView
from tests.ui.support import wait_for

SIZE = (120, 40)


class Host(App):
    def __init__(self, browser) -> None:
        super().__init__()
        self.browser = browser

    def on_mount(self) -> None:
        self.push_screen(SourceScreen(self.browser))


def small_package(root: Path) -> Path:
    """A package laid out as SGLang's: srt/speculative/ with two long files, each with one marked line far down."""
    package = root / "sglang"
    spec = package / "srt" / "speculative"
    spec.mkdir(parents=True)
    for folder in (package, package / "srt", spec):
        (folder / "__init__.py").write_text("")
    for name, at in (("eagle_worker.py", 300), ("ngram_worker.py", 211)):
        lines = [f"value_{i} = {i}  # accept len: 1.{i % 10}" for i in range(1, 401)]
        lines[at - 1] = "class DraftMarker:  # accept len: 3.62"
        (spec / name).write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture
async def source_app(tmp_path, state_dir):
    """The source screen over a small package on the demo host, read by the host's agent."""
    session = await open_session(HostTarget.demo(str(state_dir)))
    try:
        browser = await open_browser(session, sglang_root=str(small_package(tmp_path / "pkg")))
        yield Host(browser)
    finally:
        await session.close()


async def source_screen(pilot) -> SourceScreen:
    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, SourceScreen) and app.screen.query(SourceTree), 10,
                   "the source screen")
    screen = app.screen
    tree = screen.query_one(SourceTree)
    start = screen.browser.info.start
    assert start.endswith("srt/speculative")
    await wait_for(pilot, lambda: tree.node_for(start) is not None and tree.node_for(start).data["loaded"], 30,
                   start)
    return screen


def line_on_screen(view: SourceView, line: int) -> bool:
    top = int(view.scroll_offset.y)
    return top <= line - 1 < top + view.scrollable_content_region.height


async def test_the_first_enter_on_a_hit_opens_the_file_scrolled_to_the_hit(source_app):
    async with source_app.run_test(size=SIZE) as pilot:
        screen = await source_screen(pilot)
        view = screen.query_one(SourceView)
        view.focus()
        await pilot.press("slash", *"class DraftMarker", "enter")
        await wait_for(pilot, lambda: "2 hits for" in str(screen.query_one("#search-status").render()), 30,
                       "the search")
        hits = screen.query_one("#hits", OptionList)
        assert hits.has_focus and hits.highlighted == 0
        for index in (0, 1):  # each hit in a file not open before
            hit = screen.hits[index]
            assert hit.line > view.scrollable_content_region.height  # below the first screenful
            if index:
                await pilot.press("down")
            await pilot.press("enter")  # once
            await wait_for(pilot, lambda: view.path == hit.path, 10, "the file")
            await pilot.pause(0.2)
            assert view.target == hit.line and view.cursor[0] == hit.line
            assert line_on_screen(view, hit.line), (hit.line, view.scroll_offset.y)
            assert "class DraftMarker" in view.lines[hit.line - 1]
