"""How a server spectui did not start was started, and where its output goes.

``started_by``: ``tmux`` (``TMUX``/``TMUX_PANE`` in its environment, or a tmux pane's process
among its ancestors), ``systemd`` (a ``.service`` unit in ``/proc/PID/cgroup``), ``nohup``
(SIGHUP ignored and stdout not a terminal), ``terminal`` (stdout a ``/dev/pts/N``), ``detached``
(stdout a pipe, a socket or /dev/null), else ``unknown``.

``log``: where spectui can read its output: a regular file its fd 2 or 1 points to, the tmux pane
(mirrored by ``servers.external_logs``), the unit's journal; a terminal or a pipe cannot be read.

The cgroup file has one line per hierarchy, ``hierarchy-ID:controller-list:cgroup-path``
(cgroups(7), https://man7.org/linux/man-pages/man7/cgroups.7.html); on the unified hierarchy
(cgroup v2) the line is ``0::PATH`` (https://docs.kernel.org/admin-guide/cgroup-v2.html,
"Processes"). systemd puts a service's processes in ``.../NAME.service`` below ``system.slice``,
or, for a user's units, below ``user@UID.service`` (systemd.slice(5), systemd.special(7):
https://www.freedesktop.org/software/systemd/man/latest/systemd.special.html).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess

from . import proc_table as pt
TMUX_TIMEOUT_S = 3.0


def systemd_unit(cgroup):
    """``(unit, user_unit)`` named by the text of ``/proc/PID/cgroup``, or ``(None, False)``.

    The systemd hierarchy is the v2 line (``0::``) or the v1 ``name=systemd`` line; the unit is the
    innermost ``.service`` in its path, except a user manager itself (``user@UID.service``)."""
    if not cgroup:
        return None, False
    path = None
    for line in cgroup.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            path = parts[2]
            break
        if "name=systemd" in parts[1].split(","):
            path = parts[2]
    if not path:
        return None, False
    comps = [c for c in path.split("/") if c]
    user = any(c.startswith("user@") and c.endswith(".service") for c in comps)
    for c in reversed(comps):
        if c.endswith(".service") and not c.startswith("user@"):
            return c, user
    return None, False


def journal_argv(unit, user_unit):
    """The command that follows ``unit``'s journal as plain lines (journalctl(1): ``-f``, ``-o cat``,
    ``-u`` / ``--user-unit``)."""
    return ["journalctl", "-f", "-n", "200", "-o", "cat", "--user-unit" if user_unit else "-u", unit]


def is_tty(target):
    return bool(target) and (target.startswith("/dev/pts/") or target.startswith("/dev/tty"))


def is_regular(target):
    if not target or not target.startswith("/") or target.endswith(" (deleted)"):
        return False
    try:
        import stat

        return stat.S_ISREG(os.stat(target).st_mode)
    except OSError:
        return False


def _tmux_cmd(socket_path, *args):
    exe = shutil.which("tmux")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "-S", socket_path] + list(args), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL, timeout=TMUX_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.decode("utf-8", "replace") if out.returncode == 0 else None


def _unix_socket_paths(pid):
    """Paths of the listening unix sockets ``pid`` holds (a tmux server's socket among them)."""
    inodes = set()
    for t in pt.fd_targets(pid).values():
        if t.startswith("socket:["):
            inodes.add(t[8:-1])
    out = []
    try:
        with open("/proc/net/unix") as fh:
            next(fh, None)
            for line in fh:
                f = line.split()
                if len(f) >= 8 and f[6] in inodes and f[7].startswith("/"):
                    out.append(f[7])
    except OSError:
        pass
    return out


def tmux_pane(table, pid, env):
    """{"socket", "pane", "session", "window"} of the tmux pane ``pid`` runs in, or None."""
    sock = pane = None
    if env and env.get("TMUX"):
        sock = env["TMUX"].split(",")[0]
        pane = env.get("TMUX_PANE")
    chain = pt.ancestors(table, pid)
    server = next((a for a in chain if table.get(a) is not None and table[a].comm.startswith("tmux")), None)
    if sock is None and server is not None:
        paths = _unix_socket_paths(server)
        sock = paths[0] if paths else None
    if sock is None:
        return None
    listing = _tmux_cmd(sock, "list-panes", "-a", "-F", "#{pane_pid} #{pane_id} #{window_index} #{session_name}")
    if listing is None:
        return None
    for line in listing.splitlines():
        f = line.split(" ", 3)
        if len(f) < 4:
            continue
        if (pane is not None and f[1] == pane) or (pane is None and f[0].isdigit() and int(f[0]) in chain + [pid]):
            return {"socket": sock, "pane": f[1], "window": f[2], "session": f[3]}
    return None


def _pipe_reader(target, skip):
    """``(pid, comm)`` of a process other than ``skip`` reading the pipe ``target``, or None."""
    holders = pt.holders_of(target, skip=skip)
    readers = [h for h in holders if h[1] == 0] or holders
    if not readers:
        return None
    p = pt.read_proc(readers[0][0])
    return readers[0][0], (p.comm if p else "?")


def describe(table, pid, tree):
    """``(started_by, log)`` of the server led by ``pid``; ``tree`` its processes (not searched as pipe
    readers). ``log`` is {"kind", "readable", "text", "path"?, "tmux"?, "unit"?, "user_unit"?}."""
    env = pt.environ(pid)
    out1, out2 = pt.fd_target(pid, 1), pt.fd_target(pid, 2)
    out = out2 if is_regular(out2) else out1
    pane = tmux_pane(table, pid, env)
    unit, user_unit = systemd_unit(pt.cgroup_text(pid))
    ign = pt.ignored_signals(pid)
    hup_ignored = ign is not None and bool(ign & (1 << (signal.SIGHUP - 1)))
    if pane is not None:
        started = {"kind": "tmux", "text": "tmux pane %s (session %s, window %s)" % (
            pane["pane"], pane["session"], pane["window"])}
    elif unit is not None:
        started = {"kind": "systemd", "text": "systemd %sunit %s" % ("user " if user_unit else "", unit)}
    elif hup_ignored and not is_tty(out1):
        started = {"kind": "nohup", "text": "nohup, output to %s" % (out or "an unknown place")}
    elif is_tty(out1):
        started = {"kind": "terminal", "text": "terminal %s" % out1}
    elif out1 is not None and (out1.startswith("pipe:") or out1.startswith("socket:") or out1 == "/dev/null"):
        started = {"kind": "detached", "text": "detached, output to %s" % _where(out1, tree)}
    else:
        started = {"kind": "unknown", "text": "unknown (its output goes to %s)" % (out1 or "a place spectui cannot see")}
    return started, log_source(out, out1, pane, unit, user_unit, tree)


def _where(target, tree):
    if target.startswith("pipe:"):
        reader = _pipe_reader(target, set(tree))
        if reader is not None:
            return "a pipe read by pid %d (%s)" % reader
        return "a pipe"
    if target.startswith("socket:"):
        return "a socket"
    return target


RESTART_HINT = "restart it with its output in a file or in tmux"


def log_source(out, out1, pane, unit, user_unit, tree):
    if is_regular(out):
        if os.access(out, os.R_OK):
            return {"kind": "file", "readable": True, "text": "following %s" % out, "path": out}
        return {"kind": "file", "readable": False, "path": None,
                "text": "its output goes to %s, which spectui may not read" % out}
    if pane is not None:
        return {"kind": "tmux", "readable": True, "tmux": pane,
                "text": "following tmux pane %s (capture-pane)" % pane["pane"]}
    if unit is not None:
        ok = shutil.which("journalctl") is not None
        return {"kind": "journal", "readable": ok, "unit": unit, "user_unit": user_unit,
                "text": ("following the journal of %s" % unit) if ok else
                        ("its output goes to the journal of %s, and journalctl is not installed" % unit)}
    if is_tty(out1):
        return {"kind": "terminal", "readable": False,
                "text": "its output goes to terminal %s, which spectui cannot read; %s" % (out1, RESTART_HINT)}
    if out1 is not None and out1.startswith(("pipe:", "socket:")):
        return {"kind": "pipe", "readable": False,
                "text": "its output goes to %s, which spectui cannot read; %s" % (_where(out1, tree), RESTART_HINT)}
    return {"kind": "none", "readable": False,
            "text": "its output goes to %s, which spectui cannot read; %s" % (out1 or "an unknown place", RESTART_HINT)}
