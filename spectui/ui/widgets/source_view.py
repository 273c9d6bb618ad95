"""``SourceView``: a file of SGLang's source, with line numbers and syntax highlighting (Line API).

The file arrives in pages (``FilePage``): the view holds the lines loaded so far and asks for
the next page (posting ``MorePageRequested``) when the reader scrolls near their end. Each page
is highlighted once with Pygments (through Rich's ``Syntax``), and lines are turned into strips
only when they are drawn. A cursor (line and column) marks the word ``g`` looks up.
"""

from __future__ import annotations

import bisect
import re

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from spectui.core.textsafe import visible

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
GUTTER_STYLE = Style(color="bright_black")
CURSOR_STYLE = Style(reverse=True)
CURSOR_LINE_STYLE = Style(bgcolor="grey19")
TARGET_STYLE = Style(bgcolor="dark_goldenrod")
HIGHLIGHT_BLOCK = 200


class MorePageRequested(Message):
    """The reader scrolled near the end of what is loaded: the screen fetches the next page."""

    def __init__(self, path: str, start: int) -> None:
        super().__init__()
        self.path = path
        self.start = start


class SourceView(ScrollView, can_focus=True):
    DEFAULT_CSS = "SourceView { height: 1fr; }"

    BINDINGS = [
        Binding("up", "cursor(-1, 0)", "Up", show=False),
        Binding("down", "cursor(1, 0)", "Down", show=False),
        Binding("left", "cursor(0, -1)", "Left", show=False),
        Binding("right", "cursor(0, 1)", "Right", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "Top", show=False),
        Binding("end", "edge(1)", "Bottom", show=False),
    ]

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.path: str | None = None
        self.language = "text"
        self.lines: list[str] = []
        self.total_lines = 0
        self.eof = True
        self.note: str | None = None
        self.cursor = (1, 0)            # 1-based line, 0-based column
        self.target: int | None = None  # the line a jump landed on
        self._pages: list[list] = []    # blocks: [first index, end index, language, styled lines or None]
        self._starts: list[int] = []
        self._cache: dict[int, Strip] = {}
        self._asked: int | None = None

    # --- content -------------------------------------------------------------------------------
    def open_page(self, page, line: int | None = None) -> None:
        """Show a file from its first page (``page.start`` must be 1, or the line asked for)."""
        self.path = page.path
        self.language = page.language
        self.lines = []
        self._pages = []
        self._starts = []
        self._cache.clear()
        self._asked = None
        self.note = page.note
        self._add(page)
        self._relayout()
        if line is None:
            self.target = None
            self.cursor = (1, 0)
            self.scroll_to_line(1)
        else:
            self.go_to(line)

    def add_page(self, page) -> None:
        """Append the next page of the file shown."""
        if page.path != self.path or page.start != len(self.lines) + 1:
            return
        self._add(page)
        self._asked = None
        self._relayout()

    def _add(self, page) -> None:
        first = len(self.lines)
        self.lines.extend(visible(line) for line in page.lines)  # a file on the host: controls shown
        self.total_lines = page.total_lines
        self.eof = page.eof
        for a in range(first, len(self.lines), HIGHLIGHT_BLOCK):
            self._pages.append([a, min(a + HIGHLIGHT_BLOCK, len(self.lines)), page.language, None])
            self._starts.append(a)

    def _styled(self, idx: int) -> Text:
        """Line ``idx`` highlighted; its block of lines is highlighted (Pygments) the first time it is drawn.

        Blocks are highlighted on their own, so a string or comment spanning two blocks may be
        coloured as code at the start of the second: the price of drawing only what is seen.
        """
        k = bisect.bisect_right(self._starts, idx) - 1
        if k < 0 or not self._pages[k][0] <= idx < self._pages[k][1]:
            return Text(self.lines[idx])
        entry = self._pages[k]
        if entry[3] is None:
            block = self.lines[entry[0]:entry[1]]
            code = "\n".join(block)
            from rich.syntax import Syntax  # Pygments loads with the first page shown, not with the console

            try:
                styled = Syntax(code, entry[2], theme="monokai", background_color="default").highlight(code)
                parts = styled.split("\n", allow_blank=True)
            except Exception:  # an unknown lexer: plain text
                parts = []
            if len(parts) < len(block):
                parts = [Text(line) for line in block]
            entry[3] = parts
        return entry[3][idx - entry[0]]

    @property
    def loaded(self) -> int:
        return len(self.lines)

    @property
    def number_gutter(self) -> int:
        return len(str(max(self.total_lines, 1))) + 2

    def _relayout(self) -> None:
        self._cache.clear()
        width = max((len(s) for s in self.lines), default=0) + self.number_gutter + 1
        self.virtual_size = Size(width, len(self.lines))
        self.refresh()

    # --- moving ----------------------------------------------------------------------------------
    def scroll_to_line(self, line: int, center: bool = False) -> None:
        y = max(0, line - 1 - (self.scrollable_content_region.height // 3 if center else 0))
        self.scroll_to(y=y, animate=False, immediate=True)

    def go_to(self, line: int) -> None:
        """Mark ``line``, put the cursor on it and scroll it into view (a third down).

        A file just opened into an empty (or shorter) view gets its vertical scrollbar only at the
        next layout, and Textual does not scroll a widget without one (``allow_vertical_scroll``):
        the scroll is made again once that layout is done.
        """
        self.target = line
        self.cursor = (min(line, max(1, self.loaded)), 0)
        self._cache.clear()
        self.scroll_to_line(line, center=True)
        self.call_after_refresh(self.scroll_to_line, line, True)
        self.refresh()

    def word_at_cursor(self) -> str | None:
        line, col = self.cursor
        if not 1 <= line <= len(self.lines):
            return None
        for m in _WORD.finditer(self.lines[line - 1]):
            if m.start() <= col < m.end() or (col == m.end() and m.end() > m.start()):
                return m.group()
        return None

    def action_cursor(self, dy: int, dx: int) -> None:
        line, col = self.cursor
        line = min(max(1, line + dy), max(1, len(self.lines)))
        text = self.lines[line - 1] if self.lines else ""
        col = min(max(0, col + dx), max(0, len(text)))
        self._move_cursor(line, col)

    def action_page(self, direction: int) -> None:
        h = max(1, self.scrollable_content_region.height - 1)
        self.action_cursor(direction * h, 0)

    def action_edge(self, end: int) -> None:
        self._move_cursor(len(self.lines) if end else 1, 0)

    def _move_cursor(self, line: int, col: int) -> None:
        old = self.cursor[0]
        self.cursor = (line, col)
        self._cache.pop(old - 1, None)
        self._cache.pop(line - 1, None)
        top = int(self.scroll_offset.y)
        h = self.scrollable_content_region.height
        if line - 1 < top:
            self.scroll_to(y=line - 1, animate=False, immediate=True)
        elif h and line - 1 >= top + h:
            self.scroll_to(y=line - h, animate=False, immediate=True)
        self.refresh()
        self._maybe_more()

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        self._maybe_more()

    def _maybe_more(self) -> None:
        if self.eof or self.path is None or self._asked == self.loaded + 1:
            return
        bottom = int(self.scroll_offset.y) + self.scrollable_content_region.height
        if bottom >= self.loaded - 50 or self.cursor[0] >= self.loaded - 50:
            self._asked = self.loaded + 1
            self.post_message(MorePageRequested(self.path, self.loaded + 1))

    # --- drawing ---------------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        idx = y + int(self.scroll_offset.y)
        width = self.scrollable_content_region.width or self.size.width
        if not 0 <= idx < len(self.lines):
            return Strip.blank(width, self.rich_style)
        strip = self._cache.get(idx)
        if strip is None:
            strip = self._draw(idx)
            self._cache[idx] = strip
        return strip.crop_extend(int(self.scroll_offset.x), int(self.scroll_offset.x) + width, self.rich_style)

    def _draw(self, idx: int) -> Strip:
        number = idx + 1
        gutter = Segment(f"{number:>{self.number_gutter - 2}}  ", GUTTER_STYLE)
        text = self._styled(idx).copy()
        line, col = self.cursor
        if number == self.target:
            text.stylize(TARGET_STYLE)
        if number == line:
            text.stylize(CURSOR_LINE_STYLE)
            if col >= len(text.plain):
                text.append(" ")
            text.stylize(CURSOR_STYLE, col, col + 1)
        segments = [gutter, *text.render(self.app.console)]
        return Strip(segments)

    @property
    def text(self) -> str:
        """The loaded lines with their numbers, as plain text (tests read this)."""
        w = self.number_gutter - 2
        return "\n".join(f"{i:>{w}}  {s}" for i, s in enumerate(self.lines, 1))
