"""The sanitiser for host and profile text: every control character shown, none left for a terminal to obey."""

import io

import pytest

from spectui.core.textsafe import for_stream, one_line, visible, visible_lines, visible_text

C0 = [chr(c) for c in range(0x00, 0x20)]
C1 = [chr(c) for c in range(0x80, 0xA0)]


def obeyable(text: str) -> list[str]:
    """The characters of ``text`` a terminal could act on (C0, DEL, C1, lone surrogates)."""
    return [ch for ch in text if ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F or 0xD800 <= ord(ch) <= 0xDFFF]


def test_screen_clear_and_window_title_sequences_are_shown_not_obeyed():
    line = "[2026-11-30 10:00:00] req \x1b[2J\x1b]0;pwned\x07 done"
    assert visible(line) == "[2026-11-30 10:00:00] req ␛[2J␛]0;pwned␇ done"


@pytest.mark.parametrize("ch", [c for c in C0 if c != "\t"] + ["\x7f"], ids=lambda c: f"U+{ord(c):04X}")
def test_every_c0_control_and_del_becomes_its_one_cell_control_picture(ch):
    out = visible(f"a{ch}b")
    expected = {"\x7f": "\u2421", "\n": "\u2424"}.get(ch, chr(0x2400 + ord(ch)))  # LF: the symbol for newline
    assert out == f"a{expected}b"
    assert not obeyable(out)


@pytest.mark.parametrize("ch", C1, ids=lambda c: f"U+{ord(c):04X}")
def test_every_c1_control_is_written_as_a_hex_escape(ch):
    out = visible(f"a{ch}b")
    assert out == "a\\x%02xb" % ord(ch)
    assert not obeyable(out)


def test_the_8_bit_csi_of_some_terminals_is_escaped():
    assert visible("\x9b2J") == "\\x9b2J"


def test_named_controls_read_as_their_pictures():
    assert visible("\x1b") == "␛"
    assert visible("\x07") == "␇"
    assert visible("\x08") == "␈"
    assert visible("\r") == "␍"
    assert visible("\n") == "␤"
    assert visible("\x00") == "␀"


def test_lone_surrogates_and_text_reordering_characters_are_escaped():
    assert visible("x\udcff") == "x\\udcff"
    assert visible("abc\u202edcba") == "abc\\u202edcba"
    assert visible("a\u2066b\u2069") == "a\\u2066b\\u2069"
    assert visible("a\u2028b") == "a\\u2028b"


def test_tabs_are_expanded_to_columns_of_eight():
    assert visible("a\tb") == "a       b"
    assert visible("abcdefgh\tx") == "abcdefgh        x"
    assert visible("\t", tabsize=4) == "    "
    assert "\t" not in visible("\x1b\tz")


def test_plain_text_and_markup_come_back_unchanged():
    for text in ("Decode batch, #running-req: 1, accept len: 2.01", "[bold]not markup[/bold]", "é ü 中文 ▁▂▃",
                 "a\u00a0b", ""):
        assert visible(text) == text


def test_lines_keep_their_breaks_only_where_asked():
    assert visible_lines("one\r\ntwo\n\x1b[31mred\n") == ["one", "two", "␛[31mred"]
    assert visible_lines("") == []
    assert visible_text("a\x1b[2J\nb\n") == "a␛[2J\nb\n"
    assert visible_text("lone\rcr") == "lone␍cr"
    assert one_line("EAGLE-3 drafter\nfor Kimi\n") == "EAGLE-3 drafter for Kimi"
    assert one_line("desc \x1b]0;t\x07") == "desc ␛]0;t␇"


def test_nothing_obeyable_survives_any_code_point_below_0x100():
    every = "".join(chr(c) for c in range(0x100))
    assert not obeyable(visible(every))
    assert not obeyable(visible_text(every).replace("\n", ""))


class Stream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def test_a_terminal_gets_visible_text_and_a_pipe_the_bytes_as_they_were():
    line = "x\x1b[2Jy\n"
    assert for_stream(line, Stream(True)) == "x␛[2Jy\n"
    assert for_stream(line, Stream(False)) == line
