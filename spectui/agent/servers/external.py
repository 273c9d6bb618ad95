"""The servers found running that spectui did not start ("external"): found, watched, planned, stopped.

Each round (the manager's monitor, every :data:`DISCOVER_EVERY_S`, and ``servers.list``) runs with
the records lock held, so a server spectui is starting (recorded under that lock) is never taken
for an external one; servers recorded as spectui's own (started or adopted, whose process group
``servers.process.server_group`` confirms) are never listed here.

An external server is signalled process by process (its tree: the leader and its descendants),
only when the operator confirmed that list (pid and start time of each), and only when spectui
runs as root or as the server's user. The agent itself and its ancestors are never signalled.
"""

from __future__ import annotations

import os

from . import proc_table as pt
from . import discover as sd
from .external_logs import open_mirror
from .origin import describe
from .process import OURS, server_group
from .watch import SETTLE_TAIL_BYTES, ServerWatch
from ..protocol import FINAL_STATES, ServerState

DISCOVER_EVERY_S = 3.0
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


def tree(pid):
    """{pid: start_ticks} of the leader ``pid`` and every live process below it, now."""
    table = pt.snapshot()
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
    def __init__(self, state_dir, gpu_processes, emit):
        self.state_dir = state_dir
        self.gpu_processes = gpu_processes  # callable: {gpu index: [pids]} or None
        self.emit = emit
        self.entries = {}
        self.origins = {}  # (pid, start_ticks) -> (started_by, log): fixed for a process's life

    def mirror_path(self, name):
        return os.path.join(self.state_dir, "external", name + ".log")

    # --- finding ---------------------------------------------------------------------------
    def discover(self, records):
        """One round (the records lock held): ``records`` are the recorded servers. Returns the names found."""
        table = pt.snapshot()
        recorded = set()
        for r in records:
            if r.get("state") in FINAL_STATES:
                continue
            verdict, members, _ = server_group(r)
            if verdict == OURS:
                recorded.update(members)
                recorded.add(r.get("pid"))
        found = sd.leaders(table)
        gpus = sd.gpus_by_leader(table, set(found), self.gpu_processes() or {})
        kids = pt.children_of(table)
        own_state = os.path.realpath(os.path.expanduser(self.state_dir))
        seen = set()
        for pid, (launch, argv, words) in sorted(found.items()):
            if pid in recorded:
                continue
            if launch == "spectui.sim.server":
                state = sd.sim_state_of(pid, words)
                if state is not None and state != own_state:
                    continue  # a simulated server of another simulated host (its GPUs live elsewhere)
            p = table[pid]
            key = self._known(pid, p.start_ticks)
            if key is not None:
                self._refresh(self.entries[key].record, gpus.get(pid, []))
                seen.add(key)
                continue
            s = sd.settings(words)
            port, _ = sd.confirm_port(pid, s["port"])
            name = sd.ext_name(port, pid)
            if name in self.entries or name in set(r["name"] for r in records):
                name = sd.ext_name(None, pid)
            entry = self._new(name, p, launch, argv, s, port, gpus.get(pid, []), table, kids)
            try:  # one look now (its health answers: ready), so the first listing is current, not "loading"
                entry.watch.poll()
            except Exception as exc:  # the monitor's next round tries again
                entry.record["monitor_error"] = str(exc)
            self.entries[name] = entry
            seen.add(name)
            self.emit(entry.record)
        for name in list(self.entries):
            e = self.entries[name]
            if name not in seen and e.record.get("pid") in recorded:  # adopted meanwhile: spectui's own now
                self.entries.pop(name).close()
        return seen

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
                            external=True, members=lambda pid=p.pid: tree(pid))
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
