"""The servers found running that spectui did not start ("external"): found, watched, planned, stopped.

Each round (the manager's monitor, every :data:`DISCOVER_EVERY_S`, and the requests that act on an
external server) runs with the records lock held, so a server spectui is starting (recorded under that
lock) is never taken for an external one; servers recorded as spectui's own (started or adopted, whose
process group ``servers.process.server_group`` confirms) are never listed here. A round never waits on a
server: each found server's health is asked in the background (``servers.watch.HealthCheck``), and a
server that has gone takes everything kept of it along (its entry, its log mirror, its origin).

A simulated host is a world of its own: it lists only simulated servers whose state folder is its own,
never a real server of the machine it runs on; a real host lists no simulated server of another folder.

An external server is signalled process by process (its tree: the leader and its descendants),
only when the operator confirmed that list (pid and start time of each), and only when spectui
runs as root or as the server's user. The agent itself and its ancestors are never signalled.
"""

from __future__ import annotations

import os
import time

from . import proc_table as pt
from . import discover as sd
from .external_logs import open_mirror
from .origin import describe
from .process import OURS, server_group
from .watch import SETTLE_TAIL_BYTES, ServerWatch
from ..protocol import FINAL_STATES, ServerState

DISCOVER_EVERY_S = 3.0
TABLE_REUSE_S = 0.5
METRICS_OFF = ("metrics are off: it was started without --enable-metrics; restart it with that flag (a profile "
               "imported from it adds it)")


def boot_time():
    try:
        with open("/proc/stat") as fh:
            for line in fh:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def started_at(start_ticks):
    bt = boot_time()
    return None if bt is None or start_ticks is None else bt + start_ticks / float(os.sysconf("SC_CLK_TCK"))


def permission(uid, user):
    """``(can_signal, why_not)`` for a server of ``uid``: root may signal anyone, others their own."""
    me = os.geteuid()
    if me == 0 or me == uid:
        return True, None
    return False, "it belongs to user %s and spectui runs as %s" % (user, pt.user_name(me))


def tree(pid, table=None):
    """{pid: start_ticks} of the leader ``pid`` and every live process below it, now (or in ``table``)."""
    table = pt.snapshot() if table is None else table
    if pid not in table:
        return {}
    return dict((p, table[p].start_ticks) for p in [pid] + pt.descendants(table, pid))


def process_rows(members):
    """[{"pid", "start_ticks", "user", "command"}] of ``members`` ({pid: start_ticks}), leader first."""
    out = []
    for pid in sorted(members):
        p = pt.read_proc(pid)
        argv = pt.cmdline(pid) or []
        out.append({"pid": pid, "start_ticks": members[pid], "user": pt.user_name(p.uid) if p else None,
                    "command": " ".join(argv) if argv else (p.comm if p else "?")})
    return out


def argv_short(argv, limit=120):
    text = " ".join(argv or [])
    return text if len(text) <= limit else text[:limit - 3] + "..."


class Entry(object):
    def __init__(self, record, watch, mirror):
        self.record, self.watch, self.mirror = record, watch, mirror

    def close(self):
        self.watch.close()
        if self.mirror is not None:
            self.mirror.close()


class ExternalServers(object):
    def __init__(self, state_dir, gpu_processes, emit, simulated=False, on_answer=None):
        self.state_dir = state_dir
        self.gpu_processes = gpu_processes  # callable: {gpu index: [pids]} or None
        self.emit = emit
        self.simulated = simulated  # a simulated host: only the simulated servers of its own state folder
        self.on_answer = on_answer  # called when a found server's health check ends
        self.entries = {}
        self.origins = {}  # (pid, start_ticks) -> (started_by, log): fixed for a process's life, dropped after it
        self.discovered_at = None  # when the last round ended (None: none yet)
        self._table = (None, 0.0)  # a recent process table, shared by the watches' looks at their processes

    def mirror_path(self, name):
        return os.path.join(self.state_dir, "external", name + ".log")

    # --- finding ---------------------------------------------------------------------------
    def _leaders(self, table):
        """The launchers found in ``table`` that belong to this host: on a simulated host only simulated
        servers, and a simulated server only when its state folder is this agent's (one whose folder cannot
        be read, another user's, is not)."""
        own_state = os.path.realpath(os.path.expanduser(self.state_dir))
        out = {}
        for pid, (launch, argv, words) in sd.leaders(table).items():
            if launch == "spectui.sim.server":
                if sd.sim_state_of(pid, words) != own_state:
                    continue  # a simulated server of another simulated host (its GPUs live elsewhere)
            elif self.simulated:
                continue  # a real server: the simulated host is a world of its own
            out[pid] = (launch, argv, words)
        return out

    def discover(self, records, lock):
        """One round (the records lock held): ``records`` are the recorded servers. /proc, and the origin of
        each new server, are read outside ``lock`` (the manager's), which only the changes to the entries
        take; nothing here waits on a server (their health checks run in the background). Returns the names
        found."""
        table = pt.snapshot()
        recorded = set()
        for r in records:
            if r.get("state") in FINAL_STATES:
                continue
            verdict, members, _ = server_group(r)
            if verdict == OURS:
                recorded.update(members)
                recorded.add(r.get("pid"))
        found = self._leaders(table)
        gpus = sd.gpus_by_leader(table, set(found), self.gpu_processes() or {})
        kids = pt.children_of(table)
        self._table = (table, time.monotonic())
        with lock:
            known = dict(((e.record["pid"], e.record["start_ticks"]), name) for name, e in self.entries.items())
            taken = set(self.entries) | set(r["name"] for r in records)
        seen, refresh, new = set(), {}, []
        for pid, (launch, argv, words) in sorted(found.items()):
            if pid in recorded:
                continue
            p = table[pid]
            name = known.get((pid, p.start_ticks))
            if name is not None:
                refresh[name] = gpus.get(pid, [])
                seen.add(name)
                continue
            s = sd.settings(words)
            port = s["port"]  # its argv's (the sockets it listens on are not read: nothing here needs them)
            name = sd.ext_name(port, pid)
            if name in taken:
                name = sd.ext_name(None, pid)
            taken.add(name)
            entry = self._new(name, p, launch, argv, s, port, gpus.get(pid, []), table, kids)
            try:  # one look now: its first health check begins (a listing waits a moment for quick answers)
                entry.watch.poll()
            except Exception as exc:  # the monitor's next round tries again
                entry.record["monitor_error"] = str(exc)
            new.append((name, entry))
            seen.add(name)
        live = set((p.pid, p.start_ticks) for p in table.values())
        for key in [k for k in self.origins if k not in live]:
            del self.origins[key]
        with lock:
            for name, g in refresh.items():
                if name in self.entries:
                    self._refresh(self.entries[name].record, g)
            for name, entry in new:
                self.entries[name] = entry
                self.emit(entry.record)
            for name in list(self.entries):
                e = self.entries[name]
                if name not in seen and e.record.get("pid") in recorded:  # adopted meanwhile: spectui's own now
                    self.entries.pop(name).close()
            self.discovered_at = time.monotonic()
        return seen

    def _tree(self, pid):
        """:func:`tree` of ``pid`` from a process table at most :data:`TABLE_REUSE_S` old (one read of /proc
        serves every watch's look at its processes)."""
        table, at = self._table
        if table is None or time.monotonic() - at > TABLE_REUSE_S:
            table = pt.snapshot()
            self._table = (table, time.monotonic())
        return tree(pid, table)

    def _known(self, pid, ticks):
        for name, e in self.entries.items():
            if e.record["pid"] == pid and e.record["start_ticks"] == ticks:
                return name
        return None

    def _refresh(self, record, gpus):
        if gpus and gpus != record.get("gpus"):
            record["gpus"] = gpus

    def _new(self, name, p, launch, argv, s, port, gpus, table, kids):
        members = [p.pid] + pt.descendants(table, p.pid, kids)
        key = (p.pid, p.start_ticks)
        if key not in self.origins:
            self.origins[key] = describe(table, p.pid, members)
        started_by, log = self.origins[key]
        mirror = None
        log_path = log.get("path")
        if log["kind"] in ("tmux", "journal") and log["readable"]:
            try:
                mirror = open_mirror(log, self.mirror_path(name))
                log_path = mirror.path if mirror is not None else None
            except OSError:
                mirror, log_path = None, None
        user = pt.user_name(p.uid)
        can, why = permission(p.uid, user)
        record = {
            "name": name, "origin": "external", "state": ServerState.LOADING, "pid": p.pid, "pgid": p.pgid, "sid": p.sid,
            "start_ticks": p.start_ticks, "uid": p.uid, "user": user, "host": s["host"], "port": port,
            "gpus": gpus, "argv": argv, "launcher": launch, "model": s["model"], "tp_size": s["tp_size"],
            "speculative": s["speculative"], "profile_hash": None, "profile": None, "env_keys": [],
            "started_at": started_at(p.start_ticks), "ready_at": None, "ended_at": None, "progress": None,
            "reason": None, "log_path": log_path, "stop": None, "load_s": None,
            "members": sorted([m, table[m].start_ticks] for m in members if m in table),
            "started_by": started_by, "log_source": dict((k, log[k]) for k in ("kind", "readable", "text")),
            "log_follow": log, "metrics_note": None if s["metrics"] else METRICS_OFF,
            "can_signal": can, "why_not": why,
        }
        watch = ServerWatch(record, log_path, tail_bytes=SETTLE_TAIL_BYTES if mirror is None else None,
                            external=True, members=lambda pid=p.pid: self._tree(pid), background=True,
                            on_answer=self.on_answer)
        return Entry(record, watch, mirror)

    # --- watching ----------------------------------------------------------------------------
    def poll(self):
        """One step of every external server's mirror and watch; ended ones go (after their event)."""
        for name in list(self.entries):
            e = self.entries[name]
            try:
                if e.mirror is not None:
                    e.mirror.poll()
                changed = e.watch.poll()
            except Exception as exc:  # one server must not stop the watching of the others
                e.record["monitor_error"] = str(exc)
                continue
            if changed:
                self.emit(e.record)
            if e.record["state"] == ServerState.STOPPED:
                self.entries.pop(name, None)
                e.close()

    def get(self, name):
        e = self.entries.get(name)
        return e.record if e is not None else None

    def forget(self, name):
        e = self.entries.pop(name, None)
        if e is not None:
            e.close()
        return e

    def holding(self, port=None, gpus=()):
        """The external servers that hold ``port`` or any of ``gpus``, with what they hold."""
        out = []
        for e in self.entries.values():
            r = e.record
            what = []
            if port is not None and int(r.get("port") or 0) == int(port):
                what.append("port %d" % int(port))
            shared = sorted(set(gpus or []) & set(r.get("gpus") or []))
            if shared:
                what.append("GPU%s %s" % ("s" if len(shared) > 1 else "", gpu_text(shared)))
            if what:
                out.append((r, " and ".join(what)))
        return out


def gpu_text(indices):
    """``0-7`` for a run, else ``0,2``."""
    indices = sorted(indices)
    if len(indices) > 2 and indices == list(range(indices[0], indices[-1] + 1)):
        return "%d-%d" % (indices[0], indices[-1])
    return ",".join(map(str, indices))


def holder_sentence(r):
    return "%s (pid %d, user %s: %s)" % (r["name"], r["pid"], r.get("user"), argv_short(r.get("argv")))
