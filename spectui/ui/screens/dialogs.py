"""Dialogs around connecting: unknown host key, changed host key, passphrase, failure."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Input, Static

from spectui.core.errors import AgentStartError, AuthFailed, HostKeyError, HostKeyRevoked, HostUnreachable
from spectui.core.textsafe import visible_text


class HostKeyScreen(ModalScreen[str]):
    """An unknown host key: trust once, trust and save, or quit. Dismisses with once|save|quit."""

    BINDINGS = [
        Binding("o", "choose('once')", "Trust once", tooltip="Trust this key for this session only"),
        Binding("s", "choose('save')", "Trust and save", tooltip="Trust this key and add it to known_hosts"),
        Binding("q,escape", "choose('quit')", "Quit", tooltip="Do not connect"),
    ]

    def __init__(self, exc: HostKeyError) -> None:
        super().__init__(id="hostkey")
        self.exc = exc

    def compose(self) -> ComposeResult:
        e = self.exc
        name = e.host if e.port == 22 else f"[{e.host}]:{e.port}"
        with Vertical(classes="dialog"):
            yield Static(f"Unknown host key for {name}", classes="dialog-title", markup=False)
            yield Static(Text.assemble(("The host offers this key, which is not in ", ""), (e.known_hosts, "bold"),
                                       (":", "")))
            yield Static(Text.assemble((f"  {e.key_type}  ", ""), (e.fingerprint, "bold")), id="fingerprint")
            yield Static("Compare it with the host's own before trusting it: on the host, run\n"
                         "  ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub", classes="dim")
            with Horizontal(classes="buttons"):
                yield Button("Trust once (o)", id="once", variant="primary")
                yield Button("Trust and save (s)", id="save")
                yield Button("Quit (q)", id="quit", variant="error")

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id)


class HostKeyChangedScreen(Screen[None]):
    """A changed host key: the connection is refused and there is no way past this screen."""

    BINDINGS = [Binding("q,escape", "quit", "Quit", tooltip="Quit spectui")]

    def __init__(self, exc: HostKeyError) -> None:
        super().__init__(id="hostkey-changed")
        self.exc = exc

    def compose(self) -> ComposeResult:
        e = self.exc
        name = e.host if e.port == 22 else f"[{e.host}]:{e.port}"
        with Vertical(classes="dialog danger"):
            state = "IS REVOKED" if isinstance(e, HostKeyRevoked) else "HAS CHANGED"
            yield Static(f"THE HOST KEY OF {name} {state}", classes="dialog-title danger-title", markup=False)
            yield Static("spectui refuses to connect.", classes="danger-text")
            yield Static(
                "The host now offers a different key from the one recorded in known_hosts. Someone may be "
                "intercepting the connection (a man-in-the-middle attack), or the host was reinstalled or "
                "its keys were regenerated. Continuing would send your commands to whoever holds the new key.")
            yield Static(Text.assemble(("Offered now: ", ""), (f"{e.key_type} {e.fingerprint}", "bold")),
                         id="fingerprint")
            yield Static(Text.assemble(("Recorded in: ", ""), (e.known_hosts, "bold")))
            if isinstance(e, HostKeyRevoked):
                yield Static("known_hosts marks this key @revoked: it must never be accepted.", classes="dim")
            else:
                fix = getattr(e, "removal", None) or f"ssh-keygen -R '{name}' -f {e.known_hosts}"
                yield Static(f"If you have confirmed with the host's administrator that the change is expected, "
                             f"remove the old key and connect again:\n  {fix}", classes="dim", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Quit (q)", id="quit", variant="error")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_quit()

    def action_quit(self) -> None:
        self.app.exit(return_code=1)


class PassphraseScreen(ModalScreen[str | None]):
    """The passphrase of an encrypted identity file; dismisses with it, or None to quit."""

    BINDINGS = [Binding("escape", "cancel", "Quit", tooltip="Do not connect")]

    def __init__(self, message: str) -> None:
        super().__init__(id="passphrase")
        self.message = message

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static("Passphrase needed", classes="dialog-title")
            yield Static(visible_text(self.message), markup=False)
            yield Input(password=True, placeholder="passphrase (enter to connect, escape to quit)", id="passphrase-input")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


def failure_title(exc: Exception, host: str) -> str:
    if isinstance(exc, HostUnreachable):
        return f"Cannot reach {host}"
    if isinstance(exc, AuthFailed):
        return f"Authentication to {host} failed"
    if isinstance(exc, AgentStartError):
        return f"The agent could not start on {host}"
    return f"Connecting to {host} failed"


class FailureScreen(ModalScreen[str]):
    """A connection that failed: one clear sentence, retry or quit. Dismisses with retry|quit."""

    BINDINGS = [
        Binding("r,enter", "choose('retry')", "Retry", tooltip="Try to connect again"),
        Binding("q,escape", "choose('quit')", "Quit", tooltip="Quit spectui"),
    ]

    def __init__(self, exc: Exception, host: str) -> None:
        super().__init__(id="failure")
        self.exc = exc
        self.host = host

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(visible_text(failure_title(self.exc, self.host)), classes="dialog-title danger-title",
                         markup=False)
            yield Static(visible_text(str(self.exc) or type(self.exc).__name__), id="failure-message", markup=False)
            with Horizontal(classes="buttons"):
                yield Button("Retry (r)", id="retry", variant="primary")
                yield Button("Quit (q)", id="quit", variant="error")

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id)
