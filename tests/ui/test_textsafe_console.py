"""Host and profile text on the console: escape sequences and markup are shown, never obeyed."""

import json

from textual.app import App

from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget
from spectui.ui import snapshots
from spectui.ui.app import SpectuiApp
from spectui.core.console.logs import LogBuffer
from spectui.ui.widgets.logtail import LogTail
from spectui.ui.widgets.profiles import ProfilesList
from tests.support.sshd import free_port
from tests.ui.support import connected, panel_text, server_state, wait_for

# What an API client can put in a server log with --log-requests: clear the screen, set the window
# title (OSC 0 ended by BEL), backspace over text, and Rich markup.
HOSTILE_LOG = "[2026-11-30 10:00:00] Receive: obj=GenerateReqInput(text='\x1b[2J\x1b]0;pwned\x07 [bold]hi[/bold]\x08')"
SHOWN_LOG = "␛[2J␛]0;pwned␇ [bold]hi[/bold]␈"


def obeyable(text: str) -> list[str]:
    return [ch for ch in text if ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F]


def frame_text(app) -> str:
    """Everything the app would write to the terminal now, as the text of its segments (rows joined by
    U+2029, which no row holds once made safe)."""
    strips = app.screen._compositor.render_strips()
    return "\u2029".join("".join(seg.text for seg in strip) for strip in strips)


class PanelsHost(App):
    CSS = "LogTail, ProfilesList { height: 1fr; width: 100%; }"

    def compose(self):
        yield LogTail(id="logtail")
        yield ProfilesList(id="profiles")


def write_hostile_profile(folder, port):
    # YAML double-quoted strings: \e is ESC, \a is BEL
    (folder / "hostile.yaml").write_text(
        f'name: hostile\nmodel: "sim/m\\e[2J"\nport: {port}\ngpus: [0]\n'
        f'description: "desc \\e]0;pwned\\a [bold]loud[/bold]\\e[31m"\nargs:\n  tp-size: 1\nsim:\n  load-time: 0.3\n')


async def test_a_log_line_and_a_profile_description_with_escapes_are_drawn_escaped(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECTUI_PROFILES_PATH", str(tmp_path))
    write_hostile_profile(tmp_path, 30555)
    profiles = list(load_profiles())
    buf = LogBuffer("hostile")
    buf.feed({"lines": ["plain line", HOSTILE_LOG, "tab\there"], "offset": 10})
    app = PanelsHost()
    async with app.run_test(size=(140, 30)) as pilot:
        await pilot.pause()
        tail = app.query_one(LogTail)
        tail.show(snapshots.log_tail_view("hostile", buf.tail(10), None, False))
        plist = app.query_one(ProfilesList)
        plist.show(snapshots.profiles_view(None, profiles, 0, [], None))
        await pilot.pause()
        assert SHOWN_LOG in tail.text
        assert "tab     here" in tail.text
        assert "desc ␛]0;pwned␇ [bold]loud[/bold]␛[31m" in plist.text
        assert "sim/m␛[2J" in plist.text
        screen = frame_text(app)
        assert SHOWN_LOG in screen and "[bold]loud[/bold]" in screen
        assert not obeyable(screen)


async def test_the_console_shows_a_hostile_log_line_and_description_without_obeying_them(ui_env):
    write_hostile_profile(ui_env.profiles, free_port())
    app = SpectuiApp(HostTarget.demo(str(ui_env.state)), library=load_profiles(), traffic=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await connected(pilot, app)
        names = [p.name for p in app.profiles]
        app.set_highlight(names.index("hostile"))
        await pilot.press("enter")
        await wait_for(pilot, lambda: server_state(app, "hostile") == "ready" and app.busy is None, 60, "ready")
        await wait_for(pilot, lambda: "ready to roll" in panel_text(app, "logtail"), 20, "the log tail")
        record = json.loads((ui_env.state / "servers" / "hostile.json").read_text())
        with open(record["log_path"], "a", encoding="utf-8") as log:
            log.write(HOSTILE_LOG + "\n")
        await wait_for(pilot, lambda: SHOWN_LOG in panel_text(app, "logtail"), 20, "the hostile line")
        assert "desc ␛]0;pwned␇ [bold]loud[/bold]" in panel_text(app, "profiles")
        await pilot.pause(0.3)
        screen = frame_text(app)
        assert SHOWN_LOG in screen
        assert not obeyable(screen)
        await pilot.press("l")  # the full log view draws the same line
        await wait_for(pilot, lambda: SHOWN_LOG in frame_text(app), 10, "the log screen")
        assert not obeyable(frame_text(app))
