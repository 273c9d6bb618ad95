"""The footer: Textual's key footer that keeps help and quit (or back) in sight at every width.

Those keys sit at the right edge, before the palette key; the other keys fill the row from the
left in order, compact below ``COMPACT_BELOW`` columns, and a key that would not fit whole is
left out (the help screen, ``?``, lists every key).
"""

from __future__ import annotations

from textual.containers import HorizontalGroup
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

#: Actions whose keys the footer always shows.
KEEP = ("help", "quit_console", "close")
COMPACT_BELOW = 120


class KeyFooter(Footer):
    DEFAULT_CSS = """
    KeyFooter .footer-kept {
        dock: right;
        width: auto;
        height: 1;
    }
    KeyFooter .footer-kept FooterKey.-command-palette {
        dock: none;
    }
    """

    def compose(self):
        kept: list[FooterKey] = []
        for widget in super().compose():
            if isinstance(widget, FooterKey) and (widget.action in KEEP or widget.has_class("-command-palette")):
                kept.append(widget)
            else:
                yield widget
        if kept:
            # a class, not an id: two recomposes that overlap (the bindings changed twice) may compose it twice
            with HorizontalGroup(classes="footer-kept"):
                yield from kept

    def on_resize(self) -> None:
        self.compact = self.app.size.width < COMPACT_BELOW
        self.call_after_refresh(self._fit)

    def on_mount(self) -> None:
        super().on_mount()
        self.compact = self.app.size.width < COMPACT_BELOW

    def _fit(self) -> None:
        """Leave out, from the last, the keys that would run under the kept ones."""
        kept = self.query(".footer-kept")
        if not kept:
            return
        room = self.region.width - kept.first().outer_size.width
        x = 0
        for key in self.query(FooterKey):
            if key.parent is kept.first():
                continue
            x += key.render().cell_len + key.styles.margin.width
            key.display = x <= room

    async def recompose(self) -> None:
        await super().recompose()
        self.call_after_refresh(self._fit)
