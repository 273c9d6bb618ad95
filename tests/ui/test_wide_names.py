"""Tables stay aligned when a name holds wide characters (a CJK character takes two terminal cells)."""

from rich.cells import cell_len

from spectui.ui.views import ProfileRow, ProfilesView
from spectui.ui.widgets.profiles import ProfilesList
from tests.ui.test_panels import shown


def column_at(line: str, word: str) -> int:
    """The terminal cell where ``word`` starts in ``line``."""
    return cell_len(line[:line.index(word)])


async def test_a_wide_profile_name_keeps_the_next_column_aligned():
    rows = (ProfileRow(1, "模型-eagle", "EAGLE3", "steps 3", "stopped"),
            ProfileRow(2, "kimi-eagle3", "NGRAM", "steps 3", "stopped"))
    text, _ = await shown(ProfilesList(), ProfilesView(rows, 1), size=(80, 8))
    lines = text.splitlines()
    wide = next(line for line in lines if "模型-eagle" in line)
    narrow = next(line for line in lines if "kimi-eagle3" in line)
    assert column_at(wide, "EAGLE3") == column_at(narrow, "NGRAM")
    assert column_at(wide, "stopped") == column_at(narrow, "stopped")
