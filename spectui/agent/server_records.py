"""Records of the servers spectui started on this host, under ``<state>/servers/``.

``<name>.json`` holds what a later agent needs to re-adopt the server (pid, pgid, argv,
port, GPUs, profile hash, start time, last known state); ``<name>.log`` is its output.
A lock file serialises starts and stops between agents (two consoles on one host).
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import threading

FINAL_STATES = ("stopped", "failed", "crashed")
LIVE_STATES = ("starting", "loading", "ready", "unresponsive", "stopping")


class RecordStore(object):
    def __init__(self, state_dir):
        self.dir = os.path.join(state_dir, "servers")
        self._lock = FileLock(os.path.join(self.dir, ".lock"), self.ensure)

    def ensure(self):
        if not os.path.isdir(self.dir):
            os.makedirs(self.dir, exist_ok=True)

    def path(self, name):
        return os.path.join(self.dir, name + ".json")

    def log_path(self, name):
        return os.path.join(self.dir, name + ".log")

    def read(self, name):
        try:
            with open(self.path(name)) as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return None

    def read_all(self):
        self.ensure()
        out = []
        for f in sorted(os.listdir(self.dir)):
            if f.endswith(".json") and not f.startswith("."):
                r = self.read(f[:-5])
                if r is not None:
                    out.append(r)
        return out

    def write(self, record):
        self.ensure()
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-")
        with os.fdopen(fd, "w") as fh:
            json.dump(record, fh, indent=1, sort_keys=True)
        os.replace(tmp, self.path(record["name"]))

    def remove(self, name):
        try:
            os.unlink(self.path(name))
        except FileNotFoundError:
            pass

    def rotate_log(self, name):
        p = self.log_path(name)
        if os.path.exists(p):
            os.replace(p, p + ".1")
        return p

    def lock(self):
        return self._lock


class FileLock(object):
    """Exclusive between threads of this agent (re-entrant) and between agents (flock)."""

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

    def __exit__(self, *exc):
        try:
            self.depth -= 1
            if self.depth == 0:
                fcntl.flock(self.fh.fileno(), fcntl.LOCK_UN)
                self.fh.close()
                self.fh = None
        finally:
            self.thread_lock.release()
