"""The footer: Textual's key footer that keeps help and quit (or back) in sight at every width.

Those keys sit at the right edge, before the palette key; the other keys fill the row from the
left in order, compact below ``COMPACT_BELOW`` columns, and a key that would not fit whole is
left out (the help screen, ``?``, lists every key).

It recomposes only when what it shows changes while its screen is shown: a screen's bindings are refreshed often
(each redraw may), and a screen under another (the dashboard under the connecting screen) refreshes its footer
when it is shown again.
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

    _composed: tuple | None = None  # what the last compose showed (see :meth:`shown`)

    def shown(self) -> tuple | None:
        """What the footer would show now: each shown binding's key, its description and whether it is enabled;
        None before the screen's bindings are ready."""
        if not self._bindings_ready:
            return None
        keys = tuple((binding.key, binding.action, binding.description, enabled, tooltip,
                      binding.group.description if binding.group is not None else None)
                     for (_, binding, enabled, tooltip) in self.screen.active_bindings.values() if binding.show)
        return keys, self.show_command_palette, self.app.ENABLE_COMMAND_PALETTE

    def compose(self):
        self._composed = self.shown()
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
        if not self.is_attached or self.screen is not self.app.screen:
            return  # its screen is under another: refreshed when that screen is shown again (its bindings are)
        if self.shown() == self._composed:
            return
        await super().recompose()
        self.call_after_refresh(self._fit)
