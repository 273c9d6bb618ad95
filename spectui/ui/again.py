"""The commands the quit note suggests (open the console again, stop its servers, collect a benchmark),
each with every host option the console was opened with, so that it reaches the same host the same way."""

from __future__ import annotations

from dataclasses import dataclass

from spectui.core.session import HostTarget


@dataclass(frozen=True)
class AgainCommands:
    reopen: str   # the console's own command line: ``spectui connect root@gpu -F cfg --python /venv/bin/python``
    host: str     # the host part of other commands: ``--host root@gpu -F cfg ...`` or ``--demo --state-dir DIR``

    @classmethod
    def of_target(cls, target: HostTarget) -> "AgainCommands":
        """Without the command line (an app made in code): the host's name alone."""
        if target.kind == "demo":
            return cls("spectui demo", "--demo")
        return cls(f"spectui connect {target.label}", f"--host {target.label}")

    @property
    def stop(self) -> str:
        return f"spectui servers stop {self.host}"

    @property
    def collect(self) -> str:
        return f"spectui bench --collect {self.host}"
