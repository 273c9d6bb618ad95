"""The comparison's confirmation (``space`` + ``B``) names as running only the servers spectui started: servers
found on the host are counted apart and left alone, never listed as if the comparison would stop them."""

from __future__ import annotations

from spectui.ui.screens.confirm import ConfirmScreen
from spectui.ui.screens.picker import PresetPicker
from tests.ui.support import wait_for
from tests.ui.test_selection_by_name import fixed_console, found, ready, send_server  # noqa: F401 (fixture)


async def test_the_comparison_confirmation_lists_only_spectuis_servers_as_running(fixed_console):  # noqa: F811
    app, (host,) = fixed_console(serving="kimi-baseline")
    async with app.run_test(size=(140, 44)) as pilot:
        await ready(pilot, app)
        for port in (43100, 43101, 43102, 43103):
            send_server(host, found(port))
        await wait_for(pilot, lambda: all(f"ext-{p}" in app.link.servers for p in (43100, 43101, 43102, 43103)),
                       10, "the found servers")
        app.bench.marked = ["kimi-baseline", "kimi-eagle3"]
        await pilot.press("B")
        await wait_for(pilot, lambda: isinstance(app.screen, PresetPicker), 10, "the preset picker")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the confirmation")
        text = " ".join(app.screen.lines)
        assert "Running now: kimi-baseline (ready)." in text, text
        assert "ext-" not in text, text
        assert "4 servers found on the host that spectui did not start are left alone" in text, text
        await pilot.press("n")
