"""Reading the output of a server spectui did not start.

* a regular file its output goes to: followed directly (no mirror);
* a tmux pane: mirrored into ``<state>/external/<name>.log`` by polling
  ``tmux -S SOCKET capture-pane -p -J -t PANE`` (tmux(1): ``-p`` prints to stdout, ``-J`` joins
  wrapped lines, ``-S -N`` starts N lines up in the history). The pane itself is never changed
  (no ``pipe-pane``). Each capture is aligned with the lines already mirrored (the newest
  :data:`ALIGN_LINES` of them must match), so a pane that scrolled is neither duplicated nor
  skipped; the last line of the pane is held until the next line follows it or it stays the same
  for :data:`SETTLE_S` (a progress bar redraws its line in place);
* a systemd unit's journal: ``journalctl -f -o cat -u UNIT`` (``--user-unit`` for a user's unit)
  copied into the mirror by a thread.

A mirror never grows past :data:`MIRROR_MAX_BYTES`: the file then moves to ``.1`` (replacing the
older one) and a new one begins; a follower sees the new file as a rotation.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time

from .origin import journal_argv

MIRROR_MAX_BYTES = 16 * 1024 * 1024
ALIGN_LINES = 8
RECENT_CAPTURE = 400  # history lines asked for after the first capture
SETTLE_S = 1.0
CAPTURE_EVERY_S = 0.5
TMUX_TIMEOUT_S = 3.0


class MirrorFile(object):
    """Lines appended to ``path`` (0600), kept under ``max_bytes`` by moving it to ``.1``."""

    def __init__(self, path, max_bytes=MIRROR_MAX_BYTES):
        self.path = path
        self.max_bytes = max_bytes
        folder = os.path.dirname(path)
        if not os.path.isdir(folder):
            os.makedirs(folder, mode=0o700, exist_ok=True)
        self._open(truncate=True)

    def _open(self, truncate=False):
        flags = (os.O_WRONLY | os.O_CREAT | os.O_APPEND | (os.O_TRUNC if truncate else 0) | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0))  # spectui's own file: never written through a link
        self.fd = os.open(self.path, flags, 0o600)
        self.size = os.fstat(self.fd).st_size

    def write_lines(self, lines):
        if not lines:
            return
        data = "".join(line + "\n" for line in lines).encode("utf-8", "replace")
        if self.size + len(data) > self.max_bytes and self.size > 0:
            os.close(self.fd)
            os.replace(self.path, self.path + ".1")
            self._open(truncate=True)
        os.write(self.fd, data)
        self.size += len(data)

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def new_lines(seen, cur, align=ALIGN_LINES):
    """The lines of capture ``cur`` that come after the already mirrored ``seen`` (newest last).

    The end of ``seen`` (its last ``align`` lines; fewer when it holds fewer, or where ``cur`` begins
    inside them) is looked for in ``cur``, latest position first; what follows it is new. When it is not found with the last
    seen line, it is looked for without it (that line was redrawn in place since). When not
    found at all, the pane scrolled past everything seen (or was cleared): all of ``cur`` is new.
    Returns ``(lines, dropped_last)``: ``dropped_last`` when the last seen line was redrawn."""
    if not seen:
        return list(cur), False
    for drop in (0, 1):
        base = seen[:len(seen) - drop] if drop else seen
        if not base:
            return list(cur), bool(drop)
        for j in range(len(cur), 0, -1):
            m = min(align, len(base), j)  # shorter only where the capture begins inside the seen end
            if cur[j - m:j] == base[-m:]:
                return list(cur[j:]), bool(drop)
    return list(cur), False


class TmuxMirror(object):
    """Copies a tmux pane's lines into a :class:`MirrorFile`; call :meth:`poll` now and then."""

    def __init__(self, socket_path, pane, path, clock=time.monotonic):
        self.socket_path = socket_path
        self.pane = pane
        self.out = MirrorFile(path)
        self.path = path
        self.clock = clock
        self.seen = []  # the newest mirrored lines (bounded)
        self.pending = None  # the pane's last line, not yet mirrored
        self.pending_since = None
        self.first = True
        self.polled_at = None
        self.error = None

    def _capture(self, whole):
        exe = shutil.which("tmux")
        if exe is None:
            self.error = "tmux is not installed"
            return None
        argv = [exe, "-S", self.socket_path, "capture-pane", "-p", "-J", "-t", self.pane,
                "-S", "-" if whole else "-%d" % RECENT_CAPTURE]
        try:
            res = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                 timeout=TMUX_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.error = str(exc)
            return None
        if res.returncode != 0:
            self.error = res.stderr.decode("utf-8", "replace").strip() or "capture-pane failed"
            return None
        self.error = None
        lines = [line.rstrip() for line in res.stdout.decode("utf-8", "replace").split("\n")]
        while lines and not lines[-1]:
            lines.pop()
        return lines

    def poll(self, force=False):
        """Mirror what the pane shows now; returns the number of lines written."""
        now = self.clock()
        if not force and self.polled_at is not None and now - self.polled_at < CAPTURE_EVERY_S:
            return 0
        self.polled_at = now
        cur = self._capture(self.first)
        if cur is None:
            return 0
        fresh, _ = new_lines(self.seen, cur)
        if fresh == cur and self.seen and not self.first:  # not aligned within the recent lines: ask for all
            whole = self._capture(True)
            if whole is not None:
                cur = whole
                fresh, _ = new_lines(self.seen, cur)
        self.first = False
        out = []
        if fresh:
            last = fresh[-1]
            out = fresh[:-1]
            if last != self.pending:
                self.pending, self.pending_since = last, now
            elif now - self.pending_since >= SETTLE_S:
                out.append(last)
                self.pending = None
        elif self.pending is not None and now - self.pending_since >= SETTLE_S:
            out.append(self.pending)
            self.pending = None
        if out:
            self.out.write_lines(out)
            self.seen = (self.seen + out)[-(RECENT_CAPTURE + ALIGN_LINES):]
        return len(out)

    def close(self):
        self.out.close()


class JournalMirror(object):
    """Copies ``journalctl -f`` of a unit into a :class:`MirrorFile` from a thread."""

    def __init__(self, unit, user_unit, path):
        self.unit = unit
        self.path = path
        self.out = MirrorFile(path)
        self.error = None
        self.argv = journal_argv(unit, user_unit)
        try:
            self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                         stdin=subprocess.DEVNULL, close_fds=True)
        except OSError as exc:
            self.proc = None
            self.error = "journalctl could not start: %s" % exc
            return
        self._thread = threading.Thread(target=self._copy, name="journal-" + unit)
        self._thread.daemon = True
        self._thread.start()

    def _copy(self):
        for raw in iter(self.proc.stdout.readline, b""):
            self.out.write_lines([raw.decode("utf-8", "replace").rstrip("\n")])

    def poll(self, force=False):
        return 0

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def open_mirror(log, path):
    """The mirror for a log source (``servers.origin.log_source``) that needs one, or None."""
    if log.get("kind") == "tmux" and log.get("tmux"):
        return TmuxMirror(log["tmux"]["socket"], log["tmux"]["pane"], path)
    if log.get("kind") == "journal" and log.get("readable"):
        return JournalMirror(log["unit"], log.get("user_unit"), path)
    return None
