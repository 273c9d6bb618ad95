"""The full log of one server: search, wrap, follow toggle, save to a local file.

The search is the source browser's (``spectui.core.search``): a regular expression, or plain text
(``ctrl+t``). spectui's own polls of the server (uvicorn's ``GET /metrics`` lines, ...) are hidden
until ``p`` shows them; the status line counts them.
"""

from __future__ import annotations

import os
import time

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, Static

from spectui.core.search import Query, SearchError
from spectui.core.textsafe import visible_text
from spectui.ui import keys
from spectui.ui.clipboard import copy_text
from spectui.core.console.logs import LogBuffer
from spectui.ui.widgets.logtail import polls_note
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
        self.literal = False          # the search: a regular expression, or plain text (ctrl+t)
        self.search_error = ""        # why the last query typed is not searched (the previous one stays)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not keys.typed_into_a_box(self, action)

    def compose(self) -> ComposeResult:
        yield Static("", id="logs-status", markup=False)
        yield LogView(id="logview")
        yield Input(placeholder=self._placeholder(), id="logs-search")
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
        """Bring the view up to date with the buffer (the app calls this when a read changed it; before the
        screen is built or while it is taken down there is nothing to update)."""
        try:
            view = self.view
        except NoMatches:
            return
        view.set_lines(self.buffer.shown())
        self._status()

    def _placeholder(self) -> str:
        key = keys.key_label(self.app, "logs.search_mode")
        what = f"plain text ({key}: regular expression)" if self.literal else f"regular expression ({key}: plain text)"
        return f"search: {what}; enter: first match, n/N: next/previous, escape: done"

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
            parts.append(f"search {Query(v.needle, self.literal).label()}: {where} matches")
        if self.search_error:
            parts.append(self.search_error)
        polls = polls_note(self.buffer.poll_lines, self.buffer.options.polls_shown,
                           keys.key_label(self.app, "logs.polls"))
        if polls:
            parts.append(polls)
        if self.buffer.error:
            parts.append(self.buffer.error)
        status.update(visible_text("  ·  ".join(parts)))

    # --- actions -------------------------------------------------------------------------------------------
    def action_search(self) -> None:
        box = self.query_one("#logs-search", Input)
        box.display = True
        keys.focus_now(box)

    def _search(self, text: str) -> bool:
        """Search for ``text`` as the mode says; a bad regex: the sentence shown, the last matches kept."""
        try:
            self.view.set_search(Query(text, self.literal))
        except SearchError as exc:
            self.search_error = str(exc)
            self._status()
            return False
        self.search_error = ""
        self._status()
        return True

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "logs-search":
            self._search(event.value)

    def action_toggle_search_mode(self) -> None:
        self.literal = not self.literal
        box = self.query_one("#logs-search", Input)
        box.placeholder = self._placeholder()
        self._search(box.value)

    def action_toggle_polls(self) -> None:
        options = self.buffer.options
        options.polls_shown = not options.polls_shown
        view = self.view
        follow = view.follow
        view.set_lines(self.buffer.shown())
        view.set_follow(follow)
        self._status()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "logs-search":
            if not self._search(event.value):
                return
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
            self.search_error = ""
            self.view.set_search(None)
            self._status()
            return
        self.dismiss()
