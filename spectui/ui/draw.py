"""Drawing panels as rows of styled segments: bars, sparklines, charts, number formats.

Every panel of the dashboard is one Line-API widget; its rows are built here as
:class:`Row` objects (a list of ``(text, style)`` runs) and turned into Textual ``Strip``
objects once per change. Nothing here knows about the host or Textual's widgets.

Every run of text passes through ``Row.add``, which shows control characters instead of
passing them to the terminal (``spectui.core.textsafe.visible``): a server log line holding
``ESC[2J`` is drawn as ``␛[2J``, whichever panel shows it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from spectui.core.textsafe import visible

EIGHTHS = " ▏▎▍▌▋▊▉█"   # horizontal, left to right
LEVELS = " ▁▂▃▄▅▆▇█"    # vertical, bottom to top
SPARK = "▁▂▃▄▅▆▇█"


@dataclass(frozen=True)
class Styles:
    """The styles panels use, derived from the app's theme so light and dark themes both read."""

    text: Style
    dim: Style
    bold: Style
    title: Style
    ok: Style
    warn: Style
    bad: Style
    accent: Style
    info: Style
    bar: Style
    bar_hot: Style
    bar_empty: Style
    mark: Style
    highlight: Style
    match: Style

    @classmethod
    def from_variables(cls, v: dict[str, str]) -> "Styles":
        def color(name: str, default: str) -> str:
            value = v.get(name) or default
            return value[:7] if value.startswith("#") else default

        fg = color("foreground", "#e0e0e0")
        primary = color("primary", "#0178d4")
        return cls(
            text=Style(color=fg),
            dim=Style(color=fg, dim=True),
            bold=Style(color=fg, bold=True),
            title=Style(color=primary, bold=True),
            ok=Style(color=color("success", "#4ebf71")),
            warn=Style(color=color("warning", "#fea62b")),
            bad=Style(color=color("error", "#b93c5b"), bold=True),
            accent=Style(color=color("accent", "#fea62b")),
            info=Style(color=primary),
            bar=Style(color=primary),
            bar_hot=Style(color=color("warning", "#fea62b")),
            bar_empty=Style(color=fg, dim=True),
            mark=Style(color=color("warning", "#fea62b"), italic=True),
            highlight=Style(color=color("background", "#121212"), bgcolor=primary, bold=True),
            match=Style(color=color("background", "#121212"), bgcolor=color("accent", "#fea62b"), bold=True),
        )


DEFAULT_STYLES = Styles.from_variables({})


class Row:
    """One screen row being built: runs of text with a style each."""

    __slots__ = ("runs", "width")

    def __init__(self, text: str = "", style: Style | None = None):
        self.runs: list[tuple[str, Style | None]] = []
        self.width = 0
        if text:
            self.add(text, style)

    def add(self, text: str, style: Style | None = None) -> "Row":
        if text:
            text = visible(text)
            self.runs.append((text, style))
            self.width += cell_len(text)
        return self

    def pad_to(self, column: int, style: Style | None = None) -> "Row":
        if self.width < column:
            self.add(" " * (column - self.width), style)
        return self

    def extend(self, other: "Row") -> "Row":
        for text, style in other.runs:
            self.add(text, style)
        return self

    @property
    def plain(self) -> str:
        return "".join(t for t, _ in self.runs)

    def fold(self, width: int, indent: int = 2) -> list["Row"]:
        """This row as rows at most ``width`` cells wide, never cutting a value: a row that does not
        fit breaks between its runs (a run is one value or label), a run wider than a whole row
        breaks at its spaces, and only a word wider than a row breaks inside. Continuation rows
        start with ``indent`` spaces."""
        if self.width <= width or width <= 0:
            return [self]
        indent = min(indent, max(0, width // 4))
        rows = [Row()]
        for text, style in self.runs:
            for piece in _pieces(text, width - indent):
                row = rows[-1]
                if row.width + cell_len(piece) > width:
                    piece = piece.lstrip(" ")
                    if not piece:
                        continue
                    if row.plain.strip():
                        row = Row()
                        rows.append(row)
                    if row.width + cell_len(piece) > width or len(rows) > 1:
                        row.runs, row.width = [(" " * indent, None)] if indent else [], indent
                row.runs.append((piece, style))
                row.width += cell_len(piece)
        for row in rows:  # a space that ended up last on a row is no value
            while row.runs and row.width > width and row.runs[-1][0].endswith(" "):
                text, style = row.runs.pop()
                row.width -= cell_len(text)
                if text.rstrip(" "):
                    row.runs.append((text.rstrip(" "), style))
                    row.width += cell_len(text.rstrip(" "))
        return rows

    def strip(self, width: int, base: Style | None = None) -> Strip:
        segments = [Segment(t, s) for t, s in self.runs]
        strip = Strip(segments, self.width).crop_extend(0, width, None)
        return strip.apply_style(base) if base is not None else strip


def _pieces(text: str, room: int) -> list[str]:
    """``text`` whole if it fits in ``room`` cells, else split after its spaces (words keep their
    trailing space), and a word wider than ``room`` in ``room``-cell parts."""
    if cell_len(text.lstrip(" ")) <= room or room <= 0:
        return [text]
    out: list[str] = []
    for word in text.split(" "):
        out.append(word + " ")
    out[-1] = out[-1][:-1]
    pieces: list[str] = []
    for word in out:
        while cell_len(word.rstrip(" ")) > room:
            cut = room
            while cut > 1 and cell_len(word[:cut]) > room:
                cut -= 1
            pieces.append(word[:cut])
            word = word[cut:]
        if word:
            pieces.append(word)
    return pieces


# --- numbers --------------------------------------------------------------------------------------
def fnum(value: float | None, digits: int = 1, unit: str = "", none: str = "–") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return none
    return f"{value:.{digits}f}{unit}"


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    s = int(seconds)
    if s < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def gib(mib: float | None) -> str:
    return "–" if mib is None else f"{mib / 1024:.0f}"


# --- bars and charts --------------------------------------------------------------------------------
def hbar(fraction: float | None, width: int, style: Style, empty: Style) -> Row:
    """A horizontal bar ``width`` cells wide filled to ``fraction`` (eighth-cell precision)."""
    row = Row()
    if width <= 0:
        return row
    if fraction is None or math.isnan(fraction):
        return row.add("·" * width, empty)
    f = min(1.0, max(0.0, fraction))
    eighths = int(round(f * width * 8))
    full, part = divmod(eighths, 8)
    row.add("█" * full, style)
    used = full
    if part and used < width:
        row.add(EIGHTHS[part], style)
        used += 1
    if used < width:
        row.add("░" * (width - used), empty)
    return row


def sparkline(values: Sequence[float | None], width: int, lo: float, hi: float) -> str:
    """The last ``width`` values as one row of block characters on the fixed scale lo..hi."""
    vals = list(values)[-width:] if width > 0 else []
    out = []
    span = (hi - lo) or 1.0
    for v in vals:
        if v is None or math.isnan(v):
            out.append(" ")
        else:
            f = min(1.0, max(0.0, (v - lo) / span))
            out.append(SPARK[min(len(SPARK) - 1, int(f * (len(SPARK) - 1) + 0.5))])
    return " " * (width - len(out)) + "".join(out)


def column_chart(values: Sequence[float | None], width: int, height: int, lo: float, hi: float) -> list[str]:
    """A ``height``-row chart of the last ``width`` values (one column each), top row first.

    A missing value (``None``/NaN) is a gap, never a repeat of its neighbour.
    """
    if width <= 0 or height <= 0:
        return [""] * max(0, height)
    vals = list(values)[-width:]
    vals = [None] * (width - len(vals)) + vals
    span = (hi - lo) or 1.0
    levels = []
    for v in vals:
        if v is None or math.isnan(v):
            levels.append(None)
        else:
            f = min(1.0, max(0.0, (v - lo) / span))
            levels.append(int(round(f * height * 8)))
    rows = []
    for r in range(height):
        floor = (height - 1 - r) * 8
        line = []
        for lv in levels:
            if lv is None:
                line.append(" ")
            else:
                line.append(LEVELS[max(0, min(8, lv - floor))])
        rows.append("".join(line))
    return rows


def nice_max(values: Iterable[float | None], floor: float) -> float:
    """A round upper bound for a chart of ``values``, at least ``floor``."""
    top = max([v for v in values if v is not None and not math.isnan(v)] + [floor])
    if top <= 0:
        return floor
    mag = 10 ** math.floor(math.log10(top))
    for step in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if top <= step * mag:
            return step * mag
    return 10 * mag


def clean(values: Iterable[float]) -> tuple[float | None, ...]:
    """Floats with NaN turned into None (NaN never equals itself, which would defeat change checks)."""
    return tuple(None if (v is None or math.isnan(v)) else v for v in values)
