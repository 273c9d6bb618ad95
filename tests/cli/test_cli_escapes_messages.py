"""The text every command writes, and the errors it quotes: made safe once, wherever they are shown.

Profile and settings errors name keys and nodes of a file someone else may have written; their text
shows the control characters, for the console's screens and the log as for the command line.
"""

from __future__ import annotations

import io
import re

from spectui.cli.output import LINE_REWRITE, ProgressLine, TerminalStream
from spectui.core.profiles import ProfileError, load_profiles
from spectui.core.settings import load_settings
from spectui.core.textsafe import for_terminal, shortened, shortened_lines
from tests.cli.test_cli_escapes import Stream

OBEYABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_a_profile_error_shows_the_key_and_the_file_name(tmp_path):
    folder = tmp_path / "profiles\x1b[2J"
    folder.mkdir()
    (folder / "h.yaml").write_text('name: h\nmodel: m\nport: 30001\ngpus: [0]\nargs:\n  "tp\\e[2J": 1\n'
                                   '"zz\\e]0;PWNED\\a": 3\n')
    library = load_profiles([str(folder)])
    texts = [str(e) for e in library.errors]
    assert any("'zz␛]0;PWNED␇'" in t for t in texts) and any("'tp␛[2J'" in t for t in texts), texts
    assert all(not OBEYABLE.search(t) for t in texts) and all("profiles␛[2J" in t for t in texts), texts
    assert all(not OBEYABLE.search(e.to_dict()["text"]) for e in library.errors)


def test_a_settings_error_shows_the_key(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text('"bad\\e]0;PWNED\\a\\e[2J": 1\n"y\\x9b2J": 2\n')
    texts = [str(e) for e in load_settings(path).errors]
    assert len(texts) == 2 and "'bad␛]0;PWNED␇␛[2J' is not a setting" in texts[0], texts
    assert "\\x9b2J" in texts[1] and not any(OBEYABLE.search(t) for t in texts), texts


def test_profile_error_equality_and_location_still_hold():
    a = ProfileError("unknown field 'x'", path="p.yaml", line=3, column=1, field="x")
    assert a == ProfileError("unknown field 'x'", path="p.yaml", line=3, column=1) and str(a) == "p.yaml:3:1: unknown field 'x'"


def test_a_terminal_stream_keeps_tabs_and_line_breaks_and_shows_the_rest():
    out = Stream()
    stream = TerminalStream(out, terminal=True)
    assert stream.write("a\tb\r\n\x1b]0;t\x07\x9b\rc\n") == len("a\tb\r\n\x1b]0;t\x07\x9b\rc\n")
    assert out.getvalue() == "a\tb\r\n␛]0;t␇\\x9b␍c\n"
    assert stream.isatty() and for_terminal("plain") == "plain"


def test_a_progress_line_rewrites_itself_and_shows_the_host_text_in_it():
    out = Stream()
    progress = ProgressLine(TerminalStream(out, terminal=True), tty=True, clock=lambda: 0.0)
    progress.show("eagle: loading \x1b[2J")
    assert out.getvalue() == LINE_REWRITE + "[   0.0s] eagle: loading ␛[2J"
    out = Stream()
    TerminalStream(out, terminal=True).write("x" + LINE_REWRITE)  # only where a write starts
    assert out.getvalue() == "x␍␛[K"


def test_long_lines_keep_their_start_and_end_with_a_note():
    text = "start " + "x" * 50_000 + " end"
    short = shortened(text)
    assert short.startswith("start ") and short.endswith(" end") and len(short) < 2400
    assert f"[... {len(text) - 2300:,} characters cut ...]" in short
    assert shortened("short") == "short"
    assert shortened_lines("ok\n" + text + "\nok") == "ok\n" + short + "\nok"
    out = io.StringIO()
    TerminalStream(out, terminal=False, cut=True).write(text + "\n")
    assert out.getvalue() == short + "\n"
