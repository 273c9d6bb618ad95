"""spectui's own log (``D``): the latest records of the console and of the host's agent, filtered by
level, with the log file's path to attach to a report (:mod:`spectui.core.logsetup`)."""

from __future__ import annotations

import logging
import time

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Log, Static

from spectui.core import logsetup
from spectui.core.textsafe import one_line, visible_lines
from spectui.ui import keys
from spectui.ui.clipboard import copy_text

LEVELS = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR)
REFRESH_S = 0.5


def record_lines(record: logsetup.RecentRecord) -> list[str]:
    """One record as the screen shows it: ``12:03:04.512 WARNING spectui.core.rpc: ...``, a traceback below."""
    stamp = time.strftime("%H:%M:%S", time.localtime(record.created)) + f".{int(record.created * 1000) % 1000:03d}"
    first, *rest = visible_lines(record.message) or [""]
    return [f"{stamp} {record.level_name:<7} {one_line(record.name)}: {first}", *("    " + line for line in rest)]


class DebugLogScreen(Screen):
    BINDINGS = keys.DEBUG_LOG
    DEFAULT_CSS = """
    #debug-log-title { height: auto; padding: 0 1; }
    #debug-log-lines { height: 1fr; }
    """

    def __init__(self) -> None:
        super().__init__(id="debug-log")
        config = logsetup.active()
        recording = config.level if config is not None else logging.getLogger(logsetup.LOGGER).getEffectiveLevel()
        self.min_level = max(logging.DEBUG, recording)  # nothing below what is recorded to show anyway
        self._shown_seq = -1
        self._shown_level = None

    def compose(self) -> ComposeResult:
        yield Static("", id="debug-log-title", classes="dialog-title", markup=False)
        yield Log(id="debug-log-lines", max_lines=logsetup.RECENT_MAX * 4)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Log).focus()
        self.sync()
        self.set_interval(REFRESH_S, self.sync)

    @property
    def title_text(self) -> str:
        config = logsetup.active()
        if config is None:
            where = "logging is not set up in this process"
        elif config.path is not None:
            where = f"log file: {config.path} (attach it to a report)"
        else:
            where = config.problem or "no log file"
        recorded = logging.getLevelName(config.level if config else logging.WARNING)
        more = "" if config is not None and config.level <= logging.DEBUG else "; spectui --debug records more"
        return (f"spectui's log: {logging.getLevelName(self.min_level)} and above shown, {recorded} and above "
                f"recorded{more}\n{where}")

    def lines(self) -> list[str]:
        """What the screen shows: each record at the chosen level or above, oldest first."""
        return [line for r in logsetup.recent().records(self.min_level) for line in record_lines(r)]

    def sync(self) -> None:
        """Show what was logged since the last look (the screen looks twice a second)."""
        if not self.is_mounted:
            return
        recent = logsetup.recent()
        upto = recent.last_seq  # records logged (by any thread) while this runs wait for the next look
        if upto == self._shown_seq and self.min_level == self._shown_level:
            return
        self.query_one("#debug-log-title", Static).update(self.title_text)
        log = self.query_one(Log)
        since = self._shown_seq if self.min_level == self._shown_level else 0
        if not since:
            log.clear()
        records = [r for r in recent.records(self.min_level) if since < r.seq <= upto]
        log.write_lines([line for r in records for line in record_lines(r)])
        self._shown_seq, self._shown_level = upto, self.min_level

    def action_cycle_level(self) -> None:
        later = [lv for lv in LEVELS if lv > self.min_level]
        self.min_level = later[0] if later else LEVELS[0]
        self.sync()

    def action_copy_path(self) -> None:
        config = logsetup.active()
        if config is None or config.path is None:
            self.notify("There is no log file to copy the path of: " + (config.problem if config and config.problem
                        else "logging is not set up."), severity="warning")
            return
        copy_text(self.app, str(config.path), "the log file's path")

    def action_close(self) -> None:
        self.dismiss()
