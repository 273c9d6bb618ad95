"""Start, stop, switch and re-adopt SGLang servers on this host.

Servers are started detached (own session and process group) so they outlive the agent
and the SSH connection, and recorded in the state folder so a later agent re-adopts them.
Starts and stops are serialised across agents by a lock file, so two consoles on one host
see the same servers and never start one twice.

A stop, and so a switch, refuses to stop a server that a live benchmark run measures (a run
started by any agent on this host, found from the run folders by the bench methods), with the
``server_benchmarked`` error naming the run, unless ``stop_benchmark`` is set: the run is then
cancelled (it ends ``interrupted``, saying why) before the server is stopped.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

from .protocol import AgentError
from .server_process import (
    LaunchError,
    alive,
    cmdline,
    expand_env,
    group_pids,
    port_in_use,
    proc_stat,
    spawn,
    terminate_group,
)
from .server_records import FINAL_STATES, LIVE_STATES, RecordStore
from .server_watch import ServerWatch

SERVER_BENCHMARKED = "server_benchmarked"
DEFAULT_GRACE_S = 20.0
RELEASE_TIMEOUT_S = 60.0
READY_TIMEOUT_S = 1800.0
VIEW_KEYS = ("name", "state", "pid", "pgid", "host", "port", "gpus", "profile_hash", "argv", "env_keys",
             "started_at", "ready_at", "ended_at", "progress", "reason", "exit_status", "log_path", "profile",
             "stop", "load_s")


def view(record):
    v = dict((k, record.get(k)) for k in VIEW_KEYS)
    if record.get("state") in ("failed", "crashed"):
        v["log_tail"] = record.get("log_tail", [])
    return v


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
        self._adopted = False
        self.benchmarks = None  # the bench methods' BenchHost, which sets itself here: live runs per server

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

    def adopt(self):
        """Find recorded servers; re-adopt the live ones and settle the stale ones."""
        with self.store.lock():
            for r in self.store.read_all():
                name = r["name"]
                if name in self.watches:
                    continue
                if r.get("state") in FINAL_STATES:
                    continue
                pid = r.get("pid")
                st = proc_stat(pid) if pid else None
                living = st is not None and st[0] not in ("Z", "X")
                # Same process: the start time (set at fork, unlike the command line, which a
                # just-started child shows as its parent's until it execs) or, without it, argv.
                if r.get("start_ticks") is not None:
                    same = living and st[3] == r["start_ticks"]
                else:
                    same = living and cmdline(pid) == r.get("argv")
                if same:
                    w = ServerWatch(r, self.store.log_path(name))
                    if r.get("state") == "stopping":
                        r["state"] = "ready" if r.get("ready_at") else "loading"
                    self.watches[name] = w
                    w.poll()
                    self.store.write(r)
                elif living:
                    # The pid now belongs to another program: the record is stale.
                    self.store.remove(name)
                else:
                    was = r.get("state")
                    r["state"] = "crashed" if was in ("ready", "unresponsive") else (
                        "stopped" if was == "stopping" else "failed")
                    r["reason"] = r.get("reason") or "the server exited while no console was watching"
                    r["ended_at"] = r.get("ended_at") or time.time()
                    self.store.write(r)
            self._adopted = True
        self._ensure_monitor()

    def _ensure_monitor(self):
        if self._monitor is None:
            self._monitor = threading.Thread(target=self._monitor_loop, name="server-monitor")
            self._monitor.daemon = True
            self._monitor.start()

    def _monitor_loop(self):
        while not self._stop.wait(0.25):
            self.poll_all()

    def poll_all(self):
        """One step of every watch (the monitor's tick; ``list`` runs one too, to be current)."""
        with self._lock:
            for w in list(self.watches.values()):
                try:
                    changed = w.poll()
                except Exception as exc:  # never let one server stop the watching of others
                    changed = False
                    w.record["monitor_error"] = str(exc)
                if changed and w.record["state"] in ("crashed", "failed"):
                    self._stopped_elsewhere(w.record)
                if changed:
                    self.store.write(w.record)
                    self._emit(w.record)
                if w.record["state"] in FINAL_STATES and self.watches.get(w.record["name"]) is w:
                    del self.watches[w.record["name"]]
                    w.close()

    def _stopped_elsewhere(self, record):
        """A server this agent saw die that another agent was stopping (or stopped): ``stopped``, not a crash."""
        stored = self.store.read(record["name"])
        if (stored and stored.get("pid") == record.get("pid") and stored.get("start_ticks") == record.get("start_ticks")
                and stored.get("state") in ("stopping", "stopped")):
            record.update(state="stopped", reason=stored.get("reason"), ended_at=stored.get("ended_at") or time.time())
            record.pop("log_tail", None)
            if stored.get("stop"):
                record["stop"] = stored["stop"]

    def serving(self):
        """{name: record} of the servers this agent watches (copies, safe to read)."""
        with self._lock:
            return dict((name, dict(w.record)) for name, w in self.watches.items())

    def close(self):
        self._stop.set()

    def _current(self, name):
        w = self.watches.get(name)
        return w.record if w is not None else self.store.read(name)

    def list(self, params=None):
        self.adopt()
        self.poll_all()
        with self._lock:
            known = dict((w.record["name"], w.record) for w in self.watches.values())
        out = []
        for r in self.store.read_all():
            out.append(view(known.get(r["name"], r)))
        return {"servers": out}

    # --- GPUs --------------------------------------------------------------------------
    def _managed_pids(self):
        pids = set()
        for r in self.store.read_all():
            if r.get("pgid"):
                pids.update(group_pids(r["pgid"]))
        return pids

    def _gpu_processes(self, indices):
        """{gpu index: [pids]} for the given GPUs, or None when the source cannot list them."""
        src = self.gpu_source()
        if src.name == "none":
            return None
        out = {}
        for g in src.sample():
            if indices is None or g["index"] in indices:
                if g.get("processes") is None:
                    return None
                out[g["index"]] = [p["pid"] for p in g["processes"]]
        return out

    def foreign_gpu_users(self, gpus):
        procs = self._gpu_processes(set(gpus))
        if procs is None:
            return {}
        mine = self._managed_pids()
        return dict((i, [p for p in pids if p not in mine]) for i, pids in procs.items()
                    if any(p not in mine for p in pids))

    def wait_gpu_release(self, pids, gpus, timeout=RELEASE_TIMEOUT_S):
        """Wait until none of ``pids`` holds memory on any GPU; returns (released, seconds, how)."""
        t0 = time.monotonic()
        src = self.gpu_source()
        if src.name == "none":
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
        name = params["name"]
        argv = [str(a) for a in params["argv"]]
        host = params.get("host") or "127.0.0.1"
        port = int(params["port"])
        gpus = [int(g) for g in params.get("gpus") or []]
        if not self._adopted:
            self.adopt()
        with self.store.lock():
            self.adopt()  # another agent may have started or stopped something
            current = self._current(name)
            if current is not None and current.get("state") in LIVE_STATES and alive(current["pid"]):
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
                raise AgentError("port_in_use", "port %d on the host is in use by a program spectui did not start; "
                                 "stop it or set another port in the profile" % port)
            foreign = self.foreign_gpu_users(gpus)
            if foreign and not params.get("force"):
                desc = "; ".join("GPU %d: pid %s" % (i, ", ".join(map(str, p))) for i, p in sorted(foreign.items()))
                raise AgentError("gpus_busy", "GPUs are in use by processes spectui did not start (%s); "
                                 "stop them, or use --force" % desc)
            try:
                env = expand_env(params.get("env") or {})
            except LaunchError as exc:
                raise AgentError("env", str(exc))
            if self.simulated:
                env["SPECTUI_STATE_DIR"] = self.state_dir
            log_path = self.store.rotate_log(name)
            try:
                popen = spawn(argv, env, log_path, cwd=params.get("cwd"))
            except LaunchError as exc:
                raise AgentError("launch", str(exc))
            st = proc_stat(popen.pid)
            record = {
                "name": name, "state": "starting", "pid": popen.pid, "pgid": popen.pid,
                "start_ticks": st[3] if st else None, "host": host, "port": port, "gpus": gpus,
                "profile_hash": params.get("profile_hash"), "profile": params.get("profile"),
                "argv": argv, "env_keys": sorted((params.get("env") or {}).keys()),
                "started_at": time.time(), "ready_at": None, "ended_at": None, "progress": None,
                "reason": None, "log_path": log_path, "unresponsive_after_s": float(
                    params.get("unresponsive_after_s") or 20.0),
            }
            self.store.write(record)
            with self._lock:
                self.watches[name] = ServerWatch(record, log_path, popen=popen)
        self._emit(record)
        self._ensure_monitor()
        return view(record)

    def wait(self, params):
        """Block until the server reaches one of ``states`` (default: ready or an ending)."""
        name = params["name"]
        states = params.get("states") or ["ready", "failed", "crashed", "stopped", "unresponsive"]
        deadline = time.monotonic() + float(params.get("timeout_s") or READY_TIMEOUT_S)
        while True:
            r = self._current(name)
            if r is None:
                raise AgentError("unknown_server", "no server named %s on this host" % name)
            if r.get("state") in states:
                return view(r)
            if time.monotonic() >= deadline:
                return dict(view(r), timed_out=True)
            time.sleep(0.1)

    # --- stop ------------------------------------------------------------------------------
    def stop(self, params, on_stage=None, switching_to=None):
        """Stop a server; ``on_stage(label)`` hears when the wait for GPU memory begins. A server that a live
        benchmark run measures is refused (``server_benchmarked``) unless ``stop_benchmark``: then the run is
        cancelled first. ``switching_to``: the switch this stop is part of (for the sentences)."""
        name = params["name"]
        grace = float(params.get("grace_s") or DEFAULT_GRACE_S)
        if not self._adopted:
            self.adopt()
        with self.store.lock():
            with self._lock:
                w = self.watches.get(name)
            r = w.record if w is not None else self.store.read(name)
            if r is None:
                raise AgentError("unknown_server", "no server named %s on this host" % name)
            pgid = r.get("pgid")
            pids = set(group_pids(pgid)) if pgid else set()
            if r.get("pid"):
                pids.add(r["pid"])
            if not group_pids(pgid or -1) and r.get("state") in FINAL_STATES:
                return dict(view(r), already_stopped=True)
            with self._bench_lock():  # no run starts on it between the check and "stopping"
                live = self._measured_by(r)
                if not params.get("stop_benchmark"):
                    self._refuse_if_measured(r, live, switching_to)
                prior = r.get("state")
                r["state"] = "stopping"
                self.store.write(r)
            self._emit(r)
            cancelled = self._cancel_runs(name, live, switching_to)
            exit_s, killed, left = terminate_group(pgid, grace, reap=w.reap if w is not None else None)
            if left:
                raise AgentError("stop_failed", "processes %s of %s are still alive after SIGKILL"
                                 % (", ".join(map(str, left)), name))
            if on_stage is not None:
                on_stage("waiting for GPU memory")
            released, release_s, how = self.wait_gpu_release(pids, r.get("gpus"))
            r["state"] = "stopped" if prior not in ("failed", "crashed") else prior
            r["ended_at"] = r.get("ended_at") or time.time()
            r["stop"] = {"exit_s": round(exit_s, 3), "killed": killed, "gpu_released": released,
                         "release_s": round(release_s, 3), "release_check": how, "pids": sorted(pids)}
            self.store.write(r)
            with self._lock:
                if w is not None and self.watches.get(name) is w:
                    self.watches.pop(name, None)
                    w.close()
        self._emit(r)
        return dict(view(r), benchmarks_cancelled=cancelled) if cancelled else view(r)

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
        """Stop whatever holds the target's GPUs or port, wait for release, start it, wait for ready."""
        name = params["name"]
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
        if (current is not None and current.get("state") == "ready" and alive(current["pid"])
                and current.get("profile_hash") == params.get("profile_hash")):
            stage("ready", "already running")
            return {"server": view(current), "stages": stages, "total_s": 0.0, "already_running": True}
        holders = [r for r in self.store.read_all()
                   if (r["name"] == name or int(r.get("port") or 0) == port or gpus & set(r.get("gpus") or []))
                   and r.get("pgid") and group_pids(r["pgid"])]
        if not params.get("stop_benchmark"):  # before stopping any: each stop checks again under the lock
            for r in holders:
                self._refuse_if_measured(r, self._measured_by(r), name)
        cancelled = []
        for r in holders:
            stage("stopping", r["name"])
            res = self.stop({"name": r["name"], "grace_s": params.get("grace_s"),
                             "stop_benchmark": params.get("stop_benchmark")},
                            on_stage=lambda label, n=r["name"]: stage(label, n), switching_to=name)
            cancelled += res.get("benchmarks_cancelled") or []
            stop = res.get("stop") or {}
            stages.append({"stage": "stopping", "detail": r["name"], "seconds": stop.get("exit_s", 0.0)})
            stages.append({"stage": "waiting for GPU memory", "detail": r["name"],
                           "seconds": stop.get("release_s", 0.0)})
            stage("stopped", r["name"], None)
        t = time.monotonic()
        stage("starting")
        self.start(params)
        stage("started", None, time.monotonic() - t)
        t = time.monotonic()
        last_pct = None
        deadline = time.monotonic() + float(params.get("timeout_s") or READY_TIMEOUT_S)
        while True:
            r = self._current(name)
            state = r.get("state")
            pct = (r.get("progress") or {}).get("percent")
            if state == "loading" and pct != last_pct:
                last_pct = pct
                stage("loading", r.get("progress"))
            if state in ("ready", "failed", "crashed", "stopped", "unresponsive"):
                break
            if time.monotonic() >= deadline:
                state = "timeout"
                break
            time.sleep(0.1)
        stage(state, r.get("reason"), time.monotonic() - t)
        out = {"server": view(r), "stages": stages, "total_s": round(time.monotonic() - t_all, 3)}
        if cancelled:
            out["benchmarks_cancelled"] = cancelled
        return out

    # --- logs ------------------------------------------------------------------------------
    def logs(self, params):
        """The last ``lines`` lines (``offset`` absent), or what was written after ``offset``."""
        name = params["name"]
        path = self.store.log_path(name)
        if not os.path.exists(path):
            raise AgentError("no_log", "there is no log for %s on this host" % name)
        size = os.path.getsize(path)
        offset = params.get("offset")
        with open(path, "rb") as fh:
            if offset is None:
                lines = int(params.get("lines") or 40)
                start = max(0, size - max(65536, lines * 400))
                fh.seek(start)
                data = fh.read()
                text = data.decode("utf-8", "replace").splitlines()[-lines:] if lines > 0 else []
                return {"lines": text, "offset": size, "reset": False}
            reset = offset > size
            fh.seek(0 if reset else offset)
            data = fh.read(1024 * 1024)
        cut = data.rfind(b"\n") + 1  # whole lines only
        return {"lines": data[:cut].decode("utf-8", "replace").splitlines(),
                "offset": (0 if reset else offset) + cut, "reset": reset}
