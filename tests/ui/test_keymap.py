"""Binding ids and the settings file's keymap: checked, applied by Textual, shown by the help screen,
the footer's bindings and the palette; and the settings' theme applied and saved."""

import os

from rich.console import Console

from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.core.settings import load_settings
from spectui.ui import keys
from spectui.ui.app import SpectuiApp
from spectui.ui.screens.help import HelpScreen
from tests.ui.support import connected, wait_for

SIZE = (120, 40)


def test_every_binding_has_its_own_id():
    ids = [b.id for group in keys.KEYMAP_GROUPS for b in group]
    assert None not in ids
    assert len(ids) == len(set(ids))
    assert keys.binding_ids()["dashboard.stop"].action == "stop"
    assert keys.binding_ids()["logs.save"].key == "ctrl+s"


def test_key_names_follow_the_keymap():
    stop = keys.binding_ids()["dashboard.stop"]
    assert keys.key_names(stop) == ["x"]
    assert keys.key_names(stop, {"dashboard.stop": "X,ctrl+k"}) == ["X", "ctrl+k"]
    assert keys.key_names(stop, {"dashboard.restart": "y"}) == ["x"]


def test_key_names_textual_reports():
    for good in ("x", "X", "?", "question_mark", "slash", "space", "enter", "f5", "ctrl+s", "ctrl+shift+up"):
        assert keys.is_key_name(good), good
    for bad in ("", " ", "foo", "ctrl+foo", "hyper+", "cmd+x", "f99"):
        assert not keys.is_key_name(bad), bad


def test_check_keymap_keeps_the_good_entries_and_says_why_for_each_other():
    usable, problems = keys.check_keymap({
        "dashboard.stop": "X",
        "dashboard.help": "?",
        "dashbord.probe": "P",
        "logs.save": "ctrl+foo",
        "dashboard.logs": "r",
    })
    assert usable == {"dashboard.stop": "X", "dashboard.help": "question_mark"}
    assert problems == [
        ("dashbord.probe", "there is no key binding with the id 'dashbord.probe'; did you mean 'dashboard.probe', "
                           "'dashboard.profile_9' or 'dashboard.profile_8'?"),
        ("logs.save", "'ctrl+foo' is not a key name (use a character such as x or ?, or a name such as enter, f5, "
                      "ctrl+x); the binding keeps its keys"),
        ("dashboard.logs", "the key r is already dashboard.restart's on the same screen; give dashboard.logs "
                           "another key, or dashboard.restart one too"),
    ]


def test_swapping_two_keys_is_no_clash_and_screens_do_not_clash_with_each_other():
    swap = {"dashboard.stop": "r", "dashboard.restart": "x", "logs.wrap": "x"}
    assert keys.check_keymap(swap) == (swap, [])


def test_a_clash_left_by_a_dropped_entry_is_found_too():
    # restart -> x is fine only while stop leaves x; stop's key is not a key name, so stop keeps x
    usable, problems = keys.check_keymap({"dashboard.stop": "ctrl+nope", "dashboard.restart": "x"})
    assert usable == {}
    assert [bid for bid, _ in problems] == ["dashboard.stop", "dashboard.restart"]


SETTINGS = """\
# the operator's console
theme: nord
default_host: gpu-box
keymap:
  dashboard.help: h
  dashboard.profile_2: f2
  dashbord.probe: P
"""


def help_text(app) -> str:
    console = Console(width=160, record=True, file=open(os.devnull, "w"))
    console.print(app.screen.table)
    return console.export_text()


async def test_the_keymap_moves_a_key_and_the_help_shows_it_and_the_theme_is_kept(ui_env):
    path = ui_env.tmp / "config" / "config.yaml"
    path.parent.mkdir()
    path.write_text(SETTINGS)
    app = SpectuiApp(HostTarget.demo(str(ui_env.state)), library=load_profiles(), traffic=False,
                     settings=load_settings())
    async with app.run_test(size=SIZE) as pilot:
        await connected(pilot, app)
        assert app.theme == "nord"
        # the one bad entry is reported where it is; the others apply
        assert any(f"{path}:7:19: there is no key binding with the id 'dashbord.probe'" in n.message
                   for n in app.notification_log)

        await pilot.press("question_mark")  # help's old key does nothing now
        await pilot.pause(0.3)
        assert app.screen is app.dashboard
        bound = app.dashboard.active_bindings
        assert bound["h"].binding.action == "help" and "question_mark" not in bound
        assert bound["f2"].binding.action == "switch_number(2)"

        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 5, "help on h")
        text = help_text(app)
        row = [line for line in text.splitlines() if "Show every key" in line][0]
        assert row.split("Show every key")[0].strip() == "h"
        profile_rows = [line.split("Select profile")[0].strip() for line in text.splitlines()
                        if "Select profile" in line]
        assert "f2" in profile_rows and "1-9" not in text  # a remapped digit gets its own row
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.dashboard, 5, "the dashboard")

        helps = [c for c in app.get_system_commands(app.dashboard) if c.title == "Help"]
        assert helps and helps[0].help.endswith("(key: h)")

        app.theme = "gruvbox"  # what the palette's "Theme" command does
        await wait_for(pilot, lambda: "gruvbox" in path.read_text(), 5, "the theme saved")
        assert path.read_text() == SETTINGS.replace("theme: nord", "theme: gruvbox")

        await pilot.press("q")
        await wait_for(pilot, lambda: app.exit_note is not None, 60, "quit")


async def test_an_unknown_theme_is_reported_and_the_default_kept(ui_env):
    path = ui_env.tmp / "config" / "config.yaml"
    path.parent.mkdir()
    path.write_text("default_host: gpu-box\ntheme: no-such-theme\n")
    app = SpectuiApp(HostTarget.demo(str(ui_env.state)), library=load_profiles(), traffic=False,
                     settings=load_settings())
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.notification_log, 10, "a notification")
        assert app.theme == "textual-dark"
        assert any(f"{path}:2:8: there is no theme 'no-such-theme'" in n.message for n in app.notification_log)
        await pilot.pause(0.3)
        assert path.read_text() == "default_host: gpu-box\ntheme: no-such-theme\n"  # not overwritten at start
        await pilot.press("q")
        await wait_for(pilot, lambda: app.exit_note is not None or not app.is_running, 60, "quit")


def test_the_settings_docs_list_every_binding_id():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "settings.md").read_text()
    missing = [bid for bid in keys.binding_ids()
               if f"`{bid}`" not in text and not bid.startswith("dashboard.profile_")]
    assert missing == [], f"docs/settings.md does not list these binding ids: {missing}"
    assert "`dashboard.profile_1` ... `dashboard.profile_9`" in text
