"""End to end: a profile whose description sets the window title and clears the screen, in a real tmux.

The title is what tmux recorded from the escape sequences the program wrote (``#{pane_title}``):
if the console passed the description through, it would read ``pwned``.
"""

import shlex
import shutil

import pytest

from tests.e2e.test_demo_tmux import Tmux, free_port_base, kill_leftovers

SPECTUI = shutil.which("spectui")
TMUX = shutil.which("tmux")


@pytest.mark.timeout(120)
def test_a_description_with_an_osc_title_and_a_screen_clear_is_shown_not_obeyed(tmp_path):
    assert SPECTUI and TMUX, "needs the installed spectui and tmux (.ci/run installs tmux)"
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "hostile.yaml").write_text(
        'name: hostile\nmodel: sim/m\nport: 30777\ngpus: [0]\n'
        'description: "before \\e]0;pwned\\a\\e[2J [bold]loud[/bold] after"\n'
        'args:\n  tp-size: 1\nsim:\n  load-time: 0.3\n')
    state = tmp_path / "demo-state"
    env = {"SPECTUI_CONFIG_DIR": str(tmp_path / "config"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "SPECTUI_PROFILES_PATH": str(profiles), "TERM": "xterm-256color"}
    cmd = " ".join(["env", "-u", "COLUMNS", "-u", "LINES", *[f"{k}={shlex.quote(v)}" for k, v in env.items()],
                    shlex.quote(SPECTUI), "demo", "--no-traffic", "--state-dir", shlex.quote(str(state)),
                    "--port-base", str(free_port_base())])
    tmux = Tmux()
    try:
        tmux.start(cmd)
        screen = tmux.wait(lambda t: "connected" in t and "[bold]loud[/bold]" in t, 60, "the highlighted profile")
        line = next(l for l in screen.splitlines() if "loud" in l)
        assert "before ␛]0;pwned␇␛[2J [bold]loud[/bold]" in line, line
        title = tmux.run("display-message", "-p", "-t", tmux.session, "#{pane_title}").strip()
        assert "pwned" not in title
        assert "spectui" in screen  # the header is still there: the screen was not cleared under it
    finally:
        tmux.keys("q")
        tmux.kill()
        kill_leftovers(state)
