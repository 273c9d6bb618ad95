"""Keys and screens that misbehaved in daily use, one test each: escape in the log search, j/k at the
ends of the list, the palette's entries, the reconnect banner's sentence, "retry now", the header's
SGLang before any server has run."""

import asyncio
import time

from spectui.core.live import HostLink, LinkState
from spectui.core.session import HostTarget
from spectui.ui import keys, snapshots
from spectui.ui.views import HeaderView
from spectui.ui.widgets.header import HeaderBar
from tests.ui.support import connected, wait_for
from tests.ui.test_found_server_views import found_record
from tests.ui.test_console_pilot import SIZE, make_app, open_alpha_log
from tests.ui.test_panels import shown


async def test_escape_in_the_log_search_ends_the_search_and_keeps_the_log_screen(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_alpha_log(pilot, app)
        await pilot.press("slash")
        await pilot.press(*"fired")
        box = screen.query_one("#logs-search")
        assert box.has_focus
        await pilot.press("escape")
        await pilot.pause(0.3)
        assert app.screen is screen, "escape in the search left the log screen"
        assert not box.has_focus
        highlight = app.highlight
        await pilot.press("j")  # acts on the log screen, not on the dashboard's list
        await pilot.pause(0.2)
        assert app.screen is screen and app.highlight == highlight
        # after enter (the first match) the search is still on: escape ends it, the screen stays
        await pilot.press("slash")
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert screen.view.needle and not box.has_focus
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert app.screen is screen and not screen.view.needle and not box.display
        await pilot.press("escape")  # with no search on, escape leaves
        await wait_for(pilot, lambda: app.screen is app.dashboard, 5, "the dashboard")


async def test_j_and_k_stop_at_the_ends_of_the_profile_list(ui_env):
    app = make_app(ui_env)
    mine = ["alpha", "beta", "broken"]  # the profiles this test wrote; other servers may run on the machine
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        assert app.row_names()[:3] == mine and app.highlighted_name() == "alpha"
        await pilot.press("k")
        assert app.highlighted_name() == "alpha", "k on the first row wrapped around"
        # a server of another user shows up on the machine meanwhile: a row of the group of found servers
        app.link.record_server(found_record(name="ext-40999", port=40999, user="alice"))
        await pilot.press("o")  # the group folded: the rows are the profiles, whatever else runs
        assert app.row_names() == mine
        for _ in range(len(mine) + 2):
            await pilot.press("j")
        assert app.highlighted_name() == "broken", "j on the last row wrapped around"
        await pilot.press("k")
        assert app.highlighted_name() == "beta"
        await pilot.press("o")  # unfolded: the found server's row comes after the profiles, the selection stays
        assert app.row_names()[:3] == mine and "ext-40999" in app.row_names()[3:]
        assert app.highlighted_name() == "beta"


async def test_the_palette_lists_each_command_once(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        titles = [c.title.lower() for c in app.get_system_commands(app.dashboard)]
        doubled = sorted({t for t in titles if titles.count(t) > 1})
        assert not doubled, doubled
        assert sum("quit" in t for t in titles) == 1, titles


def test_the_reconnect_banner_keeps_the_reason_s_own_punctuation():
    link = HostLink(HostTarget.demo("/nonexistent-state"))
    link.state = LinkState.RECONNECTING
    link.message = "127.0.0.1 refused the connection: is sshd running there, and is the port right?"
    link.reconnect_at = time.monotonic() + 8
    text = snapshots.banner_view(link).text
    assert "is the port right? Reconnecting in" in text, text
    assert "?." not in text
    link.message = "the host closed the connection"
    assert "the host closed the connection. Reconnecting in" in snapshots.banner_view(link).text


async def test_retry_now_ends_the_wait_before_the_next_attempt():
    link = HostLink(HostTarget.demo("/nonexistent-state"))
    waiting = asyncio.ensure_future(link._wait_backoff(30.0, "the host closed the connection"))
    await asyncio.sleep(0.1)
    assert link.state is LinkState.RECONNECTING and not waiting.done()
    assert link.retry_now() is True
    await asyncio.wait_for(waiting, 2.0)
    assert link.reconnect_at is None
    assert link.retry_now() is False  # nothing to cut short now


def test_retry_now_is_a_declared_key_with_an_id():
    binding = [b for b in keys.DASHBOARD if b.action == "retry_now"]
    assert binding and binding[0].id == "dashboard.retry_now"
    assert "retry_now" in keys.PALETTE_ACTIONS


async def test_retry_now_key_reconnects_at_once(ui_env):
    app = make_app(ui_env)
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        link = app.link
        reconnects = link.reconnects
        link.backoff_start_s = 30.0  # a long wait, so only the key can end it within the test
        await link.session.client.close()
        await wait_for(pilot, lambda: link.state is LinkState.RECONNECTING, 10, "reconnecting")
        assert link.reconnect_in_s() > 5
        await pilot.press("R")
        await wait_for(pilot, lambda: link.connected and link.reconnects > reconnects, 15, "reconnected at once")


def _header(view, width=160):
    return shown(HeaderBar(), view, size=(width, 1))


async def test_header_says_sglang_is_not_found_instead_of_a_question_mark():
    base = dict(host="gpu-host", kind="ssh", simulated=False, gpu_model="NVIDIA H200", gpu_count=8,
                sglang=None, link_state="connected", rtt_ms=0.4)
    text, _ = await _header(HeaderView(**base, sglang_note="SGLang not found"))
    assert "SGLang not found" in text and "SGLang ?" not in text
    text, _ = await _header(HeaderView(**dict(base, sglang="0.5.23")))
    assert "SGLang 0.5.23" in text


def test_header_view_reads_sglang_from_the_host_facts_before_any_server():
    link = HostLink(HostTarget.demo("/nonexistent-state"))
    link.state = LinkState.CONNECTED
    link.facts = {"simulated": False, "sglang": {"installed": False, "version": None, "python": "/usr/bin/python3"}}
    view = snapshots.header_view(link, traffic=None, busy=None)
    assert view.sglang is None and view.sglang_note == "SGLang not found"
    link.facts = {"simulated": True, "sglang": {"installed": False, "version": None}}
    assert snapshots.header_view(link, traffic=None, busy=None).sglang_note == "SGLang"  # then "(simulated)"
    link.facts = {"sglang": {"installed": True, "version": None}}
    assert snapshots.header_view(link, traffic=None, busy=None).sglang_note == "SGLang version unknown"
    link.facts = {"sglang": {"installed": True, "version": "0.5.23"}}
    assert snapshots.header_view(link, traffic=None, busy=None).sglang == "0.5.23"
