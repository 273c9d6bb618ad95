"""Records of the servers spectui started on this host, under ``<state>/servers/``.

``<name>.json`` holds what a later agent needs to re-adopt the server (pid, pgid, argv,
port, GPUs, profile hash, start time, last known state); ``<name>.log`` is its output.
A lock file serialises starts and stops between agents (two consoles on one host).

Records hold a server's argv, which may carry a secret (``--api-key``), and its log may print
it, so the state folder and ``servers/`` are made private to their owner (0700) and records and
logs are written 0600.

The agent uses the folder only when nobody else could have put a record there, as OpenSSH treats
``~/.ssh`` (:func:`trust_problem`): the state folder and ``servers/`` belong to its user and nobody else
may write them, and every folder above belongs to its user or root and is writable by no one else, or is
sticky like ``/tmp``. A record is read only when it is a regular file of the agent's user that no one
else may write; others are ignored, each with one sentence (:attr:`RecordStore.ignored`). A record names
processes spectui will signal: one planted by another user would aim its signals.

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
import pwd
import re
import stat
import tempfile
import threading
import time

from ..protocol import FINAL_STATES, AgentError

PRUNE_AFTER_S = 7 * 24 * 3600.0
KEEP_ENDED = 32
# The profile name rule (letters, digits, '.', '_' and '-', starting with a letter or digit):
# a name can never climb out of the records folder.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}\Z")


RECORD_MAX_BYTES = 4 * 1024 * 1024  # a record is a few KiB: past this it is no record of spectui's
UNSAFE_STATE = "unsafe_state"
UNTRUSTED_RECORD = "untrusted_record"


class UnsafeState(AgentError):
    """The state folder could hold records another user planted; the message is one sentence."""

    def __init__(self, message):
        AgentError.__init__(self, UNSAFE_STATE, message)


def _user(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, TypeError):
        return "uid %d" % uid


def _mode_problem(path, st, me, own):
    """Why folder ``path`` (``st`` its lstat) could be changed by someone other than its user or root, or None.
    ``own``: the state folder or ``servers/`` itself; a folder above it may also be sticky like /tmp."""
    if stat.S_ISLNK(st.st_mode):
        return "%s is a symbolic link" % path
    if not stat.S_ISDIR(st.st_mode):
        return "%s is not a folder" % path
    if st.st_uid not in (me, 0):
        return "%s belongs to user %s" % (path, _user(st.st_uid))
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022 and (own or not mode & stat.S_ISVTX):
        return "%s is writable by %s" % (path, "everyone" if mode & 0o002 else "its group")
    return None


def trust_problem(state_dir, me=None):
    """One sentence saying why the state folder ``state_dir`` (and its ``servers/``) may hold records another user
    planted, naming the path and the fix; None when it is safe (see the module docstring)."""
    me = os.geteuid() if me is None else me
    real = os.path.realpath(state_dir)
    checks = [(os.path.join(real, "servers"), True), (real, True)]
    up = os.path.dirname(real)
    while True:
        checks.append((up, False))
        if up == os.path.dirname(up):
            break
        up = os.path.dirname(up)
    for path, own in checks:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue  # made later, 0700, by this user
        except OSError as exc:
            return ("spectui will not use the state folder %s: %s cannot be examined (%s), so another user could "
                    "have put records there; use a state folder of %s's own (--state-dir)" % (
                        state_dir, path, exc.strerror or exc, _user(me)))
        why = _mode_problem(path, st, me, own)
        if why is None:
            continue
        if st.st_uid in (me, 0) and not stat.S_ISLNK(st.st_mode):
            fix = "chmod go-w %s after checking what it holds, or use another state folder (--state-dir)" % path
        else:
            fix = "use a state folder only %s can write (--state-dir)" % _user(me)
        return ("spectui will not use the state folder %s, so it read no record there and signalled nothing: %s, so "
                "another user could put records there that aim spectui's signals; %s" % (state_dir, why, fix))
    return None


def record_problem(path, st, me=None):
    """One sentence saying why the record at ``path`` (``st`` the fstat of the file opened) is ignored, or None."""
    me = os.geteuid() if me is None else me
    if not stat.S_ISREG(st.st_mode):
        return "spectui ignored %s: it is not a regular file" % path
    if st.st_uid != me:
        return ("spectui ignored the record %s: it belongs to user %s, not %s, so it may aim spectui's signals at "
                "processes that are not its servers; remove it if you did not put it there" % (
                    path, _user(st.st_uid), _user(me)))
    if stat.S_IMODE(st.st_mode) & 0o022:
        return ("spectui ignored the record %s: it is writable by others, so it may aim spectui's signals at "
                "processes that are not its servers; chmod 600 it if its content is yours" % path)
    if st.st_size > RECORD_MAX_BYTES:
        return "spectui ignored the record %s: it is larger than any record spectui writes" % path
    return None


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
        self.ignored = {}  # name -> the sentence saying why its record was ignored

    def check(self):
        """Raise :class:`UnsafeState` when another user could put records in the folder (see the module
        docstring); checked at every use, since it costs a few ``lstat``."""
        problem = trust_problem(self.state_dir)
        if problem is not None:
            raise UnsafeState(problem)

    def ensure(self):
        self.check()
        if not self._private or not os.path.isdir(self.dir):
            make_private(self.state_dir)
            make_private(self.dir)
            self._private = True
            self.check()

    def path(self, name):
        return os.path.join(self.dir, check_name(name) + ".json")

    def log_path(self, name):
        return os.path.join(self.dir, check_name(name) + ".log")

    def read(self, name):
        """The record ``name``, or None: absent, unreadable, or not to be trusted (then :attr:`ignored` says why)."""
        path = self.path(name)
        self.check()
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            if os.path.islink(path):
                self.ignored[name] = "spectui ignored the record %s: it is a symbolic link" % path
            else:
                self.ignored.pop(name, None)
            return None
        try:
            problem = record_problem(path, os.fstat(fd))
            if problem is not None:
                self.ignored[name] = problem
                return None
            self.ignored.pop(name, None)
            with os.fdopen(fd, "rb") as fh:
                fd = None
                return json.loads(fh.read(RECORD_MAX_BYTES + 1).decode("utf-8"))
        except (OSError, ValueError):
            return None
        finally:
            if fd is not None:
                os.close(fd)

    def names(self):
        """Names of the records in the folder (files that are not records are ignored)."""
        self.ensure()
        names = [f[:-5] for f in sorted(os.listdir(self.dir)) if f.endswith(".json") and NAME_RE.match(f[:-5])]
        for gone in [n for n in self.ignored if n not in names]:
            del self.ignored[gone]
        return names

    def refuse_ignored(self, name):
        """Raise the sentence saying why the record ``name`` was ignored, if it was."""
        if name in self.ignored:
            raise AgentError(UNTRUSTED_RECORD, self.ignored[name])

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
