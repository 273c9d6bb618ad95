"""``LinePanel``: a dashboard panel drawn with Textual's Line API from one snapshot.

A panel keeps the last snapshot it was given; :meth:`show` with an equal one does nothing,
a different one rebuilds the panel's rows once (``draw``) and repaints. Rows are cached as
strips, so scrolling and repaints cost no drawing.
"""

from __future__ import annotations

from textual.content import Content
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from spectui.core.textsafe import one_line
from spectui.ui.draw import DEFAULT_STYLES, Row, Styles


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
        self._strips = [r.strip(width, base) for r in rows]
        self._drawn_width = width
        self._drawn_height = self.draw_height
        title = self.title_of(self.view)
        if title != self.title_text:  # plain text (a profile name, a filter): never markup, no control codes
            self.title_text = title
            self.border_title = Content(one_line(title))
        self.virtual_size = Size(width, len(self._strips))
        self.refresh()

    def on_resize(self) -> None:
        region = self.scrollable_content_region
        if region.width != self._drawn_width or region.height != self._drawn_height:
            self._rebuild()

    def render_line(self, y: int) -> Strip:
        idx = y + int(self.scroll_offset.y)
        width = self.scrollable_content_region.width or self.size.width
        if 0 <= idx < len(self._strips):
            return self._strips[idx].crop_extend(0, width, self.rich_style)
        return Strip.blank(width, self.rich_style)
