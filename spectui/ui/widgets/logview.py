"""The full log view: Line API over many lines, with wrap, search highlight and follow.

The search is ``spectui.core.search``'s (the source browser's too): a regular expression or plain
text; :meth:`LogView.set_search` raises ``SearchError`` for a bad one and keeps the last matches.

Rows are laid out arithmetically (a wrapped line takes ceil(len / width) rows) and drawn only
when visible, so a long log costs nothing until it is looked at.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from spectui.core.search import Query
from spectui.ui.draw import DEFAULT_STYLES, Row, Styles
from spectui.ui.widgets.logtail import styled_line


class LogView(ScrollView, can_focus=True):
    DEFAULT_CSS = "LogView { height: 1fr; }"

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.lines: list[str] = []
        self.wrap = False
        self.follow = True
        self.needle = ""                        # the search as typed ("" : none)
        self.pattern: re.Pattern | None = None  # ... compiled
        self.matches: list[int] = []
        self.match_index = -1
        self._starts: list[int] = []
        self._total = 0
        self._width = 0
        self._longest = 0
        self._cache: dict[tuple[int, int], Strip] = {}

    # --- content ---------------------------------------------------------------------------------------
    def set_lines(self, lines: Sequence[str]) -> None:
        old = self.lines
        new = list(lines)
        if len(new) >= len(old) and new[: len(old)] == old and old:
            self._append(new[len(old):])
        else:
            self.lines = new
            self._layout()
        if self.follow:
            self.scroll_end(animate=False, immediate=True)

    def _append(self, extra: list[str]) -> None:
        if not extra:
            return
        start = len(self.lines)
        self.lines.extend(extra)
        w = self._width or 1
        for i, line in enumerate(extra, start):
            self._starts.append(self._total)
            self._total += self._rows_of(line, w)
            self._longest = max(self._longest, len(line))
            if self.pattern is not None and self.pattern.search(line):
                self.matches.append(i)
        self._resize()

    def _rows_of(self, line: str, w: int) -> int:
        return max(1, -(-len(line) // w)) if self.wrap else 1

    def _layout(self) -> None:
        w = self.scrollable_content_region.width or self.size.width or 80
        self._width = w
        self._starts = []
        total = 0
        for line in self.lines:
            self._starts.append(total)
            total += self._rows_of(line, w)
        self._total = total
        self._longest = max((len(l) for l in self.lines), default=0)
        self._find()
        self._cache.clear()
        self._resize()

    def _resize(self) -> None:
        width = self._width if self.wrap else max(self._width, self._longest)
        self.virtual_size = Size(width, self._total)
        self.refresh()

    def on_resize(self) -> None:
        w = self.scrollable_content_region.width
        if w and w != self._width:
            self._layout()
            if self.follow:
                self.scroll_end(animate=False, immediate=True)

    # --- modes -----------------------------------------------------------------------------------------------
    def set_wrap(self, wrap: bool) -> None:
        self.wrap = wrap
        self._layout()

    def set_follow(self, follow: bool) -> None:
        self.follow = follow
        if follow:
            self.scroll_end(animate=False, immediate=True)

    def set_search(self, query: Query | None) -> None:
        """Search for ``query`` (None or empty: no search); ``SearchError`` (nothing changed) for a bad regex."""
        pattern = query.compile() if query is not None and query.text else None
        self.needle = query.text if pattern is not None else ""
        self.pattern = pattern
        self._find()
        self._cache.clear()
        self.refresh()

    def _find(self) -> None:
        p = self.pattern
        self.matches = [i for i, line in enumerate(self.lines) if p.search(line)] if p is not None else []
        self.match_index = -1

    def jump(self, step: int) -> int | None:
        """Scroll to the next (+1) or previous (-1) match; returns the line index or None."""
        if not self.matches:
            return None
        if self.match_index < 0:
            top = int(self.scroll_offset.y)
            after = [k for k, i in enumerate(self.matches) if self._starts[i] >= top]
            self.match_index = (after[0] if after else 0) if step > 0 else ((after[0] - 1) if after else len(self.matches) - 1)
        else:
            self.match_index = (self.match_index + step) % len(self.matches)
        line = self.matches[self.match_index]
        self.follow = False
        self.scroll_to(y=max(0, self._starts[line] - self.scrollable_content_region.height // 3), animate=False,
                       immediate=True)
        self._cache.clear()
        self.refresh()
        return line

    def shown_line(self) -> str | None:
        """The line ``y`` copies: the current search match's, else the last line on screen (None: no lines)."""
        if not self.lines:
            return None
        if self.match_index >= 0 and self.matches:
            return self.lines[self.matches[self.match_index]]
        bottom = int(self.scroll_offset.y) + max(self.scrollable_content_region.height, 1) - 1
        return self.lines[max(0, bisect.bisect_right(self._starts, min(bottom, self._total - 1)) - 1)]

    # --- drawing ---------------------------------------------------------------------------------------------
    @property
    def ui_styles(self) -> Styles:
        return getattr(self.app, "draw_styles", DEFAULT_STYLES)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width or self.size.width
        row = y + int(self.scroll_offset.y)
        if row >= self._total or not self.lines:
            return Strip.blank(width, self.rich_style)
        i = bisect.bisect_right(self._starts, row) - 1
        chunk = row - self._starts[i]
        key = (i, chunk)
        strip = self._cache.get(key)
        if strip is None:
            line = self.lines[i]
            current = self.match_index >= 0 and self.matches and self.matches[self.match_index] == i
            st = self.ui_styles
            if self.wrap:
                w = self._width or width
                r = styled_line(line, w, st, self.pattern, chunk * w, (chunk + 1) * w)
            else:
                r = styled_line(line, len(line), st, self.pattern)
            if current and (not self.wrap or chunk == 0):
                r = Row("▶", st.match).extend(r)
            strip = r.strip(max(r.width, 1), self.rich_style)
            if len(self._cache) > 4000:
                self._cache.clear()
            self._cache[key] = strip
        x = 0 if self.wrap else int(self.scroll_offset.x)
        return strip.crop_extend(x, x + width, self.rich_style)
