"""Every key, generated from the declarations in ``spectui.ui.keys`` (nothing typed twice)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from spectui.ui import keys


def help_table(app) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(justify="right", style="bold")
    table.add_column()
    keymap = keys.active_keymap(app)
    for group, bindings in keys.HELP_GROUPS:
        table.add_row(Text(group, style="bold underline"), "")
        digits = [b for b in bindings if b.key in keys.DIGITS]
        if any(b.id in keymap for b in digits):
            digits = []  # a digit remapped by the keymap: each gets its own row
        for b in bindings:
            if b in digits:
                if b is digits[0]:
                    table.add_row(f"{digits[0].key}-{digits[-1].key}", "Select profile N and switch to it")
                continue
            table.add_row(keys.key_display(app, b), b.tooltip or b.description)
        table.add_row("", "")
    table.add_row(Text("Anywhere", style="bold underline"), "")
    table.add_row(app.get_key_display(Binding(keys.PALETTE_KEY, "command_palette", "")), keys.PALETTE_HELP)
    return table


class HelpScreen(Screen):
    BINDINGS = keys.CLOSE

    def __init__(self) -> None:
        super().__init__(id="help")

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="page"):
            yield Static("Keys", classes="dialog-title")
            self.table = help_table(self.app)
            yield Static(self.table, id="help-table")
            yield Static("On a real host spectui never sends requests to a server unless you ask (benchmarks); "
                         "quitting leaves the servers running there. The demo stops its simulated servers when "
                         "you quit, unless started with --keep.", classes="dim")
        yield Footer()

    def action_close(self) -> None:
        self.dismiss()
