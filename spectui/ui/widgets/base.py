"""``LinePanel``: a dashboard panel drawn with Textual's Line API from one snapshot.

A panel keeps the last snapshot it was given; :meth:`show` with an equal one does nothing,
a different one rebuilds the panel's rows once (``draw``) and repaints. Rows are cached as
strips, so scrolling and repaints cost no drawing.

A value is never cut: a panel shortens its labels to its width first; a row still wider than
the panel wraps between its values (``Row.fold``); rows that do not fit the panel's height
scroll, and the border says how many are below (``↓ 3 more``).
"""

from __future__ import annotations

from textual.content import Content
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from spectui.core.textsafe import one_line
from spectui.ui.draw import DEFAULT_STYLES, Row, Styles


def folded_len(rows: list[Row], width: int) -> int:
    """How many screen rows ``rows`` take once wrapped to ``width``."""
    return sum(len(r.fold(width)) for r in rows)


class LinePanel(ScrollView, can_focus=False):
    DEFAULT_CSS = """
    LinePanel {
        overflow-x: hidden;
        overflow-y: auto;
        scrollbar-size-vertical: 1;
    }
    """

    #: Title shown in the border; a subclass may compute it from the view (``title_of``).
    TITLE = ""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.view = None
        self._strips: list[Strip] = []
        self._drawn_width = -1
        self._drawn_height = -1
        self.draw_height = 0  # rows visible when drawing (panels with charts size them to it)
        self.draw_count = 0  # how many times this panel was drawn (tests and the bench read it)
        self.title_text: str | None = None  # the border title as plain text
        self.origins: list[int] = []  # per screen row: the index of the drawn row it belongs to

    # --- the contract with the app -------------------------------------------------------------
    def show(self, view, *, force: bool = False) -> bool:
        """Take a new snapshot; redraw only if it differs. Returns whether it redrew."""
        if not force and view == self.view:
            return False
        self.view = view
        self._rebuild()
        return True

    def draw(self, view, width: int, styles: Styles) -> list[Row]:  # pragma: no cover - abstract
        raise NotImplementedError

    def title_of(self, view) -> str:
        return self.TITLE

    # --- plumbing ------------------------------------------------------------------------------------
    @property
    def ui_styles(self) -> Styles:
        try:
            return getattr(self.app, "draw_styles", DEFAULT_STYLES)
        except Exception:  # not mounted in an app
            return DEFAULT_STYLES

    @property
    def text(self) -> str:
        """The panel's content as plain text (tests read this)."""
        return "\n".join(s.text for s in self._strips)

    def _rebuild(self) -> None:
        region = self.scrollable_content_region
        width = region.width or self.size.width
        if width <= 0:
            return
        self.draw_height = region.height or self.size.height
        rows = self.draw(self.view, width, self.ui_styles)
        self.draw_count += 1
        base = self.rich_style
        folded = [(i, part) for i, row in enumerate(rows) for part in row.fold(width)]
        self.origins = [i for i, _ in folded]
        grew = len(folded) != len(self._strips)
        self._strips = [part.strip(width, base) for _, part in folded]
        self._drawn_width = width
        self._drawn_height = self.draw_height
        title = self.title_of(self.view)
        if title != self.title_text:  # plain text (a profile name, a filter): never markup, no control codes
            self.title_text = title
            self.border_title = Content(one_line(title))
        self.virtual_size = Size(width, len(self._strips))
        self._mark_more()
        self.refresh(layout=grew and self.styles.height is not None and self.styles.height.is_auto)

    def row_at(self, y: int) -> int | None:
        """The index of the drawn row shown at row ``y`` of the panel (rows may wrap), if any."""
        idx = y + int(self.scroll_offset.y)
        return self.origins[idx] if 0 <= idx < len(self.origins) else None

    def _mark_more(self) -> None:
        """``↓ N more`` in the bottom border while rows lie below the panel's last visible row."""
        if not self.has_class("panel"):
            return
        height = self.scrollable_content_region.height
        below = len(self._strips) - int(self.scroll_offset.y) - height if height > 0 else 0
        subtitle = f"↓ {below} more" if below > 0 else ""
        if self.border_subtitle != subtitle:
            self.border_subtitle = subtitle

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._mark_more()

    def on_resize(self) -> None:
        region = self.scrollable_content_region
        if region.width != self._drawn_width or region.height != self._drawn_height:
            self._rebuild()
        else:
            self._mark_more()

    def render_line(self, y: int) -> Strip:
        idx = y + int(self.scroll_offset.y)
        width = self.scrollable_content_region.width or self.size.width
        if 0 <= idx < len(self._strips):
            return self._strips[idx].crop_extend(0, width, self.rich_style)
        return Strip.blank(width, self.rich_style)
