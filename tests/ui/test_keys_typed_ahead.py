"""Keys typed ahead of the console reach what the key before them opened.

A terminal hands the console a burst when an operator types fast or pastes: ``F`` and a server's name arrive
before the console has drawn the filter's box. Each key of the burst goes where the keys before it sent the
focus, so the name fills the filter; none of its letters acts as a key of the dashboard (``x`` stops,
``t`` aims the traffic, digits pick profiles). A fixed host (tests/ui/fixed_host.py) answers the console."""

from __future__ import annotations

from textual import events

from spectui.agent.protocol import Method
from spectui.ui.widgets.source_view import SourceView
from tests.ui.support import wait_for
from tests.ui.test_log_polls_hidden import fixed_console_with_polls, open_log_screen
from tests.ui.test_selection_by_name import SIZE, fixed_console, found, ready, send_server  # noqa: F401
from tests.ui.test_source_hit_opens_at_line import source_app, source_screen  # noqa: F401

KEY_NAMES = {"-": "minus", "/": "slash"}
# what a key of the dashboard asks of the host when it acts (watching a server only reads)
ACTING = {Method.SERVER_START, Method.SERVER_STOP, Method.SERVER_SWITCH, Method.SERVER_PLAN_STOP,
          Method.SERVER_PLAN_SWITCH, Method.SERVER_ADOPT, Method.TRAFFIC_START, Method.TRAFFIC_STOP}


class Recorded(dict):
    """The host's answers, remembering every method the console called."""

    def __init__(self, answers: dict) -> None:
        super().__init__(answers)
        self.called: list[str] = []

    def get(self, method, default=None):
        self.called.append(method)
        return super().get(method, default)


def burst(app, keys: str, *, then: tuple = ()) -> None:
    """Post ``keys`` (characters) and ``then`` (key names) to the App at once, as the terminal delivers a burst."""
    for ch in keys:
        app.post_message(events.Key(KEY_NAMES.get(ch, ch), ch))
    for name in then:
        app.post_message(events.Key(name, None))


async def test_a_name_typed_right_after_F_fills_the_filter_and_enter_watches_the_server(fixed_console):  # noqa: F811
    app, (host,) = fixed_console()
    host.answers = Recorded(host.answers)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        send_server(host, found(33000))
        await wait_for(pilot, lambda: "ext-33000" in app.row_names(), 10, "ext-33000's row")
        called = len(host.answers.called)
        burst(app, "Fext-33000", then=("enter",))
        box = app.dashboard.query_one("#profile-filter")
        await wait_for(pilot, lambda: box.value == "ext-33000", 10, f"the name in the filter (it has {box.value!r})")
        await wait_for(pilot, lambda: app.row_names() == ["ext-33000"] and app.highlighted_name() == "ext-33000",
                       10, "the one row found, selected")
        await wait_for(pilot, lambda: "Server · ext-33000" in (app.dashboard.query_one("#server").title_text or ""),
                       10, "the server panel on ext-33000")
        acted = [c for c in host.answers.called[called:] if c in ACTING]
        assert acted == [], acted  # no letter of the name acted on the dashboard
        assert app.screen is app.dashboard  # nor asked to confirm anything


async def test_keys_of_the_dashboard_typed_into_the_filter_are_text(fixed_console):  # noqa: F811
    app, (host,) = fixed_console()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        burst(app, "Fk/Fx")
        box = app.dashboard.query_one("#profile-filter")
        await wait_for(pilot, lambda: box.value == "k/Fx", 10, f"the text in the filter (it has {box.value!r})")
        assert not app.dashboard.query_one("#log-filter").display  # "/" opened no other box
        assert box.has_focus and app.screen is app.dashboard


async def test_a_search_typed_right_after_slash_on_the_log_screen_fills_its_box(tmp_path, monkeypatch):
    app, lines, _polls = fixed_console_with_polls(tmp_path, monkeypatch)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_log_screen(pilot, app, len(lines))
        burst(app, "/accept")
        box = screen.query_one("#logs-search")
        await wait_for(pilot, lambda: box.value == "accept", 10, f"the search in its box (it has {box.value!r})")
        assert screen.literal is False and app.screen is screen  # ctrl+t, f, w... none of its letters acted


async def test_a_search_typed_right_after_slash_in_the_source_browser_fills_its_box(source_app):  # noqa: F811
    async with source_app.run_test(size=(120, 40)) as pilot:
        screen = await source_screen(pilot)
        screen.query_one(SourceView).focus()
        await pilot.pause(0.2)
        burst(source_app, "/DraftMarker")
        box = screen.query_one("#source-input")
        await wait_for(pilot, lambda: box.value == "DraftMarker", 10, f"the search in its box (it has {box.value!r})")
        assert box.has_focus and screen.mode == "grep"  # "d" did not ask for a name instead
