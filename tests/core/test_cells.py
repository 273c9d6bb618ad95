"""Columns measured in cells: a row holding a wide character lines up with the others."""

from rich.cells import cell_len

from spectui.core.cells import columns, pad, widths

ROWS = [["NAME", "ALGO", "PATH"], ["模型-eagle", "EAGLE3", "/m/a"], ["tiny", "none", "~/モデル/🚀"]]


def starts(line: str, word: str) -> int:
    """The cell at which ``word`` starts in ``line``."""
    return cell_len(line[:line.index(word)])


def test_a_row_with_wide_characters_lines_up():
    lines = columns(ROWS)
    assert {starts(lines[0], "ALGO"), starts(lines[1], "EAGLE3"), starts(lines[2], "none")} == {cell_len("模型-eagle") + 2}
    assert starts(lines[0], "PATH") == starts(lines[1], "/m/a") == starts(lines[2], "~/")


def test_len_based_padding_would_not():
    # the same table padded by characters: the wide row's next column starts later than the header's
    w = max(len(r[0]) for r in ROWS)
    header, wide = (r[0].ljust(w) + "  " + r[1] for r in ROWS[:2])
    assert starts(header, "ALGO") != starts(wide, "EAGLE3")


def test_pad_right_aligns_and_never_cuts():
    assert pad("模", 4, ">") == "  模" and pad("模型", 5) == "模型 " and pad("abcdef", 3) == "abcdef"
    assert widths([["a", "模型"], ["abc"]]) == [3, 4]
    assert columns([["1", "x"], ["100", "y"]], align=">") == ["  1  x", "100  y"]


def test_the_tune_table_lines_up_a_wide_profile_name():
    from spectui.cli.tune import table_text

    lines = table_text(["PROFILE", "C", "TOK/S"], [["模型-eagle", "1", "85.0"], ["tiny", "1", "40.1"]]).splitlines()
    assert len({starts(line, word) for line, word in zip(lines, ["TOK/S", "85.0", "40.1"])}) == 1, lines
