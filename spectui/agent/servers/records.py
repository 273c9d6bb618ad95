"""Records of the servers spectui started on this host, under ``<state>/servers/``.

``<name>.json`` holds what a later agent needs to re-adopt the server (pid, pgid, argv,
port, GPUs, profile hash, start time, last known state); ``<name>.log`` is its output.
A lock file serialises starts and stops between agents (two consoles on one host).

Records hold a server's argv, which may carry a secret (``--api-key``), and its log may print
it, so the state folder and ``servers/`` are made private to their owner (0700) and records and
logs are written 0600.

Records of ended servers are pruned when an agent reads the folder: a record that ended more
than :data:`PRUNE_AFTER_S` ago (a week) goes, and of the ended ones only the newest
:data:`KEEP_ENDED` stay; its log goes with it. A record whose process group still has live
members is never pruned (see ``servers.process.server_group``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import stat
import tempfile
import threading
import time

from ..protocol import FINAL_STATES

PRUNE_AFTER_S = 7 * 24 * 3600.0
KEEP_ENDED = 32
# The profile name rule (letters, digits, '.', '_' and '-', starting with a letter or digit):
# a name can never climb out of the records folder.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}\Z")


class BadName(ValueError):
    """A server name that is not a profile name; the message is one sentence."""


def check_name(name):
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise BadName("%r is not a server name: names hold only letters, digits, '.', '_' and '-', starting "
                      "with a letter or digit" % (name,))
    return name


def make_private(path):
    """Create folder ``path`` (and its parents) if missing, and make it 0700 when this user owns it."""
    if not os.path.isdir(path):
        os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.stat(path)
    if st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)


class RecordStore(object):
    def __init__(self, state_dir):
        self.state_dir = state_dir
        self.dir = os.path.join(state_dir, "servers")
        self._lock = FileLock(os.path.join(self.dir, ".lock"), self.ensure)
        self._private = False

    def ensure(self):
        if not self._private or not os.path.isdir(self.dir):
            make_private(self.state_dir)
            make_private(self.dir)
            self._private = True

    def path(self, name):
        return os.path.join(self.dir, check_name(name) + ".json")

    def log_path(self, name):
        return os.path.join(self.dir, check_name(name) + ".log")

    def read(self, name):
        try:
            with open(self.path(name)) as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return None

    def names(self):
        """Names of the records in the folder (files that are not records are ignored)."""
        self.ensure()
        return [f[:-5] for f in sorted(os.listdir(self.dir))
                if f.endswith(".json") and NAME_RE.match(f[:-5])]

    def read_all(self):
        out = []
        for name in self.names():
            r = self.read(name)
            if r is not None and r.get("name") == name:
                out.append(r)
        return out

    def write(self, record):
        """Replace the record atomically (mode 0600). On an error (a full disk) no temporary file is
        left behind and the old record stays; the OSError is raised."""
        self.ensure()
        path = self.path(record["name"])
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-")  # mkstemp creates it 0600
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(record, fh, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def remove(self, name, with_log=False):
        paths = [self.path(name)] + ([self.log_path(name), self.log_path(name) + ".1"] if with_log else [])
        for p in paths:
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass

    def rotate_log(self, name):
        self.ensure()
        p = self.log_path(name)
        if os.path.exists(p):
            os.replace(p, p + ".1")
        return p

    def prune(self, records, still_running, now=None):
        """Remove the records of ended servers that are too old or too many (see the module docstring);
        ``still_running(record)`` says whether its process group still has live members. Returns the
        names removed."""
        now = time.time() if now is None else now
        ended = [r for r in records if r.get("state") in FINAL_STATES]
        ended.sort(key=lambda r: r.get("ended_at") or r.get("started_at") or 0, reverse=True)
        gone = []
        for i, r in enumerate(ended):
            old = now - (r.get("ended_at") or r.get("started_at") or 0) > PRUNE_AFTER_S
            if (old or i >= KEEP_ENDED) and not still_running(r):
                self.remove(r["name"], with_log=True)
                gone.append(r["name"])
        return gone

    def lock(self):
        return self._lock

    def attempt(self):
        return self._lock.attempt()


class FileLock(object):
    """Exclusive between threads of this agent (re-entrant) and between agents (flock).

    ``with lock:`` waits for it; ``with lock.attempt() as held:`` takes it only if it is free now
    (``held`` says whether it did), for the monitor, which must not stall while a stop holds it.
    """

    def __init__(self, path, ensure):
        self.path = path
        self.ensure = ensure
        self.thread_lock = threading.RLock()
        self.depth = 0
        self.fh = None

    def __enter__(self):
        self.thread_lock.acquire()
        if self.depth == 0:
            self.ensure()
            self.fh = open(self.path, "a")
            fcntl.flock(self.fh.fileno(), fcntl.LOCK_EX)
        self.depth += 1
        return self

    def _leave(self):
        """One level out; the last one unlocks the file."""
        self.depth -= 1
        if self.depth == 0:
            fcntl.flock(self.fh.fileno(), fcntl.LOCK_UN)
            self.fh.close()
            self.fh = None

    def __exit__(self, *exc):
        try:
            self._leave()
        finally:
            self.thread_lock.release()

    @contextlib.contextmanager
    def attempt(self):
        if not self.thread_lock.acquire(False):
            yield False
            return
        try:
            if self.depth == 0:
                self.ensure()
                fh = open(self.path, "a")
                try:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    fh.close()
                    yield False
                    return
                self.fh = fh
            self.depth += 1
            try:
                yield True
            finally:
                self._leave()
        finally:
            self.thread_lock.release()
