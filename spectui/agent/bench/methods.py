"""Benchmark methods of the agent: start a detached runner, read its results, watch it.

* ``bench.start``: write ``<state>/bench/<run_id>/spec.json`` and start ``bench.runner`` detached
  (it outlives this agent and the SSH connection); progress events follow. One benchmark per
  server at a time: a start against a server (same name, or same address and port) that a live
  run already measures is refused (``bench_busy``, one sentence naming that run) unless
  ``allow_overlap`` is set; then both runs are marked ``overlapped_with`` each other. A lock
  file (``<state>/bench/.lock``) serialises starts between agents (two consoles, a console and
  the CLI), and liveness is read from the run folders (``launch.json``: the runner's pid and
  start time), not from this agent's memory.
* ``bench.status`` / ``bench.list``: a run's (or every run's) ``status.json``, with
  ``overlapped_with`` (the runs it shared its server with); a run whose process is gone before
  it finished is marked ``interrupted`` here.
* ``bench.results``: the per-request records from a byte ``offset`` (whole lines), the status
  and, once finished, ``summary.json``: a client that lost its connection asks again from the
  offset it had, so nothing is lost or read twice.
* ``require_idle`` (``bench.start``): refused (``server_busy``, one sentence) while the server runs or queues
  requests spectui did not send (its ``/metrics`` against this agent's demo traffic and the live runs'
  requests in flight), seen again a few times over about two seconds so that a count the server has not
  updated yet refuses nothing. A run always reports the foreign load it measured (``bench.foreign``).
* ``bench.cancel``: SIGTERM the runner and wait for it to write its ending (``reason``, when given, is
  the one the run ends with, written to ``cancel.json`` for the runner to read).
* Servers: a stop or switch (``servers.manager``) that would stop a server a live run measures is
  refused (``server_benchmarked``) unless told to stop it anyway; :meth:`BenchHost.measuring` finds
  those runs the way a start does, and the start re-reads the server's record under the lock, so a
  server being stopped is never benchmarked.
* ``bench.watch``: ``bench_progress`` events (requests done, live tok/s and accept length, ETA, the finished
  requests' pooled correct-drafts histograms, proposed drafts and verify steps)
  about twice a second while the run goes on and a client is connected.
* ``bench.engines``: which of ``sglang.benchmark.serving`` / ``sglang.bench_serving`` a Python has.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time

from .datasets import DatasetFileError, load_file_prompts
from .foreign import read_load
from .runner import read_json, write_json
from ..bootstrap import spawn_detached
from ..protocol import BENCH_BUSY, BENCH_FINAL_STATES, OWN_ORIGINS, AgentError, Method, ServerState
from ..servers.proc_table import cmdline
from ..servers.process import api_key_in, connect_host, proc_stat
from ..servers.records import FileLock

RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,80}$")
RESULTS_MAX_BYTES = 2 * 1024 * 1024
SGLANG_MODULES = ("sglang.benchmark.serving", "sglang.bench_serving")
STARTING_GRACE_S = 60.0  # a run folder without a runner pid counts as starting this long
SERVER_BUSY = "server_busy"
NAMED_LOOK_S = 10.0      # how long a benchmark of a named server not yet seen waits for the records to be free
IDLE_LOOKS = 3          # --require-idle: a server is busy only when every look sees foreign requests ...
IDLE_LOOK_EVERY_S = 1.0  # ... this far apart
LOCAL_HOSTS = ("", "0.0.0.0", "::", "127.0.0.1", "::1", "localhost")


def _new_run_id():
    return time.strftime("%Y%m%d-%H%M%S") + "-" + os.urandom(3).hex()


class BenchHost(object):
    """The runs in one state folder, as seen by this agent."""

    def __init__(self, agent):
        self.agent = agent
        self.root = os.path.join(agent.state_dir, "bench")
        self.procs = {}
        self.watchers = {}
        self._ended = set()  # run ids seen finished: a live-run scan skips their folders
        self._lock = threading.Lock()
        self.start_lock = FileLock(os.path.join(self.root, ".lock"), self._ensure_root)

    def _ensure_root(self):
        if not os.path.isdir(self.root):
            os.makedirs(self.root, exist_ok=True)

    # --- paths and liveness ----------------------------------------------------------------
    def run_dir(self, run_id):
        if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id):
            raise AgentError("bad_params", "%r is not a benchmark run id" % (run_id,))
        d = os.path.join(self.root, run_id)
        if not os.path.isdir(d):
            raise AgentError("unknown_run", "there is no benchmark run %s on this host" % run_id)
        return d

    def _reap(self):
        for run_id, proc in list(self.procs.items()):
            if proc.poll() is not None:
                self.procs.pop(run_id, None)

    def status(self, run_id, d=None):
        """The run's status, settled: a dead runner that never finished is ``interrupted``."""
        d = d or self.run_dir(run_id)
        self._reap()
        st = read_json(os.path.join(d, "status.json"))
        if st is None:
            st = self._not_started(run_id, d)
            if st is None:  # the runner wrote its status meanwhile: settle that one
                st = read_json(os.path.join(d, "status.json"), {}) or {}
            else:
                return self._with_overlaps(st, d)
        if st.get("state") not in BENCH_FINAL_STATES:
            pid = st.get("pid")
            ps = proc_stat(pid) if pid else None
            gone = ps is None or ps[0] in ("Z", "X") or (
                st.get("start_ticks") is not None and ps[3] != st.get("start_ticks"))
            if gone:
                self._reap()
                st = read_json(os.path.join(d, "status.json"), st)  # it may have finished meanwhile
                if st.get("state") not in BENCH_FINAL_STATES:
                    st["state"] = "interrupted"
                    st["reason"] = "the benchmark process ended before the run finished (killed, or the host restarted)"
                    st["ended_at"] = st.get("ended_at") or time.time()
                    write_json(os.path.join(d, "status.json"), st)
        return self._with_overlaps(st, d)

    def _not_started(self, run_id, d):
        """The status of a run whose runner has not written one yet: ``starting``, or ``interrupted`` when
        the runner is gone (its pid from ``launch.json``; without one, after ``STARTING_GRACE_S``);
        ``None`` when the runner wrote its status meanwhile."""
        spec = read_json(os.path.join(d, "spec.json"), {}) or {}
        launch = read_json(os.path.join(d, "launch.json")) or {}
        proc = self.procs.get(run_id)
        pid = launch.get("pid") or (proc.pid if proc is not None else None)
        st = {"run_id": run_id, "state": "starting", "pid": pid, "labels": spec.get("labels") or {},
              "created_at": spec.get("created_at"), "server": (spec.get("server") or {}).get("name"),
              "overlapped_with": list(spec.get("overlapped_with") or [])}
        if launch.get("pid"):
            gone = not _same_process(launch["pid"], launch.get("start_ticks"))
        else:  # a folder another agent is filling has no spec yet: its own time says how old it is
            created = spec.get("created_at") or _mtime(d)
            gone = time.time() - created > STARTING_GRACE_S and run_id not in self.procs
        if not gone:
            return st
        self._reap()
        if os.path.exists(os.path.join(d, "status.json")):
            return None
        st.update(state="interrupted", reason="the benchmark process ended before it started the run (see runner.log "
                                              "in the run's folder)", ended_at=time.time())
        write_json(os.path.join(d, "status.json"), st)
        return st

    @staticmethod
    def _with_overlaps(st, d):
        """``st`` with ``overlapped_with``: the runs the spec named at start, and those that started later
        against the same server while this one was live (``overlaps.json``, written by their starts)."""
        ids = set(st.get("overlapped_with") or [])
        ids.update(read_json(os.path.join(d, "overlaps.json"), []) or [])
        st = dict(st)
        st["overlapped_with"] = sorted(i for i in ids if isinstance(i, str))
        return st

    # --- one benchmark per server ----------------------------------------------------------------
    def _target(self, d):
        """Where a run sends its requests: ``{name, host, port}`` (from ``launch.json``, else its spec)."""
        launch = read_json(os.path.join(d, "launch.json"))
        if launch and launch.get("server"):
            return launch["server"]
        return (read_json(os.path.join(d, "spec.json"), {}) or {}).get("server") or {}

    def live_runs(self, server):
        """The runs whose runner is alive and that measure ``server`` (same name, or same address and
        port), oldest first, as ``(status, target)``; settles the dead ones on the way."""
        try:
            names = sorted(os.listdir(self.root))
        except OSError:
            return []
        out = []
        for name in names:
            d = os.path.join(self.root, name)
            if name in self._ended or not RUN_ID_RE.match(name) or not os.path.isdir(d):
                continue
            st = self.status(name, d)
            if st.get("state") in BENCH_FINAL_STATES:
                self._ended.add(name)
                continue
            target = self._target(d)
            if same_server(server, target):
                out.append((st, target))
        return out

    def _refuse_if_busy(self, server, live):
        if live:
            raise AgentError(BENCH_BUSY, busy_sentence(server, live))

    def measuring(self, record):
        """The live runs (started by any agent on this host) that measure the server of ``record`` (a
        server record: name, host, port), oldest first, as ``(status, target)``."""
        return self.live_runs({"name": record.get("name"), "host": record.get("host"), "port": record.get("port")})

    def _refuse_if_served(self, server):
        """``require_idle``: refuse while the server runs or queues requests spectui did not send."""
        who = "server %s" % server["name"] if server.get("name") else "the server at %s:%s" % (
            server.get("host"), server.get("port"))
        for look in range(IDLE_LOOKS):
            if look:
                time.sleep(IDLE_LOOK_EVERY_S)
            try:
                running, queued = read_load(server.get("connect_host"), server["port"])
            except ValueError as exc:
                raise AgentError(SERVER_BUSY, "%s cannot be checked for requests spectui did not send (%s); "
                                 "start without --require-idle to benchmark it anyway" % (who, exc))
            traffic = getattr(self.agent, "traffic", None)
            ours = self.in_flight(server) + (traffic.in_flight_to(server["name"]) if traffic and server.get("name")
                                             else 0)
            foreign = running + queued - ours
            if foreign <= 0:
                return
        raise AgentError(SERVER_BUSY, "%s is serving %d request%s not sent by spectui (%d running, %d queued, %d of "
                         "them spectui's), so a benchmark would share it; --require-idle refuses to start until it "
                         "is idle: wait, or start without --require-idle and its figures are marked with the "
                         "foreign load measured" % (who, foreign, "" if foreign == 1 else "s", running, queued, ours))

    def in_flight(self, record):
        """Requests the live runs measuring ``record``'s server have in flight (warm-up included), as their
        runners last wrote it."""
        return sum(int(st.get("in_flight") or 0) for st, _ in self.measuring(record))

    @staticmethod
    def sentence(name, live, switching_to=None):
        """Why a stop of server ``name`` (or a switch to ``switching_to``) is refused (:func:`benchmarked_sentence`)."""
        return benchmarked_sentence(name, live, switching_to)

    def _still_ready(self, server):
        """Under the start lock: a named server that a stop began on meanwhile is not benchmarked."""
        name = server.get("name")
        rec = self.agent.servers.caught_up(name) if name else None
        if rec is not None and rec.get("state") != ServerState.READY:
            raise AgentError("not_ready", "server %s is %s, not ready: start it first" % (name, rec.get("state")))

    # --- methods ---------------------------------------------------------------------------------
    def start(self, params):
        spec = dict(params["spec"])
        engine = spec.get("engine") or "spectui"
        if engine not in ("spectui", "sglang"):
            raise AgentError("bad_params", "unknown benchmark engine %r (spectui or sglang)" % engine)
        server = self._server(params)
        spec["server"] = server
        spec["engine"] = engine
        if server.get("api_key"):
            spec["headers"] = {"Authorization": "Bearer " + server.pop("api_key")}
        allow_overlap = bool(params.get("allow_overlap"))
        if not allow_overlap:
            self._refuse_if_busy(server, self.live_runs(server))  # at once, before the slower checks below
        if params.get("require_idle"):
            self._refuse_if_served(server)
        if engine == "sglang":
            spec["sglang"] = self._sglang_argv(spec, server)
        elif spec.get("dataset_file") and not spec.get("prompts"):
            try:  # said at once, before a run directory exists
                load_file_prompts(spec["dataset_file"])
            except DatasetFileError as e:
                raise AgentError("bad_dataset", str(e))
        elif not spec.get("prompts"):
            raise AgentError("bad_params", "the benchmark has no prompts")
        with self.start_lock:  # the check and the start are one step for every agent on this host
            self._still_ready(server)
            live = self.live_runs(server)
            if not allow_overlap:
                self._refuse_if_busy(server, live)
            others = [st["run_id"] for st, _ in live]
            run_id = _new_run_id()
            d = os.path.join(self.root, run_id)
            os.makedirs(d)
            spec["run_id"] = run_id
            spec["created_at"] = time.time()
            spec["overlapped_with"] = others
            write_json(os.path.join(d, "spec.json"), spec)
            try:
                proc = spawn_detached("bench.runner", [d], os.path.join(d, "runner.log"))
            except OSError as exc:
                write_json(os.path.join(d, "status.json"), {
                    "run_id": run_id, "state": "failed", "pid": None, "labels": spec.get("labels") or {},
                    "created_at": spec["created_at"], "ended_at": time.time(), "server": server.get("name"),
                    "reason": "the benchmark process could not start (%s)" % exc})
                raise AgentError("launch", "the benchmark process could not start: %s" % exc)
            ps = proc_stat(proc.pid)
            write_json(os.path.join(d, "launch.json"), {
                "run_id": run_id, "pid": proc.pid, "start_ticks": ps[3] if ps else None,
                "created_at": spec["created_at"],
                "server": dict((k, server.get(k)) for k in ("name", "host", "port", "connect_host"))})
            with self._lock:
                self.procs[run_id] = proc
            for other in others:  # the earlier runs learn of this one too
                _add_overlap(os.path.join(self.root, other), run_id)
        if params.get("watch", True):
            self.watch({"run_id": run_id, "interval_s": params.get("interval_s", 0.5)})
        return {"run_id": run_id, "pid": proc.pid, "dir": d, "server": dict(server, argv=server.get("argv")),
                "engine": engine, "sglang_argv": (spec.get("sglang") or {}).get("argv"), "overlapped_with": others}

    def _named(self, name):
        """The record of server ``name`` as the host's servers are known now, or None."""
        rec = None
        for r in self.agent.servers.list({})["servers"]:
            if r["name"] == name:
                rec = r
        return rec

    def _server(self, params):
        """The server to benchmark: a named one this host runs, or an explicit port."""
        name = params.get("server")
        if name:
            rec = self._named(name)
            looked = True
            if rec is None:
                # a fresh agent's first look for servers started outside spectui is skipped while another agent
                # holds the records (its start or stop): a server named here is looked for once they are free
                looked = self.agent.servers.discover(within_s=NAMED_LOOK_S)
                rec = self._named(name) if looked else None
            if rec is None:
                raise AgentError("unknown_server", "no server named %s on this host" % name + (
                    "" if looked else " that spectui knows of: another spectui start or stop held the host's "
                    "records for %d s, so servers started outside spectui were not looked for; try again" % NAMED_LOOK_S))
            if rec.get("state") != ServerState.READY and rec.get("origin") in OWN_ORIGINS:
                rec = dict(rec, **(self.agent.servers.caught_up(name) or {}))
            if rec.get("state") != ServerState.READY:
                raise AgentError("not_ready", "server %s is %s, not ready: start it first" % (name, rec.get("state")))
            argv = rec.get("argv") or []
            host = rec.get("host") or "127.0.0.1"
            out = {"name": name, "host": host, "port": rec["port"], "argv": argv, "pid": rec.get("pid"),
                   "profile_hash": rec.get("profile_hash"), "python": argv[0] if argv else None,
                   "model": _flag(argv, "--model-path") or _flag(argv, "--model") or rec.get("model"),
                   "origin": rec.get("origin")}
            # the key the server got: its command line now (a record keeps ${VAR} or a masked value, never the key)
            key = api_key_in(cmdline(rec["pid"]) or []) if rec.get("pid") else None
            if key:
                out["api_key"] = key
        elif params.get("port"):
            host = params.get("host") or "127.0.0.1"
            out = {"name": None, "host": host, "port": int(params["port"]), "argv": None, "python": params.get("python")}
        else:
            raise AgentError("bad_params", "say which server to benchmark (a server name or a port)")
        h = out["host"]
        out["connect_host"] = connect_host(h)
        return out

    def _sglang_argv(self, spec, server):
        sg = dict(spec.get("sglang") or {})
        python = sg.get("python") or server.get("python")
        if not python:
            raise AgentError("bad_params", "which Python has sglang? give the server's name or a python path")
        found = engines(python)
        if not found["module"]:
            raise AgentError("no_sglang_bench", "%s has neither sglang.benchmark.serving nor sglang.bench_serving; "
                             "use the spectui engine" % python)
        help_text = found.get("help") or ""
        argv = [python, "-m", found["module"], "--backend", "sglang", "--host", server["connect_host"],
                "--port", str(server["port"]), "--dataset-name", "random",
                "--num-prompts", str(int(sg["num_prompts"])), "--random-input-len", str(int(sg["input_len"])),
                "--random-output-len", str(int(sg["output_len"]))]
        if spec.get("concurrency"):
            argv += ["--max-concurrency", str(int(spec["concurrency"]))]
        if spec.get("request_rate"):
            argv += ["--request-rate", repr(float(spec["request_rate"]))]
        optional = [("--random-range-ratio", ["1.0"]), ("--seed", [str(int(spec.get("seed") or 0))]),
                    ("--warmup-requests", [str(int(sg.get("warmup") or 0))]), ("--output-details", []),
                    ("--model", [server.get("model")] if server.get("model") else None)]
        for flag, values in optional:
            if values is not None and re.search(r"(^|\s)%s(\s|,|=|$)" % re.escape(flag), help_text):
                argv += [flag] + values
        sg.update(python=python, module=found["module"], argv=argv, flush_first=True)
        return sg

    def status_method(self, params):
        return self.status(params["run_id"])

    def list(self, params):
        limit = int(params.get("limit") or 200)
        out = []
        try:
            names = sorted(os.listdir(self.root), reverse=True)
        except OSError:
            names = []
        for name in names:
            d = os.path.join(self.root, name)
            if RUN_ID_RE.match(name) and os.path.isdir(d):
                out.append(self.status(name, d))
            if len(out) >= limit:
                break
        return {"runs": out}

    def results(self, params):
        run_id = params["run_id"]
        d = self.run_dir(run_id)
        st = self.status(run_id, d)  # read before the records: a final status means every record is written
        offset = int(params.get("offset") or 0)
        max_bytes = int(params.get("max_bytes") or RESULTS_MAX_BYTES)
        path = os.path.join(d, "requests.jsonl")
        records = []
        new_offset = offset
        try:
            with open(path, "rb") as fh:
                fh.seek(offset)
                data = fh.read(max_bytes)
        except OSError:
            data = b""
        cut = data.rfind(b"\n") + 1
        for line in data[:cut].splitlines():
            if line.strip():
                try:
                    records.append(json.loads(line.decode("utf-8")))
                except ValueError:
                    pass
        new_offset = offset + cut
        size = os.path.getsize(path) if os.path.exists(path) else 0
        complete = st.get("state") in BENCH_FINAL_STATES and new_offset >= size
        out = {"run_id": run_id, "status": st, "records": records, "offset": new_offset, "complete": complete,
               "summary": None, "spec": None}
        if complete:
            out["summary"] = read_json(os.path.join(d, "summary.json"))
            if params.get("spec", True):
                spec = read_json(os.path.join(d, "spec.json"), {}) or {}
                spec.pop("prompts", None)
                spec.pop("warmup_prompts", None)
                spec.pop("headers", None)
                out["spec"] = spec
            sg = os.path.join(d, "sglang.jsonl")
            if os.path.exists(sg):
                with open(sg, "rb") as fh:
                    out["sglang_jsonl"] = fh.read(RESULTS_MAX_BYTES).decode("utf-8", "replace")
        return out

    def cancel(self, params):
        run_id = params["run_id"]
        d = self.run_dir(run_id)
        st = self.status(run_id, d)
        if st.get("state") in BENCH_FINAL_STATES:
            return dict(st, already_finished=True)
        if params.get("reason"):
            write_json(os.path.join(d, "cancel.json"), {"reason": str(params["reason"])})
        pid = st.get("pid")
        ps = proc_stat(pid) if pid else None
        if ps is not None and (st.get("start_ticks") is None or ps[3] == st.get("start_ticks")):
            try:
                os.kill(pid, signal.SIGTERM)
            except OSError:
                pass
        deadline = time.monotonic() + float(params.get("wait_s") or 15.0)
        while time.monotonic() < deadline:
            st = self.status(run_id, d)
            if st.get("state") in BENCH_FINAL_STATES:
                return st
            time.sleep(0.1)
        ps = proc_stat(pid) if pid else None
        if ps is not None and (st.get("start_ticks") is None or ps[3] == st.get("start_ticks")):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.2)
        return self.status(run_id, d)

    def watch(self, params):
        run_id = params["run_id"]
        d = self.run_dir(run_id)
        interval = max(0.1, float(params.get("interval_s") or 0.5))
        with self._lock:
            w = self.watchers.get(run_id)
            if w is not None and w.alive():
                return {"watching": True, "run_id": run_id}
            w = self.watchers[run_id] = Watcher(self, run_id, d, interval)
        w.start()
        return {"watching": True, "run_id": run_id}

    def close(self):
        with self._lock:
            for w in self.watchers.values():
                w.stop()


def _mtime(path):
    try:
        return os.path.getmtime(path)
    except OSError:
        return 0.0


def _same_process(pid, start_ticks):
    ps = proc_stat(pid) if pid else None
    return ps is not None and ps[0] not in ("Z", "X") and (start_ticks is None or ps[3] == start_ticks)


def _address(host):
    h = (host or "").strip().lower()
    return "this host" if h in LOCAL_HOSTS else connect_host(h)


def same_server(a, b):
    """Whether two benchmark targets are one server: the same name, or the same address and port."""
    if a.get("name") and a.get("name") == b.get("name"):
        return True
    try:
        same_port = int(a.get("port")) == int(b.get("port"))
    except (TypeError, ValueError):
        return False
    return same_port and _address(a.get("host")) == _address(b.get("host"))


def _ago(seconds):
    s = max(0, int(round(seconds)))
    if s < 90:
        return "%d s" % s
    if s < 5400:
        return "%d min" % round(s / 60.0)
    return "%d h %d min" % (s // 3600, (s % 3600) // 60)


def _runs_phrase(live, now):
    """``run ID (preset P, started N s ago)``, plus how many other runs measure the server too."""
    st, _ = live[0]
    bits = []
    preset = (st.get("labels") or {}).get("preset")
    if preset:
        bits.append("preset %s" % preset)
    started = st.get("started_at") or st.get("created_at")
    if started:
        bits.append("started %s ago" % _ago(now - started))
    run = "run %s" % st["run_id"] + (" (%s)" % ", ".join(bits) if bits else "")
    if len(live) > 1:
        run += " and %d other run%s" % (len(live) - 1, "" if len(live) == 2 else "s")
    return run


def busy_sentence(server, live, now=None):
    """Why a start is refused, naming the run that measures the server already, and what to do."""
    now = time.time() if now is None else now
    st, _ = live[0]
    if server.get("name"):
        who = "server %s" % server["name"]
    else:
        who = "the server at %s:%s" % (server.get("host"), server.get("port"))
    return ("%s is already being benchmarked by %s; wait for it to end, cancel it (spectui bench --cancel %s, or c "
            "on the benchmark screen of the console running it), or pass --allow-overlap to measure both at once"
            % (who, _runs_phrase(live, now), st["run_id"]))


def benchmarked_sentence(name, live, switching_to=None, now=None):
    """Why a stop (or a switch to ``switching_to``) of server ``name`` is refused: the run that measures it,
    and what to do."""
    now = time.time() if now is None else now
    st, _ = live[0]
    one = len(live) == 1
    run = "the run" if one else "the runs"
    if one:
        cancel = "cancel it (spectui bench --cancel %s)" % st["run_id"]
    else:
        cancel = "cancel them (spectui bench --cancel RUN_ID for each of %s)" % ", ".join(s["run_id"] for s, _ in live)
    if switching_to:
        doing = "switching to %s would stop it and cut %s short" % (switching_to, run)
        anyway = "switch anyway with spectui servers switch %s --stop-benchmark" % switching_to
    else:
        doing = "stopping it would cut %s short" % run
        anyway = "stop it anyway with spectui servers stop %s --stop-benchmark" % name
    return ("server %s is being benchmarked by %s, and %s; wait for %s to end, %s, or %s (%s then end%s "
            "interrupted)" % (name, _runs_phrase(live, now), doing, run, cancel, anyway, run, "s" if one else ""))


def _add_overlap(run_dir, run_id):
    """Record in an earlier run's folder that ``run_id`` measured its server while it ran (under the start lock)."""
    path = os.path.join(run_dir, "overlaps.json")
    ids = read_json(path, []) or []
    if run_id not in ids:
        try:
            write_json(path, sorted(set(ids) | {run_id}))
        except OSError:
            pass  # the earlier run's folder went away: nothing to mark


def _flag(argv, name):
    for i, a in enumerate(argv or []):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def engines(python):
    """Which SGLang serving benchmark ``python`` can run, and its ``--help`` (to know its flags)."""
    code = ("import importlib.util as u, sys\n"
            "for m in %r:\n"
            "    try:\n"
            "        if u.find_spec(m) is not None:\n"
            "            print(m); break\n"
            "    except Exception:\n"
            "        pass\n" % (SGLANG_MODULES,))
    try:
        out = subprocess.run([python, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"python": python, "module": None, "message": "cannot run %s (%s)" % (python, exc)}
    module = out.stdout.decode("utf-8", "replace").strip() or None
    result = {"python": python, "module": module, "message": None if module else
              "%s has neither %s" % (python, " nor ".join(SGLANG_MODULES))}
    if module:
        try:
            h = subprocess.run([python, "-m", module, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=120)
            result["help"] = h.stdout.decode("utf-8", "replace")
        except (OSError, subprocess.TimeoutExpired):
            result["help"] = ""
    return result


def pool_positions(pooled, spec):
    """``pooled`` (``None`` or an earlier result) with one finished request's ``spec`` figures added: its
    correct-drafts histogram index by index (histograms differ in length: each is as long as the most
    correct drafts one of its verify steps had), its proposed drafts and verify steps, and its width
    (proposed drafts / verify steps) among ``widths``. The figures a ``bench_progress`` event carries as
    ``positions``; the client turns them into P(accept) by position. A histogram that is not a list of
    counts is left out."""
    try:
        counts = [int(n) for n in spec["histogram"]]
        proposed, verify = int(spec.get("proposed_drafts") or 0), int(spec.get("verify_ct") or 0)
    except (TypeError, ValueError):
        return pooled
    out = pooled or {"histogram": [], "proposed_drafts": 0, "verify_ct": 0, "requests": 0, "widths": []}
    hist = out["histogram"] + [0] * (len(counts) - len(out["histogram"]))
    for i, n in enumerate(counts):
        hist[i] += n
    widths = set(out["widths"])
    if proposed and verify:
        widths.add(proposed // verify)
    return {"histogram": hist, "proposed_drafts": out["proposed_drafts"] + proposed,
            "verify_ct": out["verify_ct"] + verify, "requests": out["requests"] + 1, "widths": sorted(widths)}


class Watcher(object):
    """Emits ``bench_progress`` for one run until it ends or the client goes away."""

    def __init__(self, host, run_id, run_dir, interval_s):
        self.host = host
        self.run_id = run_id
        self.dir = run_dir
        self.interval_s = interval_s
        self.offset = 0
        self.done = 0
        self.errors = 0
        self.tokens = 0
        self.spec_tokens = 0
        self.verify = 0
        self.positions = None  # the pooled spec figures of the ok requests with a histogram (pool_positions)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-watch-%s" % run_id)
        self._thread.daemon = True

    def start(self):
        self._thread.start()

    def alive(self):
        return self._thread.is_alive()

    def stop(self):
        self._stop.set()

    def _read(self):
        path = os.path.join(self.dir, "requests.jsonl")
        try:
            with open(path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except OSError:
            return
        cut = data.rfind(b"\n") + 1
        self.offset += cut
        for line in data[:cut].splitlines():
            try:
                rec = json.loads(line.decode("utf-8"))
            except ValueError:
                continue
            if rec.get("cancelled"):
                continue
            self.done += 1
            if not rec.get("ok"):
                self.errors += 1
                continue
            self.tokens += rec.get("output_tokens") or 0
            sp = rec.get("spec")
            if sp and sp.get("verify_ct"):
                self.verify += sp["verify_ct"]
                self.spec_tokens += rec.get("output_tokens") or 0
            if sp and sp.get("histogram"):
                self.positions = pool_positions(self.positions, sp)

    def progress(self):
        st = self.host.status(self.run_id, self.dir)
        self._read()
        now = time.time()
        started = st.get("measure_started_at")
        elapsed = (now if st.get("state") not in BENCH_FINAL_STATES else (st.get("ended_at") or now)) - started if started else None
        total = st.get("total") or 0
        streamed = max(st.get("tokens_streamed") or 0, self.tokens)
        expected = total * (st.get("output_len") or 0)
        eta = None
        if elapsed and st.get("state") == "running":
            if streamed and expected:
                eta = max(0.0, elapsed / streamed * (expected - streamed))
            elif self.done and total:
                eta = max(0.0, elapsed / self.done * (total - self.done))
        return {
            "run_id": self.run_id, "state": st.get("state"), "reason": st.get("reason"),
            "labels": st.get("labels") or {}, "done": self.done, "total": total, "errors": self.errors,
            "warmup_done": st.get("warmup_done"), "warmup_total": st.get("warmup_total"),
            "elapsed_s": round(elapsed, 3) if elapsed is not None else None,
            "tok_s": round(streamed / elapsed, 2) if elapsed and elapsed > 0 else None,
            "accept_length": round(float(self.spec_tokens) / self.verify, 4) if self.verify else None,
            "eta_s": round(eta, 1) if eta is not None else None,
            "positions": self.positions,
        }

    def _run(self):
        channel = self.host.agent.channel
        while True:
            try:
                data = self.progress()
            except Exception as exc:  # a vanished run folder, say: tell the client once and stop
                channel.event("bench_progress", {"run_id": self.run_id, "state": "unknown", "reason": str(exc)})
                return
            if not channel.event("bench_progress", data):
                return
            if data["state"] in BENCH_FINAL_STATES or self._stop.wait(self.interval_s):
                return


def methods(agent):
    host = BenchHost(agent)
    agent.on_close(host.close)
    agent.servers.benchmarks = host  # stops and switches ask it which live runs measure a server
    return {
        Method.BENCH_START: host.start,
        Method.BENCH_STATUS: host.status_method,
        Method.BENCH_LIST: host.list,
        Method.BENCH_RESULTS: host.results,
        Method.BENCH_CANCEL: host.cancel,
        Method.BENCH_WATCH: host.watch,
        Method.BENCH_ENGINES: lambda p: dict((k, v) for k, v in engines(p["python"]).items() if k != "help"),
    }
