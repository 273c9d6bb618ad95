"""The command palette's commands: Textual's own less those the console's keys offer, each host, and the
dashboard's actions. Part of :class:`spectui.ui.app.SpectuiApp`."""

from __future__ import annotations

from collections.abc import Iterable

from rich.markup import escape
from textual.app import SystemCommand
from textual.screen import Screen

from spectui.ui import keys
from spectui.ui.screens.connecting import ConnectingScreen
from spectui.ui.screens.dashboard import HOST_ACTIONS
from spectui.ui.screens.dialogs import HostKeyChangedScreen
from spectui.ui.screens.notifications import NotificationLog


class PaletteCommands(NotificationLog):  # n: every notification in full
    # --- palette --------------------------------------------------------------------------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        ours = {keys.palette_title(b).lower() for b in keys.DASHBOARD} if self.dashboard is not None else set()
        # Textual's own (theme, screenshot, ...), less those the console's keys already offer: its Quit runs
        # action_quit, as the console's q does (told by what it runs: Textual 4 titles it "Quit the application")
        yield from (c for c in super().get_system_commands(screen)
                    if c.title.lower() not in ours and c.callback != self.action_quit)
        if self.dashboard is None:
            return
        if len(self.hosts) > 1:  # several hosts: each is a command, as k9s offers its contexts
            for i, host in enumerate(self.hosts):
                yield SystemCommand(f"Host: {host.label}", f"Show {host.label}'s dashboard (host {i + 1} of "
                                    f"{len(self.hosts)}; H lists them all)", lambda i=i: self.enter_host(i))
        for b in keys.DASHBOARD:
            name = b.action.split("(")[0]
            if name not in keys.PALETTE_ACTIONS or (self.replay is not None and name in HOST_ACTIONS):
                continue
            if name == "traffic" and not self.traffic.available:
                continue
            key = keys.key_display(self, b)
            # adopt and import are offered by the footer only on a found server's row; the palette always
            # offers them, and says what to highlight when the row is not one
            run = {"adopt": self.servers.request_adopt, "import_profile": self.servers.request_import}.get(name)
            yield SystemCommand(keys.palette_title(b), escape(f"{b.tooltip} (key: {key})"),
                                run or self._palette_action(b.action))

    def action_command_palette(self) -> None:
        # Not while connecting or refusing a changed host key: nothing there to command.
        if isinstance(self.screen, (ConnectingScreen, HostKeyChangedScreen)):
            return
        super().action_command_palette()

    def _palette_action(self, action: str):
        async def run() -> None:
            await self.run_action(action, self.dashboard)
        return run
