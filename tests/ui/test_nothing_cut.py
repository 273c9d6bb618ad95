"""Nothing on the console is cut, at every terminal size: a long banner wraps onto the rows it needs, the header
row ends in a readable word, and every notification's full text is reachable. A fixed host
(tests/ui/fixed_host.py) answers the console, so what is on screen is exactly what each test sends."""

from __future__ import annotations

import pytest

from spectui.core.alerts import Alert
from spectui.cli.main import main
from spectui.core.settings import load_settings
from spectui.ui.draw import DEFAULT_STYLES
from spectui.ui.screens.help import HelpScreen
from spectui.ui.screens.notifications import Kept, NotificationsScreen, WrappedLines, notification_lines
from spectui.ui.views import HeaderView
from spectui.ui.widgets.header import STATE_MARK, HeaderBar, header_row
from tests.ui.fixed_host import NOW
from tests.ui.test_reflow import SIZES, norm, screen_lines
from tests.ui.support import wait_for
from tests.ui.test_selection_by_name import console_maker, ready

pytestmark = pytest.mark.timeout(240)

BELOW = ("kimi-eagle3: accept length 1.71 (Prometheus) is below the break-even L* 2.31 (measured): speculation now "
         "costs throughput.")


@pytest.fixture
def fixed_console(tmp_path, monkeypatch):
    return console_maker(tmp_path, monkeypatch)


def firing(monkeypatch, message: str = BELOW) -> None:
    """One alert fires on the host (the console judges none of its own)."""
    alert = Alert("below_break_even", "kimi-eagle3", message, NOW - 40, NOW - 10, 1.71, host="gpu-host")
    monkeypatch.setattr("spectui.ui.controllers.alerts.AlertsController.active", lambda self: [alert.to_dict()])


async def shown(pilot, app) -> list[str]:
    await ready(pilot, app)
    app.refresh_now()
    await pilot.pause(0.3)
    return screen_lines(app)


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_a_banner_longer_than_the_row_wraps_onto_the_rows_it_needs(fixed_console, monkeypatch, size):
    firing(monkeypatch)
    app, _ = fixed_console(serving="kimi-eagle3", served_before="kimi-baseline")
    async with app.run_test(size=size) as pilot:
        lines = await shown(pilot, app)
        banner = app.dashboard.query_one("#banner")
        rows = lines[banner.region.y:banner.region.bottom]
        assert banner.region.height > 1 and all(r.rstrip() for r in rows), rows
        text = norm(" ".join(rows))
        assert BELOW in text and text.endswith("! lists alerts"), rows
        assert norm(" ".join(lines[banner.region.bottom:])).startswith("spectui │ demo-1")  # the header below it


@pytest.mark.parametrize("size", SIZES)
async def test_the_header_row_is_whole_and_ends_in_a_readable_word_at_every_size(fixed_console, size):
    app, _ = fixed_console(serving="kimi-eagle3", served_before="kimi-baseline")
    async with app.run_test(size=size) as pilot:
        lines = await shown(pilot, app)
        header = app.dashboard.query_one("#header")
        assert header.region.height == 1 and "\n" not in header.text, header.text  # one row, nothing folded under
        row = lines[header.region.y].rstrip()
        assert row == header.text.rstrip() and len(row) <= size[0]
        words = row.split()
        assert words[-1] not in set(STATE_MARK.values()) | {"│"}, row  # never a bare mark or separator
        assert "● connected" in row, row


def test_the_state_word_gives_way_last_with_its_mark_and_separator():
    view = HeaderView(host="demo-1", kind="demo", simulated=True, gpu_model="NVIDIA RTX PRO 6000 Blackwell",
                      gpu_count=8, sglang="0.5.23", link_state="connected", rtt_ms=0.4, traffic=True,
                      interconnect="8x RTX PRO 6000 Blackwell, PCIe Gen5 x16, no NVLink", telemetry_hz=1.0,
                      ports_note="demo ports moved: 30000 was taken, serving on 30100", ports_short="ports 30100")
    bar = HeaderBar()
    widths = range(30, header_row(view, DEFAULT_STYLES).width + 1)
    rows = {w: bar.draw(view, w, DEFAULT_STYLES)[0].plain.rstrip() for w in widths}
    for w, row in rows.items():
        assert row.split()[-1] not in set(STATE_MARK.values()) | {"│"}, (w, row)
        assert ("● connected" in row) == ("●" in row), (w, row)
    fits = [w for w, row in rows.items() if "● connected" in row]
    assert fits and all(w in fits for w in widths if w >= min(fits)), "the word goes last, and only then"
    assert "8 GPUs" in rows[min(fits)] and "traffic" not in rows[min(fits)]  # what gave way before it


# --- every notification's full text is reachable --------------------------------------------------------------------
async def test_the_settings_problems_and_every_notification_are_listed_in_full_on_n(fixed_console, tmp_path):
    path = tmp_path / "config" / "config.yaml"
    path.write_text("theme: no-such-theme\nkeymap:\n  dashboard.no_such_key: x\n")
    app, _ = fixed_console(settings=load_settings(), serving="kimi-eagle3", served_before="kimi-baseline")
    async with app.run_test(size=(80, 24)) as pilot:
        await shown(pilot, app)
        toast = [n.message for n in app.notification_log if n.message.startswith("Settings:")]
        assert toast and "(and 1 more: n lists them)" in toast[0]  # the toast names one problem, and where the rest are
        long = "A notification longer than any toast at this size: " + "every word of it stays readable. " * 6
        app.notify(long.strip(), timeout=1)
        await pilot.press("?")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 5, "the help")
        assert "Notifications screen" in str(app.screen.table.columns[0]._cells)  # n is listed among the keys
        await pilot.press("escape", "n")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, NotificationsScreen) and app.screen, 5, "n")
        await pilot.pause(0.2)
        text = norm(screen.query_one(WrappedLines).text)
        assert f"{path}:1:8: there is no theme 'no-such-theme'" in text
        assert "'dashboard.no_such_key'" in text and "Settings problems: 2" in text
        assert norm(long) in text and norm(toast[0]) in text
        lines = screen_lines(app)
        assert all(len(line.rstrip()) <= 80 for line in lines)
        assert norm(" ".join(lines)).count("every word of it stays readable.") == 6  # wrapped on screen, not cut
        await pilot.press("n")
        await wait_for(pilot, lambda: screen is not app.screen and app.screen is app.dashboard, 5, "back")


def test_the_notification_lines_list_each_problem_and_notification_whole():
    kept = [Kept(NOW - 5, "warning", "", "first"), Kept(NOW, "information", "Bench", "second")]
    lines = notification_lines(kept, ["problem one", "problem two"], dropped=3)
    assert lines[:3] == ["Settings problems: 2 (the other settings apply)", "  1. problem one", "  2. problem two"]
    assert lines[-3].endswith("Bench: second") and lines[-2].endswith("first") and "3 older" in lines[-1]


def test_config_show_lists_every_problem_the_console_finds_in_full(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPECTUI_CONFIG_DIR", str(tmp_path / "conf"))
    (tmp_path / "conf").mkdir()
    path = tmp_path / "conf" / "config.yaml"
    path.write_text("theme: no-such-theme\nkeymap:\n  dashboard.no_such_key: x\n  dashboard.stop: q\n")
    assert main(["config", "show"]) == 0
    err = capsys.readouterr().err
    assert f"{path}:1:8: there is no theme 'no-such-theme'" in err
    assert f"{path}:3:" in err and "'dashboard.no_such_key'" in err
    assert f"{path}:4:" in err and "dashboard.quit" in err  # q is the quit key's: a clash, named
    assert len([line for line in err.splitlines() if line.startswith("spectui: ")]) == 3


async def test_a_banner_at_160x50_leaves_the_speculative_panel_its_l_star_lines(fixed_console, monkeypatch):
    """An alert banner takes rows from the panels below it; at 160x50 the speculative panel still shows its L*
    and the step costs it comes from, not a ``↓ more`` where they were."""
    firing(monkeypatch)
    app, _ = fixed_console(serving="kimi-eagle3", served_before="kimi-baseline")
    async with app.run_test(size=(160, 50)) as pilot:
        lines = await shown(pilot, app)
        spec = app.dashboard.query_one("#spec")
        region = spec.region
        panel = [line[region.x:region.right] for line in lines[region.y:region.bottom]]
        text = norm(" ".join(panel))
        assert "↓" not in text, panel  # a panel that cannot show every row says how many are below
        assert "L* = " in text and "per step" in text, panel
