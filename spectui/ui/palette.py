"""The command palette's profile commands: "Switch to PROFILE" and "Stop PROFILE" for each, and "Stop
ext-PORT" for each server spectui found running.

The key commands (logs, help, quit, ...) come from ``SpectuiApp.get_system_commands``, built
from the same key declarations as the footer and the help screen.
"""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider


class ProfileCommands(Provider):
    def _commands(self) -> list[tuple[str, object, str]]:
        servers = self.app.servers
        out = []
        for name, state in servers.profile_states():
            out.append((f"Switch to {name}", partial(servers.request_switch, name),
                        f"stop what holds its GPUs or port, start {name}, wait until ready ({state} now)"))
        for name, state in servers.profile_states():
            out.append((f"Stop {name}", partial(servers.request_stop, name), f"stop the {name} server ({state} now)"))
        for name, state in servers.found_states():
            out.append((f"Stop {name}", partial(servers.request_stop, name),
                        f"stop {name}, which spectui did not start ({state} now; lists its processes first)"))
        return out

    async def discover(self) -> Hits:
        for title, callback, help_text in self._commands():
            yield DiscoveryHit(title, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, callback, help_text in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_text)
