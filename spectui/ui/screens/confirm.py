"""Confirmation before anything that stops a server or fetches something, showing what will run."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from spectui.core.textsafe import visible_text
from spectui.ui import keys


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = keys.CONFIRM

    def __init__(self, title: str, lines: list[str], command: str | None = None, *, yes: str = "Yes",
                 where: str = "on the host") -> None:
        super().__init__(id="confirm")
        self.title_text = title
        self.lines = lines
        self.command = command
        self.yes = yes
        self.where = where

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            # profile values and host records reach this dialog: shown as text, control characters visible
            yield Static(visible_text(self.title_text), classes="dialog-title", markup=False)
            for line in self.lines:
                yield Static(visible_text(line), markup=False)
            if self.command:
                yield Static(f"This command will run {self.where}:", classes="dim")
                yield Static(visible_text(self.command), id="confirm-command", classes="command", markup=False)
            with Horizontal(classes="buttons"):
                yield Button(f"{self.yes} (y)", id="yes", variant="warning")
                yield Button("Cancel (n)", id="no")

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")
