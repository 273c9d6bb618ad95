"""Recording the session (``--record FILE``, ``ctrl+r``): everything the console receives, to one file that
``spectui replay FILE`` plays (:mod:`spectui.core.recording`).

The writer hangs on the link (``link.recorder``), so every agent event the link receives is written as it
arrives; the console adds its own (a switch it began, log reads, alert changes). A recording started while
connected first writes the session as it is (host facts, servers), which is where a replay starts. The header
shows ``● REC`` with the time recorded and the file's size; a write error (a full disk) ends the recording in
one sentence and the console goes on. Quitting closes the file and the quit note says how to play it.
"""

from __future__ import annotations

import datetime
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

import spectui
from spectui.core.paths import recordings_dir
from spectui.ui.controllers.base import Controller

if TYPE_CHECKING:  # the writer loads with the first recording
    from spectui.core.recording import RecordingWriter


def default_path(label: str, now: float | None = None) -> Path:
    """Where ``ctrl+r`` records: the recordings folder, named by host and start time."""
    stamp = datetime.datetime.fromtimestamp(time.time() if now is None else now).strftime("%Y%m%d-%H%M%S")
    host = re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_") or "host"
    return recordings_dir() / f"{host}-{stamp}.spectui.gz"


class RecordingController(Controller):
    def __init__(self, app, path: str | None = None) -> None:
        super().__init__(app)
        self.wanted_path = Path(path).expanduser() if path else None  # --record FILE: starts with the console
        self.writer: RecordingWriter | None = None
        self.done: list[tuple[Path, float]] = []  # recordings made, and how long each ran (the quit note)
        self._started_at = 0.0

    @property
    def recording(self) -> bool:
        return self.writer is not None

    def header(self) -> dict:
        app = self.app
        link = self.link
        return {"spectui": spectui.__version__, "target": app.target.label, "kind": app.target.kind,
                "host": dict(link.facts) if link is not None else {},
                "profiles": [p.redacted() for p in app.profiles]}

    # --- starting and stopping ---------------------------------------------------------------------------------
    def start_wanted(self) -> None:
        """--record FILE: record from the first moment (before the connection is up)."""
        if self.wanted_path is not None and self.writer is None:
            self.start(self.wanted_path)

    def start(self, path: Path | None = None) -> bool:
        from spectui.core.recording import RecordingError, RecordingWriter

        path = path or default_path(self.console.target.label)
        try:
            self.writer = RecordingWriter(path, self.header())
        except RecordingError as exc:
            self.notify(f"{exc}.", severity="error", timeout=15)
            return False
        self._started_at = time.monotonic()
        self.move_to(self.console)
        self.refresh()
        return True

    def move_to(self, console) -> None:
        """Record ``console``'s host (the shown one) from now on: its link's events and the console's own."""
        if self.writer is None:
            return
        self.console.record_to(None)
        console.record_to(self.writer)
        link = console.link
        if link is not None and link.connected:  # where a replay starts: the session as it is now
            self.writer.write("session", {"facts": link.facts, "servers": list(link.servers.values())})

    def stop(self, *, redraw: bool = True) -> Path | None:
        writer = self._end()
        if writer is None:
            return None
        writer.close()
        if redraw:
            self.refresh()
        return writer.path

    def _end(self):
        """Detach the writer from the link and count the recording made; the writer, or None."""
        writer, self.writer = self.writer, None
        if writer is not None:
            self.console.record_to(None)
            self.done.append((writer.path, time.monotonic() - self._started_at))
        return writer

    def toggle(self) -> None:
        """ctrl+r: start recording to the recordings folder, or stop and say where it is."""
        if self.console.read_only:
            self.notify("This is a replay: it is a recording already.", severity="warning")
            return
        if self.writer is None:
            if self.start():
                self.notify(f"Recording to {self.writer.path}; ctrl+r stops.")
            return
        path = self.stop()
        self.notify(f"Recorded to {path}: `spectui replay {path}` plays it.", timeout=15)

    # --- while it records ---------------------------------------------------------------------------------------
    def sync(self) -> None:
        """Each refresh: flush a quiet recording once a second, and end one whose writes failed, in one sentence."""
        writer = self.writer
        if writer is None:
            return
        if writer.error:
            self._end()
            self.notify(f"{writer.error[0].upper()}{writer.error[1:]}.", severity="error", timeout=30)
            self.refresh()
            return
        writer.flush_if_due()

    def header_text(self) -> str | None:
        """``REC 1:23 · 412 kB`` while recording; None otherwise."""
        writer = self.writer
        if writer is None:
            return None
        s = int(time.monotonic() - self._started_at)
        size = writer.bytes_written
        shown = f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{max(1, round(size / 1e3))} kB"
        return f"REC {s // 60}:{s % 60:02d} · {shown}"

    def quit_note(self) -> str | None:
        self.stop(redraw=False)
        if not self.done:
            return None
        path, _ = self.done[-1]
        more = f" ({len(self.done)} recordings this session)" if len(self.done) > 1 else ""
        return f"spectui: recorded to {path}{more}; `spectui replay {path}` plays it."
