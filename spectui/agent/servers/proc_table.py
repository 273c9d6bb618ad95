"""A snapshot of the host's processes from /proc, and the per-process facts discovery reads.

``snapshot()`` reads only ``/proc/PID/stat`` (and the owner of ``/proc/PID``) of every process:
cheap enough to run every few seconds. The rest (command line, environment, open files, signal
masks, cgroup, listening sockets) is read for a few candidate processes only. Every reader
answers None (or an empty value) for a process that is gone or that this user may not read.

Field numbers follow proc(5) (https://man7.org/linux/man-pages/man5/proc.5.html): in
``/proc/PID/stat`` field 3 is the state, 4 ppid, 5 pgrp, 6 session, 7 tty_nr, 22 starttime.
"""

from __future__ import annotations

import os
import pwd

TCP_LISTEN = "0A"  # st in /proc/net/tcp: TCP_LISTEN (include/net/tcp_states.h)


class Proc(object):
    __slots__ = ("pid", "comm", "state", "ppid", "pgid", "sid", "tty_nr", "start_ticks", "uid")

    def __init__(self, pid, comm, state, ppid, pgid, sid, tty_nr, start_ticks, uid):
        self.pid, self.comm, self.state, self.ppid = pid, comm, state, ppid
        self.pgid, self.sid, self.tty_nr, self.start_ticks, self.uid = pgid, sid, tty_nr, start_ticks, uid

    @property
    def alive(self):
        return self.state not in ("Z", "X")


def read_proc(pid):
    """The :class:`Proc` of ``pid``, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            text = fh.read()
        uid = os.stat("/proc/%d" % pid).st_uid
    except OSError:
        return None
    try:
        head, rest = text.rsplit(")", 1)
        comm = head.split("(", 1)[1]
        f = rest.split()
        return Proc(pid, comm, f[0], int(f[1]), int(f[2]), int(f[3]), int(f[4]), int(f[19]), uid)
    except (ValueError, IndexError):
        return None


def snapshot():
    """{pid: Proc} of every live process now."""
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            p = read_proc(int(name))
            if p is not None and p.alive:
                out[p.pid] = p
    return out


def children_of(table):
    """{ppid: [pid, ...]} of a snapshot."""
    kids = {}
    for p in table.values():
        kids.setdefault(p.ppid, []).append(p.pid)
    return kids


def descendants(table, pid, kids=None):
    """Every live process below ``pid`` in the parent tree (not ``pid`` itself), sorted."""
    kids = children_of(table) if kids is None else kids
    out, todo = [], list(kids.get(pid, []))
    while todo:
        p = todo.pop()
        if p in table and p not in out:
            out.append(p)
            todo.extend(kids.get(p, []))
    return sorted(out)


def ancestors(table, pid):
    """The parent chain of ``pid`` (nearest first), as far as the snapshot knows it."""
    out = []
    p = table.get(pid)
    while p is not None and p.ppid > 0 and p.ppid not in out:
        out.append(p.ppid)
        p = table.get(p.ppid)
    return out


def own_ancestry():
    """This process and its ancestors: pids spectui never signals."""
    pid = os.getpid()
    chain = {pid}
    while pid > 1:
        p = read_proc(pid)
        if p is None:
            break
        pid = p.ppid
        chain.add(pid)
    return chain


def user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, TypeError):
        return str(uid)


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    return [a.decode("utf-8", "surrogateescape") for a in raw.split(b"\0")[:-1]]


def environ(pid):
    """The environment ``pid`` was started with, or None when it cannot be read (another user's)."""
    try:
        with open("/proc/%d/environ" % pid, "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    out = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            out[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
    return out


def fd_target(pid, fd):
    """Where fd ``fd`` of ``pid`` points (``/path``, ``pipe:[N]``, ``socket:[N]``, ``/dev/pts/3``), or None."""
    try:
        return os.readlink("/proc/%d/fd/%d" % (pid, fd))
    except OSError:
        return None


def fd_targets(pid):
    """{fd: target} of every open fd of ``pid`` ({} when unreadable)."""
    out = {}
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return out
    for n in names:
        if n.isdigit():
            t = fd_target(pid, int(n))
            if t is not None:
                out[int(n)] = t
    return out


def ignored_signals(pid):
    """The SigIgn mask of ``pid`` (``/proc/PID/status``), or None."""
    try:
        with open("/proc/%d/status" % pid) as fh:
            for line in fh:
                if line.startswith("SigIgn:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError, IndexError):
        return None
    return None


def cgroup_text(pid):
    try:
        with open("/proc/%d/cgroup" % pid) as fh:
            return fh.read()
    except OSError:
        return None


def _inode(target):
    if target and target.startswith("socket:["):
        return target[8:-1]
    return None


def _hex_addr(text):
    """The address of a /proc/net/tcp{,6} ``local_address`` field (little-endian words), as text."""
    import socket
    import struct

    addr, port = text.split(":")
    raw = bytes.fromhex(addr)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, struct.pack("<I", struct.unpack(">I", raw)[0])), int(port, 16)
    words = [struct.pack("<I", struct.unpack(">I", raw[i:i + 4])[0]) for i in range(0, 16, 4)]
    return socket.inet_ntop(socket.AF_INET6, b"".join(words)), int(port, 16)


def listening(pid):
    """[(address, port)] of the TCP sockets ``pid`` listens on, or None when its fds cannot be read."""
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return None
    inodes = set()
    for n in names:
        i = _inode(fd_target(pid, int(n))) if n.isdigit() else None
        if i:
            inodes.add(i)
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as fh:
                next(fh, None)
                for line in fh:
                    f = line.split()
                    if len(f) > 9 and f[3] == TCP_LISTEN and f[9] in inodes:
                        out.append(_hex_addr(f[1]))
        except (OSError, ValueError):
            continue
    return sorted(set(out))


def holders_of(target, skip=()):
    """[(pid, fd)] of the processes (other than ``skip``) that have ``target`` (``pipe:[N]``) open."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in skip:
            continue
        pid = int(name)
        for fd, t in fd_targets(pid).items():
            if t == target:
                out.append((pid, fd))
    return out
