"""Servers found on the host are a group of their own under the operator's profiles: ``found on this host (N)``
with a count, folded and unfolded by a key, its stopped servers hidden unless asked, filtered to the operator's
own or every user's; the panels never follow a found server by themselves; and a found server that stopped is
forgotten after the grace period, by the link and by the console."""

from __future__ import annotations

import getpass

import pytest

from spectui.ui import keys
from spectui.ui.widgets.profiles import GROUP
from tests.ui.support import panel_text, wait_for
from tests.ui.test_selection_by_name import SIZE, console_maker, found, ready, send_server


@pytest.fixture
def fixed_console(tmp_path, monkeypatch):
    return console_maker(tmp_path, monkeypatch)


STORY = ["kimi-baseline", "kimi-eagle3", "kimi-ngram"]
STOPPED = [f"ext-{p}" for p in range(43102, 43122)]


def crowd(host) -> None:
    """Another user's servers that ran and stopped, one of theirs running, and one of the operator's own."""
    for name in STOPPED:
        send_server(host, found(int(name[4:]), state="stopped", pid=None, user="alice", uid=1001))
    send_server(host, found(30000, user="alice", uid=1001))
    send_server(host, found(43100, user=getpass.getuser()))


def found_rows(app) -> list[str]:
    return [n for n in app.row_names() if n not in STORY]


async def crowded(pilot, app, host) -> None:
    await ready(pilot, app)
    crowd(host)
    await wait_for(pilot, lambda: all(n in app.link.servers for n in [*STOPPED, "ext-30000", "ext-43100"]), 10,
                   "the found servers")
    app.refresh_now()
    await pilot.pause(0.2)


def test_the_group_s_keys_are_declared_once_with_ids_for_the_footer_help_and_palette():
    ids = {b.id: b for b in keys.DASHBOARD}
    for bid, action in (("dashboard.found_group", "found_group"), ("dashboard.found_stopped", "found_stopped"),
                        ("dashboard.found_owner", "found_owner")):
        assert ids[bid].action == action and action in keys.PALETTE_ACTIONS and ids[bid].tooltip


async def test_found_servers_are_a_group_under_the_profiles_with_stopped_ones_hidden(fixed_console):
    app, (host,) = fixed_console()
    async with app.run_test(size=SIZE) as pilot:
        await crowded(pilot, app, host)
        assert app.row_names()[:3] == STORY
        assert found_rows(app) == ["ext-30000", "ext-43100"]      # the running ones; the 20 stopped are hidden
        text = panel_text(app, "profiles")
        assert "found on this host (2)" in text and "20 stopped hidden" in text
        assert not any(name in text for name in STOPPED)
        await pilot.press("full_stop")                              # show the stopped ones too
        assert found_rows(app) == ["ext-30000", "ext-43100", *STOPPED]
        assert "found on this host (22)" in panel_text(app, "profiles")
        await pilot.press("full_stop")
        assert found_rows(app) == ["ext-30000", "ext-43100"]
        await pilot.press("u")                                      # only the operator's own
        assert found_rows(app) == ["ext-43100"]
        assert "found on this host (1)" in panel_text(app, "profiles") and "yours only" in panel_text(app, "profiles")
        await pilot.press("u")
        assert found_rows(app) == ["ext-30000", "ext-43100"]
        await pilot.press("o")                                      # folded: only the profiles are rows
        assert app.row_names() == STORY
        assert "found on this host (2)" in panel_text(app, "profiles")
        assert "ext-30000" not in panel_text(app, "profiles")
        await pilot.press("o")
        assert found_rows(app) == ["ext-30000", "ext-43100"]


async def test_the_panels_never_follow_a_found_server_by_themselves(fixed_console):
    app, (host,) = fixed_console()
    async with app.run_test(size=SIZE) as pilot:
        await crowded(pilot, app, host)
        app.highlight_row("kimi-ngram")                            # a profile that has not run here
        app.refresh_now()
        await pilot.pause(0.3)
        assert app.focus() in (None, "kimi-ngram")
        title = app.dashboard.query_one("#server").title_text or ""
        assert "ext-" not in title, title
        app.highlight_row("ext-30000")                             # the operator chose it: now it is followed
        app.refresh_now()
        await pilot.pause(0.3)
        assert app.focus() == "ext-30000" and "ext-30000" in app.dashboard.query_one("#server").title_text


async def test_a_found_server_that_stopped_is_forgotten_after_the_grace_period_by_the_link_and_the_console(
        fixed_console):
    app, (host,) = fixed_console()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        send_server(host, found(43100))
        await wait_for(pilot, lambda: "ext-43100" in app.row_names(), 10, "its row")
        app.logs.buffer("ext-43100")                               # the console's own table of it: its log
        app.link.found_grace_s = 1.0
        send_server(host, found(43100, state="stopped", pid=None))
        await wait_for(pilot, lambda: "ext-43100" not in app.link.servers, 15, "the link to forget it")
        await wait_for(pilot, lambda: "ext-43100" not in app.logs.buffers, 15, "the console to forget it")
        assert "ext-43100" not in app.link.series and "ext-43100" not in app.row_names()


async def test_a_click_on_the_group_s_heading_folds_and_unfolds_it(fixed_console):
    app, (host,) = fixed_console()
    async with app.run_test(size=SIZE) as pilot:
        await crowded(pilot, app, host)
        panel = app.dashboard.query_one("#profiles")

        async def click_heading():
            y = panel.origins.index(panel.row_of.index(GROUP))
            region, content = panel.region, panel.scrollable_content_region
            await pilot.click("#profiles", offset=(content.x - region.x + 2, content.y - region.y + y))
            await pilot.pause(0.2)

        await click_heading()
        assert app.row_names() == STORY
        await click_heading()
        assert found_rows(app) == ["ext-30000", "ext-43100"]
