"""While connecting: one progress line (what is happening, for how long)."""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Center, Middle
from textual.screen import Screen
from textual.widgets import Static

from spectui.core.textsafe import visible_text

class ConnectingScreen(Screen):
    BINDINGS = [Binding("q,escape", "app.quit", "Quit", tooltip="Give up and quit")]

    def __init__(self, label: str) -> None:
        super().__init__(id="connecting")
        self.label = label
        self.started = time.monotonic()
        self.status = f"connecting to {label}"

    def compose(self) -> ComposeResult:
        with Middle():
            with Center():
                yield Static("spectui", id="connecting-title")
            with Center():
                yield Static(self._line(), id="connecting-line", markup=False)

    def _line(self) -> str:
        return visible_text(f"{self.status} … {time.monotonic() - self.started:.0f} s")

    def set_status(self, text: str | None = None) -> None:
        if text:
            self.status = text
        if self.is_mounted:
            self.query_one("#connecting-line", Static).update(self._line())
