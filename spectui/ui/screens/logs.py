"""The full log of one server: search, wrap, follow toggle, save to a local file."""

from __future__ import annotations

import os
import time

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, Static

from spectui.core.textsafe import visible_text
from spectui.ui import keys
from spectui.ui.clipboard import copy_text
from spectui.ui.logbuffer import LogBuffer
from spectui.ui.widgets.logview import LogView


def default_save_path(name: str) -> str:
    return os.path.abspath(f"spectui-{name}-{time.strftime('%Y%m%d-%H%M%S')}.log")


def save_lines(path: str, lines) -> int:
    path = os.path.expanduser(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    n = 0
    with open(path, "w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line + "\n")
            n += 1
    return n


class SavePathScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel", tooltip="Do not save")]

    def __init__(self, default: str) -> None:
        super().__init__(id="save-path")
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("Save the log to a local file", classes="dialog-title")
            yield Input(value=self.default, id="save-input")
            yield Static("enter saves, escape cancels", classes="dim")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class LogScreen(Screen):
    BINDINGS = keys.LOGS

    def __init__(self, buffer: LogBuffer) -> None:
        super().__init__(id="logs")
        self.buffer = buffer
        self._seen = -1

    def compose(self) -> ComposeResult:
        yield Static("", id="logs-status", markup=False)
        yield LogView(id="logview")
        yield Input(placeholder="search (enter: first match, n/N: next/previous, escape: done)", id="logs-search")
        yield Footer()

    def on_mount(self) -> None:
        try:
            self.query_one("#logs-search", Input).display = False
            view = self.view
        except NoMatches:  # taken down (the app closing) before it was shown
            return
        self.sync()
        view.focus()

    @property
    def view(self) -> LogView:
        return self.query_one(LogView)

    def sync(self) -> None:
        """Bring the view up to date with the buffer (the app calls this while the screen is
        shown; before it is built or while it is taken down there is nothing to update)."""
        try:
            view = self.view
        except NoMatches:
            return
        if self.buffer.version != self._seen:
            self._seen = self.buffer.version
            view.set_lines(self.buffer.lines)
        self._status()

    def _status(self) -> None:
        try:
            v = self.view
            status = self.query_one("#logs-status", Static)
        except NoMatches:
            return
        parts = [f"log · {self.buffer.name}", f"{len(v.lines)} lines",
                 "follow on" if v.follow else "follow off", "wrap on" if v.wrap else "wrap off"]
        if v.needle:
            where = f"{v.match_index + 1}/{len(v.matches)}" if v.match_index >= 0 else f"{len(v.matches)}"
            parts.append(f"search {v.needle!r}: {where} matches")
        if self.buffer.error:
            parts.append(self.buffer.error)
        status.update(visible_text("  ·  ".join(parts)))

    # --- actions -------------------------------------------------------------------------------------------
    def action_search(self) -> None:
        box = self.query_one("#logs-search", Input)
        box.display = True
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "logs-search":
            self.view.set_needle(event.value)
            self._status()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "logs-search":
            self.view.focus()
            if not event.value:
                event.input.display = False
            self.view.jump(1)
            self._status()

    def action_next_match(self) -> None:
        if self.view.jump(1) is None:
            self.notify("no matches" if self.view.needle else "search first with /", severity="warning", markup=False)
        self._status()

    def action_previous_match(self) -> None:
        self.view.jump(-1)
        self._status()

    def action_toggle_wrap(self) -> None:
        self.view.set_wrap(not self.view.wrap)
        self._status()

    def action_toggle_follow(self) -> None:
        self.view.set_follow(not self.view.follow)
        self._status()

    def action_save(self) -> None:
        def done(path: str | None) -> None:
            if not path:
                return
            try:
                n = save_lines(path, list(self.buffer.lines))
            except OSError as exc:
                self.notify(f"Could not save to {path}: {exc.strerror or exc}.", severity="error", markup=False)
                return
            self.notify(f"Saved {n} lines to {os.path.abspath(os.path.expanduser(path))}", markup=False)

        self.app.push_screen(SavePathScreen(default_save_path(self.buffer.name)), done)

    def action_copy_line(self) -> None:
        line = self.view.shown_line()
        if line is None:
            self.notify("The log has no lines to copy yet.", severity="warning", markup=False)
            return
        copy_text(self.app, line, f"a line of {self.buffer.name}'s log")

    def action_close(self) -> None:
        box = self.query_one("#logs-search", Input)
        if box.has_focus:
            self.view.focus()
            if not box.value:
                box.display = False
            return
        if box.display or self.view.needle:  # a search is on ("escape: done"): end it, stay on the log
            box.value = ""
            box.display = False
            self.view.set_needle("")
            self._status()
            return
        self.dismiss()
