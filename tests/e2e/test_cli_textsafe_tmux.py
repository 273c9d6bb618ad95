"""End to end: every command that prints host or file text, in a real tmux, fed escapes.

Each command runs in a pane of its own, between two lines the pane prints itself. The escapes are a
window title (OSC 0), a screen clear (``ESC[2J``) and a clipboard write (OSC 52). tmux obeys all
three when they reach it (``set-clipboard on`` turns OSC 52 into a paste buffer): a first pane that
prints them raw shows the test can see each one. Then for every command: the pane's title is still
tmux's own, the line printed before the command is still on the screen, and no paste buffer exists.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_cli_escapes import CLIPBOARD, HOSTILE, TITLE, write_hostile_host
from tests.e2e.test_demo_tmux import Tmux

SPECTUI = shutil.which("spectui")
TMUX = shutil.which("tmux")


def hostile_world(tmp: Path) -> tuple[dict, list[tuple[str, list[str]]]]:
    """The environment and the commands (name, argv): a source tree, a simulated host, a Python, a
    profile, a settings file, a server log and an imported benchmark result, each carrying the escapes."""
    root = tmp / "sglang"
    spec = root / "srt" / "speculative"
    spec.mkdir(parents=True)
    (spec / "worker.py").write_text(f'NOTE = "{HOSTILE}"\n')
    (spec / f"n{TITLE}{CLIPBOARD}.py").write_text("PWNED = 1\n")
    state = write_hostile_host(tmp / "demo-state")
    python = tmp / "python"
    python.write_text(f"#!/bin/sh\n{shlex.quote(sys.executable)} -c 'import sys; sys.stderr.write(sys.argv[1] * 3 "
                      f"+ \"x\" * 100000 + sys.argv[1])' {shlex.quote(HOSTILE)}\nexit 1\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    profile = tmp / "hostile.yaml"
    profile.write_text('name: hostile\nmodel: m\nport: 30001\ngpus: [0]\nargs:\n  "tp\\e[2J\\e]52;c;eA==\\a": 1\n'
                       '"zz\\e]0;PWNED\\a": 3\n')
    config = tmp / "config"
    config.mkdir()
    (config / "config.yaml").write_text('"bad\\e]0;PWNED\\a\\e[2J\\e]52;c;eA==\\a": 1\n')
    log = tmp / "server.log"
    log.write_text(f"[2025-12-04 10:05:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
                   f'  File "x.py", line 1, in <module>\ntorch.OutOfMemoryError: CUDA out of memory. {HOSTILE}\n')
    jsonl = tmp / "bench.jsonl"
    row = json.loads((Path(__file__).resolve().parents[1] / "bench" / "fixtures" / "sglang_serving.jsonl")
                     .read_text().splitlines()[0])
    row["server_info"].update(model_path="moonshotai/" + HOSTILE, version="0.5.23" + TITLE)
    jsonl.write_text(json.dumps(row) + "\n")
    env = {"SPECTUI_CONFIG_DIR": str(config), "XDG_CACHE_HOME": str(tmp / "cache"),
           "SPECTUI_DATA_DIR": str(tmp / "data"), "TERM": "xterm-256color", "NOISY_PYTHON": str(python)}
    imported = subprocess.run([SPECTUI, "history", "import", str(jsonl)], env={**os.environ, **env},
                              capture_output=True, text=True, timeout=60)
    assert imported.returncode == 0, imported.stderr
    source = ["source", "--host", "local", "--sglang-root", str(root)]
    commands = [
        ("source tree", [*source, "tree", "srt/speculative"]),
        ("source show", [*source, "show", "srt/speculative/worker.py"]),
        ("source grep", [*source, "grep", "PWNED"]),
        ("source show, a missing file", [*source, "show", f"srt/speculative/missing{TITLE}.py"]),
        ("status, the demo host", ["status", "--demo", "--state-dir", str(state)]),
        ("status, several hosts", ["status", "-H", "local", "-H", "h" + TITLE, "--connect-timeout", "5"]),
        ("status, several hosts, JSON", ["status", "-H", "local", "-H", "h" + TITLE, "--json"]),
        ("status, a Python's stderr", ["status", "--host", "local", "--python", str(python)]),
        ("profiles check", ["profiles", "check", str(profile)]),
        ("logs parse", ["logs", "parse", str(log)]),
        ("logs summary", ["logs", "summary", str(log)]),
        ("history list", ["history", "list"]),
        ("history show", ["history", "show", "1"]),
    ]
    return env, commands


class Panes(Tmux):
    """One tmux server; each command in a session of its own."""

    def open(self) -> None:
        self.run("new-session", "-d", "-s", "hold", "-x", "160", "-y", "60", "sleep 600")
        self.run("set-option", "-s", "set-clipboard", "on")
        self.default_title = self.title("hold")

    def title(self, session: str) -> str:
        return self.run("display-message", "-p", "-t", session, "#{pane_title}").strip()

    def buffers(self) -> str:
        return self.run("list-buffers", check=False).strip()

    def begin(self, session: str, shell: str) -> None:
        """Run ``shell`` between the lines BEFORE and AFTER in a new session (the pane's shell then waits, so
        that nothing tmux writes on a pane's end moves the screen)."""
        self.run("new-session", "-d", "-s", session, "-x", "160", "-y", "100",
                 f"printf 'BEFORE\\n'; {shell}; printf 'AFTER %s\\n' $?; exec sleep 600")

    def finish(self, session: str, shell: str, timeout: float = 90) -> str:
        """:meth:`begin`, then the screen once it ended."""
        self.begin(session, shell)
        return self.finish_wait(session, timeout)

    def finish_wait(self, session: str, timeout: float = 90) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.run("capture-pane", "-p", "-S", "-", "-t", session)
            if "AFTER" in screen:
                return self.run("capture-pane", "-p", "-J", "-t", session)  # wrapped lines joined
            time.sleep(0.2)
        raise AssertionError(f"{session} did not end within {timeout} s:\n{screen}")


@pytest.mark.timeout(300)
def test_no_command_lets_host_text_set_the_title_clear_the_screen_or_write_the_clipboard(tmp_path):
    assert SPECTUI and TMUX, "needs the installed spectui and tmux (.ci/run installs tmux)"
    env, commands = hostile_world(tmp_path)
    panes = Panes()
    try:
        panes.open()
        # the raw escapes, printed as they are: tmux obeys each one, so the checks below can see them
        raw = panes.finish("raw", "printf " + shlex.quote(HOSTILE.replace("\x1b", "\\033").replace("\x07", "\\007")))
        assert "BEFORE" not in raw and "PWNED" in panes.title("raw") and panes.buffers(), (raw, panes.title("raw"))
        panes.run("delete-buffer", check=False)
        assert not panes.buffers()

        words = ["env", "-u", "COLUMNS", "-u", "LINES", *[f"{k}={v}" for k, v in env.items()], SPECTUI]
        # every command in its own pane, all at once (each pane keeps its own screen and title; a clipboard
        # write by any of them leaves a paste buffer, which no command's check below may see)
        for i, (_, argv) in enumerate(commands):
            panes.begin(f"c{i}", " ".join(shlex.quote(w) for w in [*words, *argv]) + " 2>&1")
        # the console: the agent's start failure on its screen, then, after q, the note it leaves behind
        session = "console"
        panes.run("new-session", "-d", "-s", session, "-x", "160", "-y", "100",
                  " ".join(shlex.quote(w) for w in [*words, "connect", "local", "--python", env["NOISY_PYTHON"]])
                  + "; printf 'AFTER %s\\n' $?; exec sleep 600")
        for i, (name, _) in enumerate(commands):
            session = f"c{i}"
            screen = panes.finish_wait(session)
            assert "BEFORE" in screen and "AFTER" in screen, f"{name}: the screen was cleared:\n{screen}"
            assert "␛" in screen, f"{name}: the escapes are not on the screen:\n{screen}"
            assert panes.title(session) == panes.default_title, f"{name}: the title became {panes.title(session)!r}"
            assert not panes.buffers(), f"{name} (or a command beside it) wrote the clipboard: {panes.buffers()}"

        session = "console"
        deadline = time.monotonic() + 90
        while "could not start" not in panes.run("capture-pane", "-p", "-t", session) and time.monotonic() < deadline:
            time.sleep(0.3)
        panes.run("send-keys", "-t", session, "q")
        screen = panes.finish_wait(session)
        assert "could not start" in screen and "␛" in screen and "characters cut" in screen, screen
        assert panes.title(session) == panes.default_title, f"the console's note set the title {panes.title(session)!r}"
        assert not panes.buffers(), f"the console's note wrote the clipboard: {panes.buffers()}"
    finally:
        panes.kill()
