"""Start, stop, switch and re-adopt SGLang servers on this host.

Servers are started detached (own session and process group) so they outlive the agent
and the SSH connection, and recorded in the state folder so a later agent re-adopts them.
Starts and stops are serialised across agents by a lock file, so two consoles on one host
see the same servers and never start one twice.

A stop, and so a switch, refuses to stop a server that a live benchmark run measures (a run
started by any agent on this host, found from the run folders by the bench methods), with the
``server_benchmarked`` error naming the run, unless ``stop_benchmark`` is set: the run is then
cancelled (it ends ``interrupted``, saying why) before the server is stopped.

spectui signals only process groups it identifies as servers it started, by pid and start time
(``servers.process.server_group``): a record whose pid now names another program is never
signalled, whichever path (stop, switch, a stop of all servers) reads it. A stop never fails for a
full disk: the kill goes ahead, and the result says in one sentence that the record could not be
saved. Agents on one host share the records folder; each agent's monitor re-reads it, so a server
another agent started is watched here too (``server`` events), and one another agent stopped is
seen as stopped, not crashed: a watch never writes over a record that another agent is stopping.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time

from . import external as xs
from . import proc_table as pt
from . import discover as sd
from .external_logs import open_mirror
from ..logs.follow import TAIL_MAX_BYTES, TAIL_MAX_LINES, NotRegular, open_regular, read_lines_at, read_tail
from ..protocol import FINAL_STATES, LIVE_STATES, SERVING_STATES, STOP_GRACE_S, AgentError, ServerState
from .process import (
    OURS,
    LaunchError,
    alive,
    api_key_in,
    became_other,
    expand_argv,
    expand_env,
    group_members,
    identity,
    identity_after_exec,
    plan_of,
    port_in_use,
    proc_stat,
    redact_argv,
    remember_members,
    same_process,
    server_group,
    spawn,
    terminate_group,
    terminate_processes,
)
from .records import BadName, RecordStore, check_name
from .watch import SETTLE_TAIL_BYTES, ServerWatch

log = logging.getLogger(__name__)

SERVER_BENCHMARKED = "server_benchmarked"
SWITCH_LOST = "switch_lost"  # another switch took the GPUs or port while this one ran
RELEASE_TIMEOUT_S = 60.0
LIST_CATCH_UP_S = 1.0  # how long a listing waits for this agent to confirm a ready state another agent saved
CATCH_UP_S = 10.0  # how long a request waits for this agent to confirm a ready state another agent saved
READY_TIMEOUT_S = 1800.0
SCAN_EVERY_S = 1.0
MONITOR_TICK_S = 0.25  # the monitor's look at every watch; sooner when a health check has answered
PLANNED_KEPT = 4096  # the processes whose planned identity is kept (those gone go first)
FIRST_DISCOVER_S = 2.0  # how long an agent's first listing waits for the records to look for external servers
FIRST_LOOK_S = 0.25  # how long an agent's first listing waits for the health checks it began to answer
VIEW_KEYS = ("name", "state", "pid", "pgid", "host", "port", "gpus", "profile_hash", "argv", "env_keys",
             "started_at", "ready_at", "ended_at", "progress", "reason", "exit_status", "log_path", "profile",
             "stop", "load_s")
# what every view adds for servers spectui did not start (and fills in for its own)
ORIGIN_KEYS = ("origin", "user", "uid", "started_by", "log_source", "metrics_note", "can_signal", "why_not",
               "model", "tp_size", "speculative", "sid", "start_ticks")


def view(record):
    v = dict((k, record.get(k)) for k in VIEW_KEYS + ORIGIN_KEYS)
    if record.get("state") in (ServerState.FAILED, ServerState.CRASHED):
        v["log_tail"] = record.get("log_tail", [])
    if record.get("origin") in (None, "spectui", "adopted"):
        _own_view(record, v)
    return v


def _own_view(record, v):
    """The origin keys of a server recorded as spectui's own (started, or adopted)."""
    v["origin"] = record.get("origin") or "spectui"
    uid = record.get("uid")
    if uid is None:
        p = pt.read_proc(record["pid"]) if record.get("pid") else None
        uid = p.uid if p is not None else os.geteuid()
    v["uid"], v["user"] = uid, record.get("user") or pt.user_name(uid)
    v["can_signal"], v["why_not"] = True, None
    got = sd.launcher(record.get("argv") or [])
    s = sd.settings(got[1] if got else record.get("argv") or [])
    v["model"] = v["model"] or s["model"]
    v["tp_size"] = v["tp_size"] or s["tp_size"]
    v["speculative"] = v["speculative"] or s["speculative"]
    if v["metrics_note"] is None and not s["metrics"] and got is not None:
        v["metrics_note"] = xs.METRICS_OFF
    if v["log_source"] is None:
        v["log_source"] = {"kind": "file", "readable": True, "text": "following %s" % record.get("log_path")}


def _holds(record, port, gpus):
    """What of ``port`` and ``gpus`` the server of ``record`` holds, in words ("" when nothing)."""
    holds = []
    if int(record.get("port") or 0) == port:
        holds.append("port %d" % port)
    shared = sorted(gpus & set(record.get("gpus") or []))
    if shared:
        holds.append("GPU%s %s" % ("s" if len(shared) > 1 else "", xs.gpu_text(shared)))
    return " and ".join(holds)




class ServerManager(object):
    def __init__(self, state_dir, channel, gpu_source, simulated=False):
        self.state_dir = state_dir
        self.channel = channel
        self.gpu_source = gpu_source  # a callable returning the agent's GPU source
        self.simulated = simulated
        self.store = RecordStore(state_dir)
        self.watches = {}
        self._lock = threading.RLock()
        self._monitor = None
        self._stop = threading.Event()
        self._wake = threading.Event()  # a health check ended: the monitor takes its answer in now
        self._adopted = False
        self._stopping = set()  # names this agent is stopping now
        self._mtimes = {}  # name -> record file mtime, as the monitor last read it
        self.benchmarks = None  # the bench methods' BenchHost, which sets itself here: live runs per server
        self.external = xs.ExternalServers(state_dir, lambda: self._gpu_processes(None), self._emit,
                                           simulated=simulated, on_answer=self._wake.set)
        self.mirrors = {}  # name -> the log mirror of an adopted server whose output goes to tmux or the journal
        self._planned = {}  # (pid, start_ticks) -> what it ran (process.identity) when a plan showed it

    # --- benchmarks measuring a server ------------------------------------------------------
    def _measured_by(self, record):
        """The live benchmark runs that measure ``record``'s server, as ``(status, target)``."""
        return self.benchmarks.measuring(record) if self.benchmarks is not None else []

    def _refuse_if_measured(self, record, live, switching_to=None):
        if live:
            raise AgentError(SERVER_BENCHMARKED, self.benchmarks.sentence(record["name"], live, switching_to))

    def _bench_lock(self):
        """The lock benchmark starts take: held while a stop checks for runs and marks its server stopping."""
        return self.benchmarks.start_lock if self.benchmarks is not None else contextlib.nullcontext()

    # --- records and watches ---------------------------------------------------------
    def _emit(self, record):
        self.channel.event("server", view(record))

    def _name(self, params):
        try:
            return check_name(params.get("name"))
        except BadName as exc:
            raise AgentError("bad_name", str(exc))

    def _save(self, record):
        """Write ``record``; a write error (a full disk) comes back as one sentence, never raised."""
        try:
            self.store.write(record)
            return None
        except OSError as exc:
            return "the record of %s could not be saved in %s (%s); free space there" % (
                record["name"], self.store.dir, exc.strerror or exc)

    def adopt(self, wait=True):
        """Find recorded servers; re-adopt the live ones, settle the ones that ended unwatched, and prune
        the records of servers long ended. Without ``wait`` nothing is done while a start or stop holds the
        records (the monitor adopts them later). The monitor runs from then on."""
        with (self.store.lock() if wait else self.store.attempt()) as held:
            if held:
                records = self.store.read_all()
                for r in records:
                    self._adopt_one(r, emit=self._adopted)
                self.store.prune(records, lambda r: server_group(r)[0] == OURS)
                self._adopted = True
        self._ensure_monitor()

    def _adopt_one(self, r, emit):
        """Watch ``r``'s server if it still runs, or settle its record if it ended while unwatched.
        Called with the records lock held."""
        name = r["name"]
        with self._lock:
            if name in self.watches or r.get("state") in FINAL_STATES:
                return
            if same_process(r):
                if r.get("state") == ServerState.STOPPING:  # its stopper died mid-stop (stops hold the lock)
                    r["state"] = ServerState.READY if r.get("ready_at") else ServerState.LOADING
                # the end of its log: the record says what came before (a log of days is not read again by
                # every agent a command starts, on the host's CPU, while that command runs)
                w = ServerWatch(r, self._log_of(r), tail_bytes=SETTLE_TAIL_BYTES, background=True,
                                on_answer=self._wake.set, own_log=self._own_log(r))
                self.watches[name] = w
                w.poll()
            else:  # exited, or its pid now names another program
                w = ServerWatch(r, self._log_of(r), tail_bytes=SETTLE_TAIL_BYTES, own_log=self._own_log(r))
                w.settle_unwatched()
                w.close()
            self._save(r)
        if emit:
            self._emit(r)

    def _own_log(self, r):
        """Whether ``r``'s log is a file spectui writes itself (never read through a symbolic link)."""
        return r.get("origin") != "adopted" or (r.get("log_follow") or {}).get("kind") in ("tmux", "journal")

    def _log_of(self, r):
        """The log a recorded server writes: spectui's own log file, or, for an adopted server, the file it
        was found writing (or the mirror of its tmux pane or journal, reopened here when needed)."""
        if r.get("origin") != "adopted":
            return self.store.log_path(r["name"])
        follow = r.get("log_follow") or {}
        if follow.get("kind") in ("tmux", "journal") and r["name"] not in self.mirrors and same_process(r):
            try:
                m = open_mirror(follow, self.external.mirror_path(r["name"]))
            except OSError:
                m = None
            if m is not None:
                self.mirrors[r["name"]] = m
        return r.get("log_path")

    def discover(self, wait=False, within_s=0.0):
        """One round of finding external servers, under the records lock (skipped when busy, unless ``wait``;
        with ``within_s``, tried again until the records are free or that many seconds have passed). It reads
        /proc and never waits on a server; the manager's lock is taken only to change its entries. True when
        the round ran."""
        deadline = time.monotonic() + within_s
        while True:
            with (self.store.lock() if wait else self.store.attempt()) as held:
                if held:
                    self.external.discover(self.store.read_all(), self._lock)
                    return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)

    def _scan(self):
        """The monitor's look at the records folder: watch the servers another agent started, settle
        the ones that ended unwatched. Skipped while a start or stop holds the lock."""
        with self.store.attempt() as held:
            if not held:
                return
            names = self.store.names()
            for name in [n for n in self._mtimes if n not in names]:  # records pruned since
                del self._mtimes[name]
            for name in names:
                if name in self.watches:
                    continue
                try:
                    mtime = os.stat(self.store.path(name)).st_mtime_ns
                except OSError:
                    continue
                if self._mtimes.get(name) == mtime:
                    continue
                self._mtimes[name] = mtime
                r = self.store.read(name)
                if r is not None and r.get("name") == name:
                    self._adopt_one(r, emit=True)

    def _ensure_monitor(self):
        if self._monitor is None:
            self._monitor = threading.Thread(target=self._monitor_loop, name="server-monitor")
            self._monitor.daemon = True
            self._monitor.start()

    def _monitor_loop(self):
        scanned = discovered = 0.0
        while not self._stop.is_set():
            self._wake.wait(MONITOR_TICK_S)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.poll_all()
            except Exception:  # a state folder found unsafe since, say: the next tick tries again
                log.debug("a monitor step failed", exc_info=True)
            if time.monotonic() - scanned >= SCAN_EVERY_S:
                scanned = time.monotonic()
                try:
                    self._scan()
                except Exception:  # an unreadable folder must not end the watching of the others
                    pass
            if time.monotonic() - discovered >= xs.DISCOVER_EVERY_S:
                discovered = time.monotonic()
                try:
                    self.discover()
                except Exception:  # an unreadable /proc entry must not end the monitor
                    pass

    def poll_all(self):
        """One step of every watch (the monitor's tick). Nothing in it waits on a server: health checks run in
        their own threads, and a step takes in the answer of the last one that ended. The logs a step reads (at
        most a few MiB, within a deadline) are read holding only that watch's lock, never the manager's, which
        requests take; the found servers' watches step under it (their entries change under it)."""
        with self._lock:
            mirrors = list(self.mirrors.values())
            watches = list(self.watches.values())
            self.external.poll()
        for m in mirrors:
            try:
                m.poll()
            except Exception:
                log.debug('a log mirror could not be polled', exc_info=True)
        for w in watches:
            with w.lock:
                if w.closed:
                    continue
                try:
                    changed = w.poll()
                except Exception as exc:  # never let one server stop the watching of others
                    changed = False
                    w.record["monitor_error"] = str(exc)
                if changed and w.record["state"] in (ServerState.CRASHED, ServerState.FAILED):
                    self._stopped_elsewhere(w.record)
                if changed:
                    w.unsaved = True
            if changed:
                self._emit(w.record)
            if w.unsaved:
                self._persist(w)
            if w.record["state"] in FINAL_STATES and not w.unsaved:
                with self._lock:
                    if self.watches.get(w.record["name"]) is not w:
                        continue
                    del self.watches[w.record["name"]]
                    m = self.mirrors.pop(w.record["name"], None)
                w.close()
                if m is not None:
                    m.close()

    def _persist(self, w):
        """Save a watch's record, unless another agent is stopping that server (its record stands then).
        Deferred to a later tick while a start or stop holds the lock."""
        with self.store.attempt() as held:
            if not held:
                return
            r = w.record
            stored = self.store.read(r["name"])
            by_other = (r["name"] not in self._stopping and stored is not None
                        and stored.get("pid") == r.get("pid") and stored.get("start_ticks") == r.get("start_ticks")
                        and stored.get("state") in (ServerState.STOPPING, ServerState.STOPPED))
            if not (by_other and r["state"] not in FINAL_STATES):
                self._save(r)
            w.unsaved = False

    def _stopped_elsewhere(self, record):
        """A server this agent saw die that another agent was stopping (or stopped): ``stopped``, not a crash."""
        stored = self.store.read(record["name"])
        if (stored and stored.get("pid") == record.get("pid") and stored.get("start_ticks") == record.get("start_ticks")
                and stored.get("state") in (ServerState.STOPPING, ServerState.STOPPED)):
            record.update(state=ServerState.STOPPED, reason=stored.get("reason"),
                          ended_at=stored.get("ended_at") or time.time())
            record.pop("log_tail", None)
            for key in ("stop", "stopped_for"):
                if stored.get(key):
                    record[key] = stored[key]

    def serving(self):
        """{name: record} of the servers this agent watches (copies, safe to read)."""
        with self._lock:
            out = dict((name, dict(e.record)) for name, e in self.external.entries.items())
            out.update((name, dict(w.record)) for name, w in self.watches.items())
            return out

    def close(self):
        self._stop.set()
        self._wake.set()

    def _current(self, name):
        w = self.watches.get(name)
        return w.record if w is not None else self.store.read(name)

    def current(self, name):
        """A copy of server ``name``'s record as this agent knows it now (its watch's, ahead of the record file,
        which the monitor saves at a later tick), or None."""
        with self._lock:
            r = self._current(name)
            return dict(r) if r is not None else None

    def caught_up(self, name, within_s=CATCH_UP_S):
        """:meth:`current`, once this agent's watch has confirmed the ``ready`` that the record file says (written
        by the agent that saw it: another console, a command that has quit); waits at most ``within_s``
        (:meth:`_catch_up`), and not at all when the file says anything else."""
        stored = self.store.read(name)
        if stored is not None:
            self._catch_up([stored], within_s)
        return self.current(name)

    def list(self, params=None):
        """Every server, as last known, at once: the records, this agent's watches and the external servers
        its monitor found. Nothing here waits on a server; ``stale`` says, per entry, why its state may be out
        of date (its last health check got no answer, or the first one has not answered yet). The first
        listing of an agent reads the records and looks for external servers first (unless a start or stop
        holds the records), and gives the health checks that begin then :data:`FIRST_LOOK_S` to answer."""
        # never waits for a start or stop (of another console, too) that holds the records: their records
        # are read as they are, and the monitor watches them and looks for external servers soon after
        first = not self._adopted
        if first:
            self.adopt(wait=False)
        else:  # servers another agent started since: watched now
            with self.store.attempt() as held:
                if held:
                    for r in self.store.read_all():
                        self._adopt_one(r, emit=True)
        if self.external.discovered_at is None:
            first = True
            # a round of the monitor (this agent's or another's) holds the records a moment: wait that out, not a
            # start or stop, so that the first listing does not leave out the servers started outside spectui
            self.discover(within_s=FIRST_DISCOVER_S)
        if first:
            self._first_answers(FIRST_LOOK_S)
        records = self.store.read_all()
        self._catch_up(records, LIST_CATCH_UP_S)
        with self._lock:
            watched = dict((w.record["name"], w) for w in self.watches.values())
            out = []
            for r in records:
                w = watched.get(r["name"])
                if w is not None and _lags_saved_ready(w.record, r):
                    # another agent saw it ready (its own health check), and this one's first answer is still
                    # to come on a busy host: the record's state, said as such, not a contradiction of that switch
                    out.append(dict(view(r), stale="ready as the agent that started it saw it; not yet confirmed by "
                                                   "this one's own health check (%s)" % (w.stale() or "asked")))
                    continue
                out.append(dict(view(w.record if w is not None else r), stale=w.stale() if w is not None else None))
            out += [dict(view(e.record), stale=e.watch.stale()) for e in self.external.entries.values()]
        return {"servers": out, "ignored": sorted(set(self.store.ignored.values()))}

    def _catch_up(self, records, within_s):
        """Give this agent's watches up to ``within_s`` to confirm the ``ready`` that another agent saved in a record
        (the same process), so that a listing right after another console's switch shows what that one saw."""
        def lagging():
            with self._lock:
                return [r["name"] for r in records
                        if r["name"] in self.watches and _lags_saved_ready(self.watches[r["name"]].record, r)]
        end = time.monotonic() + within_s
        while lagging() and time.monotonic() < end:
            self._wake.set()
            time.sleep(0.05)

    def _first_answers(self, within_s):
        """Wait up to ``within_s`` for the first health checks now running to answer (they run at once,
        each in its own thread), and take in what they said."""
        with self._lock:
            checks = [w.health for w in self.watches.values()] + [e.watch.health for e in self.external.entries.values()]
        end = time.monotonic() + within_s
        while time.monotonic() < end and any(h.running and not h.checked for h in checks):
            time.sleep(0.02)
        self.poll_all()

    # --- GPUs --------------------------------------------------------------------------
    def _managed_pids(self):
        """Processes of the servers spectui started (groups it confirms as its own, see server_group)."""
        pids = set()
        for r in self.store.read_all():
            verdict, members, _ = server_group(r)
            if verdict == OURS:
                pids.update(members)
        return pids

    def _gpu_processes(self, indices):
        """{gpu index: [pids]} for the given GPUs, or None when the source cannot list them."""
        src = self.gpu_source()
        if src is None or src.name == "none":
            return None
        out = {}
        for g in src.sample():
            if indices is None or g["index"] in indices:
                if g.get("processes") is None:
                    return None
                out[g["index"]] = [p["pid"] for p in g["processes"]]
        return out

    def foreign_gpu_users(self, gpus):
        """{gpu index: [pids]} of the live processes on ``gpus`` that spectui did not start. A pid a GPU still lists
        after its process ended (a driver frees a dead context a moment later) is not one; nor is a process any
        record names as a server's leader or member (same pid and start time), whatever that server's state."""
        procs = self._gpu_processes(set(gpus))
        if procs is None:
            return {}
        mine = self._managed_pids()
        for r in self.store.read_all():
            seen = [(r.get("pid"), r.get("start_ticks"))] + [(m[0], m[1]) for m in r.get("members") or []]
            for pid, ticks in seen:
                st = proc_stat(pid) if pid else None
                if st is not None and st[3] == ticks:
                    mine.add(pid)

        def foreign(pid):
            st = proc_stat(pid)
            return pid not in mine and st is not None and st[0] not in ("Z", "X")

        out = dict((i, [p for p in pids if foreign(p)]) for i, pids in procs.items())
        return dict((i, pids) for i, pids in out.items() if pids)

    def wait_gpu_release(self, pids, gpus, timeout=RELEASE_TIMEOUT_S):
        """Wait until none of ``pids`` holds memory on any GPU; returns (released, seconds, how)."""
        t0 = time.monotonic()
        src = self.gpu_source()
        if src is None or src.name == "none":
            return None, 0.0, "no GPU telemetry on this host"
        pids = set(pids)
        while True:
            sample = src.sample()
            if any(g.get("processes") is None for g in sample):
                held = [g["index"] for g in sample if g["index"] in (gpus or []) and g.get("mem_used_mib") and
                        g.get("mem_total_mib") and g["mem_used_mib"] > 0.02 * g["mem_total_mib"]]
                how = "judged by memory used (this GPU source cannot list processes)"
            else:
                held = [g["index"] for g in sample if any(p["pid"] in pids for p in g["processes"])]
                how = "no process of the server on any GPU"
            if not held:
                return True, time.monotonic() - t0, how
            if time.monotonic() - t0 >= timeout:
                return False, time.monotonic() - t0, "GPU %s still held after %d s" % (
                    ", ".join(str(i) for i in held), timeout)
            time.sleep(0.1)

    # --- start ---------------------------------------------------------------------------
    def start(self, params):
        name = self._name(params)
        argv = [str(a) for a in params["argv"]]
        host = params.get("host") or "127.0.0.1"
        port = int(params["port"])
        gpus = [int(g) for g in params.get("gpus") or []]
        if not self._adopted:
            self.adopt()
        with self.store.lock():
            self.adopt()  # another agent may have started or stopped something
            current = self._current(name)
            if current is not None and current.get("state") in LIVE_STATES and same_process(current):
                if current.get("profile_hash") == params.get("profile_hash"):
                    return dict(view(current), already_running=True)
                raise AgentError("busy", "%s is already running (pid %d) with other settings; stop it first"
                                 % (name, current["pid"]))
            for r in self.store.read_all():
                if r["name"] == name or r.get("state") not in LIVE_STATES:
                    continue
                if int(r.get("port") or 0) == port:
                    raise AgentError("port_conflict", "port %d is used by server %s; stop it or switch to %s"
                                     % (port, r["name"], name))
                overlap = sorted(set(gpus) & set(r.get("gpus") or []))
                if overlap:
                    raise AgentError("gpu_conflict", "GPU %s are used by server %s; stop it or switch to %s"
                                     % (",".join(map(str, overlap)), r["name"], name))
            if port_in_use(host, port):
                holder = self._external_holder(port=port)
                if holder is not None:
                    raise AgentError("port_in_use", "port %d is in use by %s, a server spectui did not start; switch "
                                     "again and confirm stopping it, or use another port" % (
                                         port, xs.holder_sentence(holder)))
                raise AgentError("port_in_use", "port %d on the host is in use by a program spectui did not start; "
                                 "stop it or set another port in the profile" % port)
            foreign = self.foreign_gpu_users(gpus)
            holder = self._external_holder(gpus=gpus) if foreign else None
            if holder is not None and not params.get("force"):
                raise AgentError("gpus_busy", "GPUs %s are in use by %s, a server spectui did not start; switch again "
                                 "and confirm stopping it, or use --force to start beside it" % (
                                     xs.gpu_text(sorted(set(gpus) & set(holder.get("gpus") or []))),
                                     xs.holder_sentence(holder)))
            if foreign and not params.get("force"):
                desc = "; ".join("GPU %d: pid %s" % (i, ", ".join(map(str, p))) for i, p in sorted(foreign.items()))
                raise AgentError("gpus_busy", "GPUs are in use by processes spectui did not start (%s); "
                                 "stop them, or use --force" % desc)
            try:
                env = expand_env(params.get("env") or {})
                expanded = expand_argv(argv)
            except LaunchError as exc:
                raise AgentError("env", str(exc))
            if self.simulated:
                env["SPECTUI_STATE_DIR"] = self.state_dir
            log_path = self.store.rotate_log(name)
            try:
                popen = spawn(expanded, env, log_path, cwd=params.get("cwd"))
            except LaunchError as exc:
                raise AgentError("launch", str(exc))
            st = proc_stat(popen.pid)
            # the program as it runs right after its exec (a stop later signals it only while it still runs it); the
            # command line as the profile gave it: ${VAR} references, never their values, and no secret flag's value
            record = {"members": [[popen.pid, st[3]]] if st else [], "ident": identity_after_exec(popen.pid),
                "name": name, "state": ServerState.STARTING, "pid": popen.pid, "pgid": popen.pid,
                "start_ticks": st[3] if st else None, "host": host, "port": port, "gpus": gpus,
                "profile_hash": params.get("profile_hash"), "profile": params.get("profile"),
                "argv": redact_argv(argv), "env_keys": sorted((params.get("env") or {}).keys()),
                "started_at": time.time(), "ready_at": None, "ended_at": None, "progress": None,
                "reason": None, "log_path": log_path, "unresponsive_after_s": float(
                    params.get("unresponsive_after_s") or 20.0),
            }
            with self._lock:  # written and watched at once: the monitor's scan never sees one without the other
                problem = self._save(record)
                if problem is not None:  # unrecorded, no later agent could find it: do not leave it running
                    terminate_group(popen.pid, 5.0, reap=popen.poll, plan=plan_of(group_members(popen.pid)))
                    raise AgentError("disk", "%s was not started: %s" % (name, problem))
                self.watches[name] = ServerWatch(record, log_path, popen=popen, background=True,
                                                 on_answer=self._wake.set, api_key=api_key_in(expanded),
                                                 own_log=True)
        self._emit(record)
        self._ensure_monitor()
        return view(record)

    def _external_holder(self, port=None, gpus=()):
        self.discover(wait=True)
        with self._lock:
            held = self.external.holding(port, gpus)
        return held[0][0] if held else None

    def wait(self, params):
        """Block until the server reaches one of ``states`` (default: ready or an ending)."""
        name = self._name(params)
        states = params.get("states") or list(SERVING_STATES + FINAL_STATES)
        deadline = time.monotonic() + float(params.get("timeout_s") or READY_TIMEOUT_S)
        while True:
            r = self._stepped(name)
            if r is None:
                raise AgentError("unknown_server", "no server named %s on this host" % name)
            if r.get("state") in states:
                self._saved_before_answer(name)
                return view(r)
            if time.monotonic() >= deadline:
                return dict(view(r), timed_out=True)
            time.sleep(0.1)

    def _stepped(self, name):
        """A copy of server ``name``'s record as a whole step of the monitor left it (a state that step changed is
        marked unsaved too): its watch's, else its record file's; None when there is neither."""
        with self._lock:
            w = self.watches.get(name)
        if w is None:
            return self.store.read(name)
        with w.lock:
            return dict(w.record)

    def _saved_before_answer(self, name, within_s=15.0):
        """A state this agent answers with is on disk too, so that an agent started after this one ends (a
        console that quits as soon as a server is ready) reads it: the monitor saves it at its next tick, which
        a session that closes at once may not see. Waits at most ``within_s`` for the records' lock, which a
        round of finding external servers holds while it reads every process (seconds on a loaded host)."""
        w = self.watches.get(name)
        end = time.monotonic() + within_s
        while w is not None and w.unsaved and time.monotonic() < end:
            self._persist(w)
            if w.unsaved:
                time.sleep(0.05)

    # --- stop ------------------------------------------------------------------------------
    def stop(self, params, on_stage=None, switching_to=None):
        """Stop a server; ``on_stage(label)`` hears when the wait for GPU memory begins. A server that a live
        benchmark run measures is refused (``server_benchmarked``) unless ``stop_benchmark``: then the run is
        cancelled first. ``switching_to``: the switch this stop is part of (for the sentences).

        Only a process group confirmed as the server's (``server_group``) is signalled; otherwise the answer
        is ``already_stopped`` with ``not_signalled``, one sentence saying why. A record that cannot be
        written (a full disk) does not stop the stop: ``record_error`` says so."""
        name = self._name(params)
        grace = float(params.get("grace_s") or STOP_GRACE_S)
        if not self._adopted:
            self.adopt()
        if name not in self.watches and not os.path.exists(self.store.path(name)):
            return self._stop_external(name, grace, params, on_stage, switching_to)
        with self.store.lock():
            self._stopping.add(name)
            try:
                return self._stop_locked(name, grace, params, on_stage, switching_to)
            finally:
                self._stopping.discard(name)

    def _stop_locked(self, name, grace, params, on_stage, switching_to):
        with self._lock:
            w = self.watches.get(name)
        r = w.record if w is not None else self.store.read(name)
        if r is None:
            self.store.refuse_ignored(name)
            raise AgentError("unknown_server", "no server named %s on this host" % name)
        verdict, members, why = server_group(r)
        if verdict != OURS and (why is not None or r.get("state") in FINAL_STATES):
            out = dict(view(r), already_stopped=True)
            if why is not None:
                out["not_signalled"] = why
            if r.get("state") not in FINAL_STATES:  # it ended unwatched; its pid is someone else's now
                r["state"], r["reason"], r["ended_at"] = ServerState.STOPPED, why, r.get("ended_at") or time.time()
                problem = self._save(r)
                out = dict(out, **view(r))
                if problem:
                    out["record_error"] = problem
            self._forget(name, w)
            return out
        pgid = r.get("pgid") or r["pid"]
        plan = plan_of(members)  # what each process runs now: one that execs into another program is spared
        if verdict == OURS:
            remember_members(r, members)
        pids = set(members)
        pids.add(r["pid"])
        problems = []
        with self._bench_lock():  # no run starts on it between the check and "stopping"
            live = self._measured_by(r)
            if not params.get("stop_benchmark"):
                self._refuse_if_measured(r, live, switching_to)
            with w.lock if w is not None else contextlib.nullcontext():  # never in the middle of a monitor's step
                prior = r.get("state")
                r["state"] = ServerState.STOPPING
                if switching_to:  # a switch it loses reads here which one took its place
                    r["stopped_for"] = switching_to
            problems.append(self._save(r))
        self._emit(r)
        cancelled = self._cancel_runs(name, live, switching_to)

        def confirm():  # asked before each signal: still the server's group? (keeps its members current)
            v, now_members, _ = server_group(r)
            if v == OURS:
                remember_members(r, now_members)
            return v == OURS

        exit_s, killed, left, spared = terminate_group(pgid, grace, reap=w.reap if w is not None else None,
                                                       confirm=confirm, plan=plan)
        if left:
            raise AgentError("stop_failed", "processes %s of %s are still alive after SIGKILL"
                             % (", ".join(map(str, left)), name))
        if on_stage is not None:
            on_stage("waiting for GPU memory")
        released, release_s, how = self.wait_gpu_release(pids, r.get("gpus"))
        r["state"] = ServerState.STOPPED if prior not in (ServerState.FAILED, ServerState.CRASHED) else prior
        r["ended_at"] = r.get("ended_at") or time.time()
        r["stop"] = {"exit_s": round(exit_s, 3), "killed": killed, "gpu_released": released,
                     "release_s": round(release_s, 3), "release_check": how, "pids": sorted(pids)}
        problems.append(self._save(r))
        self._forget(name, w)
        self._emit(r)
        out = view(r)
        problem = next((p for p in problems if p), None)
        if problem:
            out["record_error"] = problem
        if cancelled:
            out["benchmarks_cancelled"] = cancelled
        if spared:
            out["not_signalled"] = "; ".join(spared) + " (it exec'd), so spectui sent it no signal"
        return out

    # --- servers spectui did not start --------------------------------------------------------
    def _external(self, name):
        """The record of external server ``name`` as found now (under the records lock)."""
        self.discover(wait=True)
        with self._lock:
            r = self.external.get(name)
        if r is None:
            raise AgentError("unknown_server", "no server named %s on this host" % name)
        return r

    def _confirmed(self, r, confirmed, doing):
        """The external server's processes now, checked against the list the operator ``confirmed``."""
        if not r.get("can_signal"):
            raise AgentError("not_permitted", "spectui may not %s %s: %s" % (doing, r["name"], r.get("why_not")))
        if not confirmed:
            raise AgentError("confirm_needed", "%s was not started by spectui: ask for its plan (server.plan_stop) "
                             "and confirm the processes it lists" % r["name"])
        try:
            want = set((int(e[0]), int(e[1])) for e in confirmed)
        except (TypeError, ValueError, IndexError, KeyError):
            raise AgentError("bad_params", "confirmed must be a list of [pid, start_ticks] pairs")
        now = xs.tree(r["pid"])
        have = set(now.items())
        parts = []
        if have != want:
            new = sorted(have - want)
            gone = sorted(want - have)
            if new:
                parts.append("now also pid %s" % ", ".join(str(p) for p, _ in new))
            if gone:
                parts.append("pid %s no longer as confirmed" % ", ".join(str(p) for p, _ in gone))
        parts += [why for why in (became_other(p, self._planned.get((p, t))) for p, t in sorted(have & want)) if why]
        if parts:
            raise AgentError("plan_changed", "the processes of %s changed since the plan (%s); nothing was signalled: "
                             "look at the plan again" % (r["name"], "; ".join(parts)))
        return now

    def _plan(self, members):
        """Remember what each of ``members`` ({pid: start_ticks}) runs now, as a plan shows it: a stop the operator
        confirms later signals a process only while it still runs that (an exec keeps its pid and start time)."""
        for p, t in members.items():
            self._planned[(p, t)] = identity(p)
        if len(self._planned) > PLANNED_KEPT:
            for key in [k for k in self._planned if not alive(k[0])]:
                del self._planned[key]
            while len(self._planned) > PLANNED_KEPT:
                del self._planned[next(iter(self._planned))]
        return members

    def _with_identity(self, members):
        """``[(pid, start_ticks, identity)]`` of ``members``: the identity planned for each (else what it runs now)."""
        return [(p, t, self._planned.get((p, t)) or identity(p)) for p, t in sorted(members.items())]

    def plan_stop(self, params):
        """What a stop of server ``name`` would signal (nothing is signalled)."""
        name = self._name(params)
        if not self._adopted:
            self.adopt()
        rec = self.store.read(name)
        if rec is not None:
            verdict, members, why = server_group(rec)
            v = view(rec)
            members = members if verdict == OURS else {}
            return {"name": name, "origin": v["origin"], "pid": rec.get("pid"), "argv": rec.get("argv"),
                    "user": v["user"], "signal": "group", "pgid": rec.get("pgid") or rec.get("pid"),
                    "processes": xs.process_rows(members), "gpus": rec.get("gpus") or [],
                    "allowed": verdict == OURS, "why_not": None if verdict == OURS else (
                        why or "%s is not running" % name), "unit": None, "note": None}
        r = self._external(name)
        members = self._plan(xs.tree(r["pid"]))
        follow = r.get("log_follow") or {}
        unit = follow.get("unit") if (r.get("started_by") or {}).get("kind") == "systemd" else None
        note = None
        if unit:
            note = ("it is the systemd unit %s; systemd may start it again: stop it with systemctl %sstop %s "
                    "instead" % (unit, "--user " if follow.get("user_unit") else "", unit))
        return {"name": name, "origin": "external", "pid": r["pid"], "argv": r.get("argv"), "user": r.get("user"),
                "signal": "processes", "pgid": r.get("pgid"), "processes": xs.process_rows(members),
                "gpus": r.get("gpus") or [], "allowed": bool(r.get("can_signal")), "why_not": r.get("why_not"),
                "unit": unit, "note": note}

    def _stop_external(self, name, grace, params, on_stage=None, switching_to=None):
        with self.store.lock():
            r = self._external(name)
            members = self._confirmed(r, params.get("confirmed"), "stop")
            with self._bench_lock():
                live = self._measured_by(r)
                if not params.get("stop_benchmark"):
                    self._refuse_if_measured(r, live, switching_to)
                r["state"] = ServerState.STOPPING
            self._emit(r)
            cancelled = self._cancel_runs(name, live, switching_to)
            exit_s, killed, left, spared = terminate_processes(self._with_identity(members), grace,
                                                               never=pt.own_ancestry())
            if left:
                raise AgentError("stop_failed", "processes %s of %s are still alive after SIGKILL"
                                 % (", ".join(map(str, left)), name))
            if on_stage is not None:
                on_stage("waiting for GPU memory")
            released, release_s, how = self.wait_gpu_release(set(members), r.get("gpus"))
            r.update(state=ServerState.STOPPED, ended_at=time.time(), reason="stopped by spectui")
            r["stop"] = {"exit_s": round(exit_s, 3), "killed": killed, "gpu_released": released,
                         "release_s": round(release_s, 3), "release_check": how, "pids": sorted(members)}
            with self._lock:
                self.external.forget(name)
        self._emit(r)
        out = view(r)
        if cancelled:
            out["benchmarks_cancelled"] = cancelled
        if spared:
            out["not_signalled"] = "; ".join(spared) + " (it exec'd), so spectui sent it no signal"
        return out

    def adopt_external(self, params):
        """Record external server ``name`` as spectui's own (origin "adopted")."""
        name = self._name(params)
        new_name = params.get("as") or name
        try:
            check_name(new_name)
        except BadName as exc:
            raise AgentError("bad_name", str(exc))
        if not self._adopted:
            self.adopt()
        with self.store.lock():
            r = self._external(name)
            members = self._confirmed(r, params.get("confirmed"), "adopt")
            if self.store.read(new_name) is not None and self.store.read(new_name).get("state") in LIVE_STATES:
                raise AgentError("busy", "a server named %s is already recorded on this host; adopt it under "
                                 "another name" % new_name)
            group = group_members(r.get("pgid") or r["pid"])
            outside = sorted(p for p in group if p not in members)
            if outside:
                rows = xs.process_rows(dict((p, group[p]) for p in outside))
                raise AgentError("not_own_group", "%s shares its process group %d with processes outside the server "
                                 "(%s); a later stop would signal them too, so it was not adopted (it can still be "
                                 "stopped)" % (name, r.get("pgid"), "; ".join(
                                     "pid %d: %s" % (row["pid"], xs.argv_short(row["command"].split(), 60))
                                     for row in rows)))
            with self._lock:
                entry = self.external.forget(name)
            rec = dict((k, v) for k, v in r.items() if k not in ("monitor_error",))
            rec.update(name=new_name, origin="adopted", members=sorted([p, t] for p, t in group.items()),
                       adopted_at=time.time(), unresponsive_after_s=20.0, ident=identity(r["pid"]),
                       argv=redact_argv(r.get("argv") or []))
            if rec["state"] in (ServerState.STOPPING, ServerState.STOPPED):
                rec["state"] = ServerState.LOADING
            follow = rec.get("log_follow") or {}
            if follow.get("kind") in ("tmux", "journal") and entry is not None and entry.mirror is not None:
                entry.mirror.close()
                rec["log_path"] = self.external.mirror_path(new_name)
            problem = self._save(rec)
            if problem is not None:
                raise AgentError("disk", "%s was not adopted: %s" % (name, problem))
            self._adopt_one(rec, emit=False)
        self._emit(rec)
        return view(rec)

    def _forget(self, name, w):
        with self._lock:
            if w is not None and self.watches.get(name) is w:
                self.watches.pop(name, None)
                w.close()
                m = self.mirrors.pop(name, None)
                if m is not None:
                    m.close()

    def _cancel_runs(self, name, live, switching_to):
        """Cancel the runs measuring server ``name`` (told to stop it anyway); their ids."""
        why = "for a switch to %s " % switching_to if switching_to else ""
        out = []
        for st, _ in live:
            self.benchmarks.cancel({"run_id": st["run_id"], "reason": "cancelled: server %s was stopped %swhile this "
                                                                      "run measured it" % (name, why)})
            out.append(st["run_id"])
        return out

    # --- switch ----------------------------------------------------------------------------
    def switch(self, params):
        """Stop whatever holds the target's GPUs or port, wait for release, start it, wait for ready.
        A holder is a recorded server whose process group spectui confirms as its own (``server_group``)."""
        name = self._name(params)
        port = int(params["port"])
        gpus = set(int(g) for g in params.get("gpus") or [])
        t_all = time.monotonic()
        stages = []

        def stage(label, detail=None, seconds=None):
            ev = {"target": name, "stage": label, "detail": detail, "elapsed_s": round(time.monotonic() - t_all, 3)}
            if seconds is not None:
                ev["seconds"] = round(seconds, 3)
                stages.append({"stage": label, "detail": detail, "seconds": round(seconds, 3)})
            self.channel.event("switch", ev)

        if not self._adopted:
            self.adopt()
        current = self._current(name)
        if (current is not None and current.get("state") == ServerState.READY and same_process(current)
                and current.get("profile_hash") == params.get("profile_hash")):
            stage(ServerState.READY, "already running")
            return {"server": view(current), "stages": stages, "total_s": 0.0, "already_running": True}
        holders = self._recorded_holders(name, port, gpus)
        if not params.get("stop_benchmark"):  # before stopping any: each stop checks again under the lock
            for r in holders:
                self._refuse_if_measured(r, self._measured_by(r), name)
        cancelled = []
        record_errors = []
        confirmed = set((int(p), int(t)) for p, t in params.get("stop_external") or [])
        for r, _ in self._external_holders(port, gpus) if confirmed else []:
            procs = set(xs.tree(r["pid"]).items())
            if not procs or not procs <= confirmed:
                continue  # not confirmed: the start below refuses, naming it
            stage(ServerState.STOPPING, r["name"])
            res = self._stop_external(r["name"], float(params.get("grace_s") or STOP_GRACE_S),
                                      {"confirmed": sorted(procs), "stop_benchmark": params.get("stop_benchmark")},
                                      on_stage=lambda label, n=r["name"]: stage(label, n), switching_to=name)
            cancelled += res.get("benchmarks_cancelled") or []
            stop = res.get("stop") or {}
            stages.append({"stage": ServerState.STOPPING, "detail": r["name"], "seconds": stop.get("exit_s", 0.0)})
            stages.append({"stage": "waiting for GPU memory", "detail": r["name"],
                           "seconds": stop.get("release_s", 0.0)})
            stage(ServerState.STOPPED, r["name"], None)
        for r in holders:
            stage(ServerState.STOPPING, r["name"])
            res = self.stop({"name": r["name"], "grace_s": params.get("grace_s"),
                             "stop_benchmark": params.get("stop_benchmark")},
                            on_stage=lambda label, n=r["name"]: stage(label, n), switching_to=name)
            cancelled += res.get("benchmarks_cancelled") or []
            if res.get("record_error"):
                record_errors.append(res["record_error"])
            stop = res.get("stop") or {}
            stages.append({"stage": ServerState.STOPPING, "detail": r["name"], "seconds": stop.get("exit_s", 0.0)})
            stages.append({"stage": "waiting for GPU memory", "detail": r["name"],
                           "seconds": stop.get("release_s", 0.0)})
            stage(ServerState.STOPPED, r["name"], None)
        t = time.monotonic()
        stage(ServerState.STARTING)
        began = time.time()
        try:
            self.start(params)
        except AgentError as exc:
            if exc.code in ("gpu_conflict", "port_conflict"):
                self._refuse_lost(name, port, gpus, began, "was not started")
            raise
        stage("started", None, time.monotonic() - t)
        t = time.monotonic()
        last_pct = None
        deadline = time.monotonic() + float(params.get("timeout_s") or READY_TIMEOUT_S)
        while True:
            # a whole step of the monitor: never the moment between a death seen and its cause read (a crash, or
            # another agent's stop for its switch)
            r = self._stepped(name) or {}
            state = r.get("state")
            pct = (r.get("progress") or {}).get("percent")
            if state == ServerState.LOADING and pct != last_pct:
                last_pct = pct
                stage(ServerState.LOADING, r.get("progress"))
            if state in SERVING_STATES + FINAL_STATES:
                break
            if time.monotonic() >= deadline:
                state = "timeout"
                break
            time.sleep(0.1)
        r = self._stepped(name) or r
        self._saved_before_answer(name)  # the answer's state is on disk for the agent a next command starts
        stage(state, r.get("reason"), time.monotonic() - t)
        if state == ServerState.STOPPED:  # this switch stops nothing after its start: another one did
            self._refuse_lost(name, port, gpus, began, "was stopped before it was ready", always=True,
                              stopped_for=r.get("stopped_for"))
        out = {"server": view(r), "stages": stages, "total_s": round(time.monotonic() - t_all, 3)}
        if cancelled:
            out["benchmarks_cancelled"] = cancelled
        if record_errors:
            out["record_errors"] = record_errors
        return out

    def _refuse_lost(self, name, port, gpus, since, what, always=False, stopped_for=None):
        """Raise ``switch_lost`` when another switch (or start) took ``port`` or ``gpus`` after ``since``, saying
        which; with ``always`` even when the server that took them is not recorded yet (``stopped_for``: the switch
        that stopped this one's server, as its record says)."""
        took = [r for r in self.store.read_all() if r["name"] != name and r.get("state") in LIVE_STATES
                and (r.get("started_at") or 0) >= since
                and (int(r.get("port") or 0) == port or gpus & set(r.get("gpus") or []))]
        if not took and not always:
            return
        if took:
            winner = " and %s holds %s now" % (took[0]["name"], _holds(took[0], port, gpus))
        elif stopped_for and stopped_for != name:
            winner = " by a switch to %s" % stopped_for
        else:
            winner = ""
        raise AgentError(SWITCH_LOST, "another switch won: %s %s%s; switch to %s again to take them"
                         % (name, what, winner, name))

    def _recorded_holders(self, name, port, gpus):
        """Recorded servers (spectui's own, confirmed by ``server_group``) a switch to ``name`` stops."""
        return [r for r in self.store.read_all()
                if (r["name"] == name or int(r.get("port") or 0) == port or gpus & set(r.get("gpus") or []))
                and server_group(r)[0] == OURS]

    def _external_holders(self, port, gpus):
        self.discover(wait=True)
        with self._lock:
            return [(dict(r), holds) for r, holds in self.external.holding(port, gpus)]

    def plan_switch(self, params):
        """A dry run of ``switch``: what it would stop, and what would refuse it. Stops and starts nothing."""
        name = self._name(params)
        port = int(params["port"])
        gpus = set(int(g) for g in params.get("gpus") or [])
        if not self._adopted:
            self.adopt()
        stops, refusals = [], []
        for r in self._recorded_holders(name, port, gpus):
            v = view(r)
            stops.append({"name": r["name"], "origin": v["origin"], "pid": r.get("pid"), "argv": r.get("argv"),
                          "user": v["user"], "holds": _holds(r, port, gpus) or "the name %s" % name,
                          "processes": sorted([p, t] for p, t in server_group(r)[1].items()),
                          "allowed": True, "why_not": None})
        for r, holds in self._external_holders(port, gpus):
            stops.append({"name": r["name"], "origin": "external", "pid": r["pid"], "argv": r.get("argv"),
                          "user": r.get("user"), "holds": holds,
                          "processes": sorted([p, t] for p, t in self._plan(xs.tree(r["pid"])).items()),
                          "allowed": bool(r.get("can_signal")), "why_not": r.get("why_not")})
            if not r.get("can_signal"):
                refusals.append("%s holds %s and spectui may not stop it: %s" % (r["name"], holds, r.get("why_not")))
        return {"target": name, "argv": params.get("argv"), "stops": stops, "refusals": refusals}

    # --- logs ------------------------------------------------------------------------------
    def logs(self, params):
        """The last ``lines`` lines (``offset`` absent; at most :data:`~..logs.follow.TAIL_MAX_LINES`, read from the
        end of the log, at most :data:`~..logs.follow.TAIL_MAX_BYTES`: ``capped`` says so when either cut the
        answer), or what was written after ``offset`` (at most 1 MiB a call). Only a regular file is read (a FIFO
        or a device in its place is refused in one sentence); spectui's own log is never read through a link."""
        name = self._name(params)
        rec = self.store.read(name)
        own = True
        if rec is not None:
            path, own = self._log_of(rec), self._own_log(rec)
        else:
            with self._lock:
                ext = self.external.get(name)
            if ext is None:
                self.discover(wait=True)
                with self._lock:
                    ext = self.external.get(name)
            if ext is not None and not ext.get("log_path"):
                raise AgentError("no_log", "spectui cannot read the log of %s: %s" % (
                    name, (ext.get("log_source") or {}).get("text")))
            path = ext.get("log_path") if ext is not None else self.store.log_path(name)
            own = ext is None
        if not path:
            raise AgentError("no_log", "there is no log for %s on this host" % name)
        try:
            fd = open_regular(path, nofollow=own)
        except NotRegular as exc:
            raise AgentError("no_log", "spectui cannot read the log of %s: %s" % (name, exc))
        except FileNotFoundError:
            raise AgentError("no_log", "there is no log for %s on this host" % name)
        except OSError as exc:
            raise AgentError("no_log", "spectui cannot read the log of %s: %s (%s)" % (name, path,
                                                                                       exc.strerror or exc))
        with os.fdopen(fd, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            offset = params.get("offset")
            if offset is None:
                want = int(params.get("lines") or 40)
                text, short = read_tail(fh, size, want)
                capped = None
                if short or want > TAIL_MAX_LINES:
                    capped = ("the last %d lines of the log of %s are all spectui reads at once (at most %d lines and "
                              "%d MiB); the whole log is %s on the host" % (len(text), name, TAIL_MAX_LINES,
                                                                           TAIL_MAX_BYTES >> 20, path))
                return {"lines": text, "offset": size, "reset": False, "capped": capped}
            reset = offset > size
            # whole lines only; one past the cap comes cut, and the offset moves past it
            text, after = read_lines_at(fh, 0 if reset else offset, 1024 * 1024)
        return {"lines": text, "offset": after, "reset": reset}


def _lags_saved_ready(watched, saved):
    """Whether this agent's watch of a server (``watched``) still says starting or loading the same process that
    another agent saved ready (``saved``)."""
    return (saved.get("state") == ServerState.READY and watched.get("pid") == saved.get("pid")
            and watched.get("state") in (ServerState.STARTING, ServerState.LOADING))
