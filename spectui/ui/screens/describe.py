"""A server described in full (``d``, as k9s describes a resource): the text of ``spectui servers
describe`` (:func:`spectui.core.server_describe.describe`), kept current while it is shown."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from spectui.core.server_describe import command_text, describe
from spectui.ui import keys
from spectui.ui.clipboard import copy_text


class DescribeScreen(Screen):
    BINDINGS = keys.DESCRIBE

    def __init__(self, name: str) -> None:
        super().__init__(id="describe")
        self.server = name
        self._shown: dict | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="page", id="describe-page"):
            yield Static("", id="describe-title", classes="dialog-title", markup=False)
            yield Static("", id="describe-text", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#describe-page").focus()
        self.sync()

    def record(self) -> dict | None:
        link = self.app.link
        return link.servers.get(self.server) if link is not None else None

    @property
    def text(self) -> str:
        """What the screen shows (the lines of ``spectui servers describe``)."""
        return "\n".join(describe(self._shown)) if self._shown else f"{self.server}: no record on the host"

    def sync(self) -> None:
        """Show the server's record as the host last sent it (the app calls this each refresh)."""
        if not self.is_mounted:
            return
        rec = self.record()
        if rec is None or rec == self._shown:
            return
        self._shown = dict(rec)
        self.query_one("#describe-title", Static).update(f"Describe {describe(rec)[0]}")
        self.query_one("#describe-text", Static).update("\n".join(describe(rec)[1:]))

    def action_copy(self) -> None:
        rec = self._shown or {}
        if not rec.get("argv"):
            self.notify(f"{self.server}: the host gave no command line to copy.", severity="warning")
            return
        copy_text(self.app, command_text(rec["argv"]), f"the command of {describe(rec)[0]}")

    def action_close(self) -> None:
        self.dismiss()
