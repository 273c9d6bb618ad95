"""The log screen and the source browser search the same way: a regular expression, ``ctrl+t`` for plain text,
the mode shown, and a bad regular expression told in one sentence with the previous results kept."""

from __future__ import annotations

import re

from textual.widgets import Input

from spectui.core.search import Query
from tests.ui.support import wait_for
from tests.ui.test_log_polls_hidden import SIZE as LOG_SIZE
from tests.ui.test_log_polls_hidden import fixed_console_with_polls, open_log_screen, status
from tests.ui.test_source_hit_opens_at_line import SIZE, source_app, source_screen  # noqa: F401 (a fixture)

REGEX = "accept len: [2-9]"
BAD = "accept len: [2-"


async def test_the_log_search_is_a_regex_with_a_plain_text_mode_and_keeps_its_results_on_a_bad_one(
        tmp_path, monkeypatch):
    app, lines, _polls = fixed_console_with_polls(tmp_path, monkeypatch)
    async with app.run_test(size=LOG_SIZE) as pilot:
        screen = await open_log_screen(pilot, app, len(lines))
        view = screen.view
        await pilot.press("slash", *REGEX, "enter")
        await wait_for(pilot, lambda: view.matches, 5, "the regex's matches")
        expected = [i for i, line in enumerate(view.lines) if re.search(REGEX, line)]
        assert view.matches == expected and len(expected) > 3
        assert "(regex)" in status(screen)
        # plain text: the brackets are characters to find, and no line has them
        await pilot.press("slash", "ctrl+t")
        await wait_for(pilot, lambda: "(text)" in status(screen), 5, "plain text")
        assert view.matches == []
        box = screen.query_one("#logs-search", Input)
        assert "ctrl+t" in box.placeholder and "text" in box.placeholder
        await pilot.press("ctrl+t")  # back to a regex
        await wait_for(pilot, lambda: view.matches == expected, 5, "the regex again")
        # a bad regex: one sentence, the matches of the last good one stay
        box.value = BAD
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert _bad_sentence() in status(screen), status(screen)
        assert view.matches == expected


def _bad_sentence() -> str:
    try:
        Query(BAD).compile()
    except Exception as exc:  # the one sentence both screens show
        return str(exc)
    raise AssertionError(f"{BAD!r} compiled")


async def test_the_source_search_is_the_same_regex_with_the_same_plain_text_mode_and_sentence(source_app):  # noqa: F811
    async with source_app.run_test(size=SIZE) as pilot:
        screen = await source_screen(pilot)
        search_status = screen.query_one("#search-status")

        def said() -> str:
            return str(search_status.render())

        await pilot.press("slash", *REGEX, "enter")
        await wait_for(pilot, lambda: "2 hits for" in said(), 30, "the regex's hits")
        assert all("3.62" in h.text for h in screen.hits) and "(regex)" in said()
        hits = list(screen.hits)
        # plain text: ctrl+t in the prompt; nothing has the brackets
        await pilot.press("slash", *REGEX, "ctrl+t")
        box = screen.query_one("#source-input", Input)
        assert "text" in box.placeholder and "ctrl+t" in box.placeholder
        await pilot.press("enter")
        await wait_for(pilot, lambda: "0 hits for" in said(), 30, "the plain-text search")
        assert "(text)" in said()
        # back to a regex (the mode stays until toggled); a bad one: the sentence, the last hits stay
        await pilot.press("slash", "ctrl+t", *REGEX, "enter")
        await wait_for(pilot, lambda: "2 hits for" in said(), 30, "the regex's hits again")
        assert screen.hits == hits
        await pilot.press("slash", *BAD, "enter")
        await wait_for(pilot, lambda: _bad_sentence() in said(), 10, "the sentence")
        assert screen.hits == hits
