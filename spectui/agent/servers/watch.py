"""Following one server: its process, its log and its health, as lifecycle states.

``starting`` -> ``loading`` (weight-loading progress from the log) -> ``ready`` once the
readiness line has appeared and the server answers a request that generates nothing.
A process that exits before ready is ``failed`` (reason from the log); a ready one that
dies is ``crashed``; one that stops answering for ``UNRESPONSIVE_AFTER_S`` is
``unresponsive``. A ready server this watch did not see answer (one found running by an agent
that attached later) is ``unresponsive`` as soon as it fails to answer: nothing says how long
it has been silent. A server that ended while no agent watched is settled from its log's tail
(:meth:`ServerWatch.settle_unwatched`), with the same root cause a watch would have found.

While the leader lives the watch keeps the live members of its process group in the record
(``servers.process.remember_members``), so that spectui can still recognise the group, and
signal it, once the leader is gone and its ranks linger.

spectui never sends a request the user did not ask for: ``/health_generate`` makes the
server generate a token, and so does ``/health`` in recent releases (sglang 0.5.23 wheel,
``sglang/srt/entrypoints/http_server.py:718-790``: both routes share ``health_generate``
unless ``SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION`` is false), which shows up as a running
request on an idle server. So health is asked of ``/server_info`` (``/get_server_info`` on
old releases), which the tokenizer answers by asking each scheduler for its internal state
(``http_server.py:863-880``, ``get_internal_state``): it fails when a scheduler is hung,
yet generates nothing. ``/ready`` (new releases) or ``/model_info`` is tried when neither
exists. A server started with ``--api-key`` answers those only to ``Authorization: Bearer KEY``
(sglang 0.5.23 wheel, sglang/srt/utils/auth.py:135-151, for every route but ``/health*``,
``/ready*`` and ``/metrics*``, :101-106): the check sends it, taken from the server's own
command line as it was started (the key spectui expanded from ``${VAR}``), and never writes it
anywhere.

A server's log is read only while it is a regular file (``logs.follow.open_regular``): a FIFO or a
device put in its place is refused, and the record's ``log_source`` says so. Reading what is left
of the log once the server ended is bounded too (:data:`END_READ_BYTES`, :data:`END_READ_S`).
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import deque

from .bounded_http import DeadlinePassed, FetchFailed, fetch_status
from ..logs.follow import LogFollower
from ..logs import LogFeeder
from .proc_table import cmdline
from .process import api_key_in, group_members, identity, proc_stat, remember_members, server_url
from ..protocol import FINAL_STATES, FOLLOWER_HEALTH_PATHS, HEALTH_PATHS, SERVING_STATES, ServerState
from ..threads import name_this_thread

TAIL_LINES = 40
ERRORS_FIRST = 8  # the first errors a server logs: the root cause is among them
ERRORS_RECENT = 64  # and the newest ones
ERROR_SUMMARY_CHARS = 4096
UNRESPONSIVE_AFTER_S = 20.0
HEALTH_EVERY_S = 3.0
HEALTH_TIMEOUT_S = 2.0
HEALTH_MAX_BYTES = 1 << 20  # a /server_info answer is a few KiB; past this the rest is not read
MEMBERS_EVERY_S = 2.0
SETTLE_TAIL_BYTES = 256 * 1024
END_READ_BYTES = 16 * 1024 * 1024  # what is read of a log once its server ended: the rest is not waited for
END_READ_S = 1.0
UNWATCHED_EXIT = "the server exited while no console was watching"
EXTERNAL_EXIT = "it exited; spectui did not start it"

_REASONS = (
    re.compile(r"(CUDA out of memory[^\n]*)"),
    # argparse's refusal: its prog is the script's name on older releases, "sglang serve" from 0.5.23 on
    # (sglang 0.5.23 wheel, sglang/srt/server_args.py:679)
    re.compile(r"((?:\S+\.py|launch_server|sglang\.launch_server|server\.py|sglang serve): error: [^\n]*)"),
    re.compile(r"(Address already in use[^\n]*)"),
)




def node_rank(argv):
    """``--node-rank`` of a server's command line (``--node-rank N`` or ``--node-rank=N``); 0 when not given."""
    for i, word in enumerate(argv):
        value = None
        if word == "--node-rank" and i + 1 < len(argv):
            value = argv[i + 1]
        elif word.startswith("--node-rank="):
            value = word.split("=", 1)[1]
        if value is not None:
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


class HealthCheck(object):
    """Asks a server whether it is alive without making it generate (see the module docstring);
    remembers which of :data:`HEALTH_PATHS` the server has.

    Each request has one deadline for the whole of it (connect, headers and body,
    ``bounded_http``): a server that accepts and never answers, or answers a byte a second, is
    given up on after :data:`HEALTH_TIMEOUT_S`. With ``background`` a check runs in a thread of its
    own, so that a hung server delays nobody: :meth:`begin` starts one (never a second while one
    runs), :meth:`take` hands over its answer once it is in. Without it, :meth:`begin` asks at once.
    """

    def __init__(self, host, port, paths=HEALTH_PATHS, background=False, clock=time.monotonic, on_answer=None,
                 headers=None):
        self.headers = headers  # a callable: the request headers (the server's API key), or None
        self.host = host
        self.port = port
        self.paths = paths
        self.path = None
        self.last_path = paths[0]
        self.background = background
        self.clock = clock
        self.on_answer = on_answer  # called (from the check's thread) when a check in the background ends
        self.failure = None   # the sentence of the last check that got no answer (None: it answered)
        self.hung = False     # the last failure was a server that took the request and gave no full answer
        self.asked_at = None  # when the check now running (or the last one) began
        self.answered_at = None  # when a check last got an answer
        self.checked = 0      # checks finished
        self._lock = threading.Lock()
        self._running = False
        self._result = None

    def __call__(self):
        """One check, here and now: True when the server answered."""
        paths = [self.path] if self.path else self.paths
        headers = self.headers() if self.headers is not None else None
        for path in paths:
            self.last_path = path
            try:
                status = fetch_status(server_url(self.host, self.port, path), HEALTH_MAX_BYTES, HEALTH_TIMEOUT_S,
                                      headers=headers)
            except FetchFailed as exc:
                self.failure, self.hung = str(exc), isinstance(exc, DeadlinePassed)
                return False
            if status == 200:
                self.path = path
                self.failure, self.hung = None, False
                return True
            if (status == 404 and self.path is None) or 200 < status < 300:
                continue  # not on this release: try the next one
            self.failure, self.hung = "HTTP %d from %s" % (status, path), False
            return False
        self.failure, self.hung = "none of %s answered" % ", ".join(paths), False
        return False

    @property
    def running(self):
        return self._running

    def begin(self):
        """Start a check unless one is running; without ``background`` it runs to its end here."""
        with self._lock:
            if self._running:
                return
            self._running = True
            self.asked_at = self.clock()
        if not self.background:
            self._run()
            return
        t = threading.Thread(target=self._run, name="health-%s" % self.port)
        t.daemon = True
        t.start()

    def _run(self):
        if self.background:
            name_this_thread("health-%s" % self.port)
        try:
            ok = self()
        except Exception as exc:  # one sentence, never a dead check
            ok, self.failure, self.hung = False, "%s: %s" % (type(exc).__name__, exc), False
        with self._lock:
            if ok:
                self.answered_at = self.clock()
            self._result = ok
            self.checked += 1
            self._running = False
        if self.background and self.on_answer is not None:
            self.on_answer()

    def take(self):
        """The answer of the check that ended since the last call (True or False), or None."""
        with self._lock:
            got, self._result = self._result, None
            return got


class ErrorLog(object):
    """The error summaries a server logged, bounded: the first ``ERRORS_FIRST`` (where the root cause
    is) and the newest ``ERRORS_RECENT``, each cut at ``ERROR_SUMMARY_CHARS``; ``dropped`` counts the
    ones in between that were let go. Iterates oldest first."""

    def __init__(self, first=ERRORS_FIRST, recent=ERRORS_RECENT):
        self.first_cap = first
        self.first = []
        self.recent = deque(maxlen=recent)
        self.dropped = 0

    def add(self, summary):
        summary = summary[:ERROR_SUMMARY_CHARS]
        if len(self.first) < self.first_cap:
            self.first.append(summary)
            return
        if len(self.recent) == self.recent.maxlen:
            self.dropped += 1
        self.recent.append(summary)

    def __iter__(self):
        return iter(self.first + list(self.recent))

    def __len__(self):
        return len(self.first) + len(self.recent)


class ServerWatch(object):
    def __init__(self, record, log_path, popen=None, clock=time.monotonic, tail_bytes=None, external=False,
                 members=None, background=False, on_answer=None, api_key=None, own_log=False):
        """``external``: a server spectui did not start (found running): ready as soon as it answers (its
        log may be unreadable, or its ready line long past), and its end is ``stopped`` with the reason
        its log names, else :data:`EXTERNAL_EXIT`. ``members``: a callable giving the server's live
        processes ({pid: start_ticks}) when they are not its process group (an external server's tree).
        ``background``: health checks run in a thread of their own (:class:`HealthCheck`), and a poll
        takes the answer of the last one that ended: a poll never waits on the server; ``on_answer`` is
        called when one ends (the next poll may come at once). ``api_key``: the server's ``--api-key`` as it was
        started (else read from its command line when first needed). ``own_log``: the log is spectui's own file,
        never followed through a symbolic link."""
        self.record = record
        self.log_path = log_path
        self.popen = popen
        self.clock = clock
        self.external = external
        self.members = members
        self.follower = LogFollower(log_path or os.devnull, tail_bytes=tail_bytes, nofollow=own_log)
        self.lock = threading.RLock()  # held by a step (poll) and close: a step is whole when others look
        self.closed = False
        self._api_key = api_key
        self._key_looked = api_key is not None
        self._refused = None  # the sentence saying the log is no regular file, while it is not
        self._source_before = None
        self.members_at = None
        self.ident_settled = False  # the leader's identity is final (it was ready once): see _settle_identity
        self.unsaved = False  # changed since last written to the record file (the manager saves it)
        self.feeder = LogFeeder()
        self.tail = deque(maxlen=TAIL_LINES)
        follower = node_rank(record.get("argv") or []) > 0   # a node of rank 1 and up: ready when /health answers
        self.ready_line = external or follower
        self.errors = ErrorLog()  # summaries of error events, in order (bounded)
        self.last_health_ok = None
        self.last_health_at = 0.0
        self.exit_status = None
        self.health = HealthCheck(record.get("host"), record["port"],
                                  FOLLOWER_HEALTH_PATHS if follower else HEALTH_PATHS, background=background,
                                  clock=clock, on_answer=on_answer, headers=self._auth)

    def _auth(self):
        """The health check's headers: the server's API key as SGLang takes it (see the module docstring)."""
        if not self._key_looked:
            self._key_looked = True
            self._api_key = api_key_in(cmdline(self.record["pid"]) or []) if self.record.get("pid") else None
        return {"Authorization": "Bearer " + self._api_key} if self._api_key else {}

    def _read_new(self):
        """The log's new lines; a log path that names no regular file any more (or again) changes the record's
        ``log_source`` (True then, as the second value)."""
        lines = self.follower.read_new()
        refused = self.follower.refused if self.log_path else None
        if refused == self._refused:
            return lines, False
        r = self.record
        if refused is not None and self._refused is None:
            self._source_before = r.get("log_source")
        self._refused = refused
        r["log_source"] = ({"kind": "file", "readable": False, "text": refused} if refused is not None
                           else self._source_before)
        return lines, True

    def _absorb(self, records):
        changed = False
        r = self.record
        for rec in records:
            kind = rec.get("kind")
            if kind == "loading":
                r["progress"] = {"percent": rec.get("percent"), "done": rec.get("done"), "total": rec.get("total")}
                if r["state"] == ServerState.STARTING:
                    r["state"] = ServerState.LOADING
                changed = True
            elif kind in ("load_begin", "load_end"):
                if r["state"] == ServerState.STARTING:
                    r["state"] = ServerState.LOADING
                    changed = True
                if kind == "load_end":
                    r["load_s"] = rec.get("elapsed")
            elif kind == "ready":
                self.ready_line = True
            elif kind == "error" and rec.get("summary"):
                self.errors.add(rec["summary"])
        return changed

    def reason(self):
        """The root cause: a known cause if one was logged, else the first specific error."""
        errors = list(self.errors)
        text = "\n".join(errors + list(self.tail))
        for rx in _REASONS:
            found = rx.findall(text)
            if found:
                return found[0].strip()
        specific = [e for e in errors if "error messages above" not in e]
        if specific or errors:
            return (specific or errors)[0]
        if self.exit_status is not None:
            return "the process exited with status %d" % self.exit_status
        return "the process exited"

    # --- process ---------------------------------------------------------------------
    def _alive(self):
        if self.popen is not None:
            status = self.popen.poll()
            if status is not None:
                self.exit_status = status
                return False
            return True
        st = proc_stat(self.record["pid"])
        if st is None or st[0] in ("Z", "X"):
            return False
        ticks = self.record.get("start_ticks")
        return ticks is None or st[3] == ticks

    def close(self):
        with self.lock:
            self.closed = True
            self.follower.close()

    def reap(self):
        if self.popen is not None and self.exit_status is None:
            status = self.popen.poll()
            if status is not None:
                self.exit_status = status

    def _remember_members(self, now_too=False):
        """Record the live group (the leader is alive and ours): every ``MEMBERS_EVERY_S``, or now when the
        state changed (a server spawns its ranks while loading). True when the members changed."""
        now = self.clock()
        if not now_too and self.members_at is not None and now - self.members_at < MEMBERS_EVERY_S:
            return False
        self.members_at = now
        r = self.record
        if self.members is not None:
            return remember_members(r, self.members())
        changed = self._settle_identity()
        return remember_members(r, group_members(r.get("pgid") or r["pid"])) or changed

    def _settle_identity(self):
        """Until the server is first ready, follow what its leader runs (``ident``): a launch often goes through
        programs that exec the next one (a pyenv or conda shim, ``env``, ``numactl``, ``sh -c 'exec ...'``), and
        the program that serves is the one at the end. From its first ready on, the identity stays as it was: a
        leader that becomes another program after that is not signalled (``process.became_other``)."""
        r = self.record
        if self.external or self.ident_settled:
            return False
        if r["state"] == ServerState.READY:
            self.ident_settled = True
        elif r["state"] not in (ServerState.STARTING, ServerState.LOADING):
            return False
        now = identity(r["pid"])
        if now is None or now == r.get("ident"):
            return False
        r["ident"] = now
        return True

    def _read_all(self, max_bytes=END_READ_BYTES, max_s=END_READ_S):
        """The rest of the log, up to ``max_bytes`` and ``max_s`` (a log written faster than it is read ends here)."""
        end = time.monotonic() + max_s
        while max_bytes > 0 and time.monotonic() < end:
            lines, _ = self._read_new()
            if not lines:
                break
            max_bytes -= sum(len(line) + 1 for line in lines)
            self.tail.extend(lines)
            self._absorb(self.feeder.feed_lines(lines))
        self._absorb(self.feeder.flush())
        if self.follower.partial:
            self.tail.append(self.follower.partial)
        self.follower.close()

    def settle_unwatched(self):
        """End the record of a server that exited while no agent watched: the state from the last one
        recorded, the root cause from the log's tail (as :meth:`poll` finds it), or a sentence saying
        nobody watched when the log names none."""
        r = self.record
        was = r.get("state")
        self._read_all()
        if was in SERVING_STATES:
            r["state"] = ServerState.CRASHED
        else:
            r["state"] = ServerState.STOPPED if was == ServerState.STOPPING else ServerState.FAILED
        if r["state"] != ServerState.STOPPED:
            reason = self.reason()
            r["reason"] = UNWATCHED_EXIT if reason == "the process exited" else reason
            r["log_tail"] = list(self.tail)
        else:
            r["reason"] = r.get("reason") or UNWATCHED_EXIT
        r["ended_at"] = r.get("ended_at") or time.time()

    # --- one step --------------------------------------------------------------------
    def poll(self):
        """Advance the state from what the log, the process and the health check say.

        Returns True when something a client shows changed.
        """
        state = self.record["state"]
        changed = self._step()
        if self.record["state"] not in FINAL_STATES + (ServerState.STOPPING,):
            changed = self._remember_members(now_too=self.record["state"] != state) or changed
        return changed

    def _step(self):
        r = self.record
        lines, changed = self._read_new()
        for line in lines:
            self.tail.append(line)
        changed = self._absorb(self.feeder.feed_lines(lines)) or changed
        state = r["state"]
        if state in FINAL_STATES + (ServerState.STOPPING,):
            return changed
        if not self._alive():
            self._read_all()
            if self.external:
                reason = self.reason()
                r["state"] = ServerState.STOPPED
                r["reason"] = EXTERNAL_EXIT if reason == "the process exited" else reason
                r["ended_at"] = time.time()
                return True
            r["state"] = ServerState.CRASHED if state in SERVING_STATES else ServerState.FAILED
            r["reason"] = self.reason()
            r["log_tail"] = list(self.tail)
            r["exit_status"] = self.exit_status
            r["ended_at"] = time.time()
            return True
        now = self.clock()
        if state in (ServerState.STARTING, ServerState.LOADING):
            got = self._answer(due=True) if self.ready_line else None
            if got:
                r["state"] = ServerState.READY
                r["ready_at"] = time.time()
                self.last_health_ok = now
                self.last_health_at = now
                return True
            if got is False and self.external and self.health.hung:
                # it took the request and gave no full answer: an SGLang server listens only once its model
                # is loaded (sglang 0.5.23 wheel, sglang/srt/entrypoints/http_server.py:3156-3187, launch_server
                # runs the HTTP server after Engine._launch_subprocesses, which waits for the model to load,
                # sglang/srt/entrypoints/engine.py:1349-1350), so this one is hung, not loading
                r["state"] = ServerState.UNRESPONSIVE
                r["reason"] = self.health.failure
                return True
            return changed
        got = self._answer(due=now - self.last_health_at >= HEALTH_EVERY_S)
        if got is None:
            return changed
        if got:
            self.last_health_ok = now
            if state == ServerState.UNRESPONSIVE:
                r["state"] = ServerState.READY
                r["reason"] = None
                r["ready_at"] = r.get("ready_at") or time.time()
                return True
        elif self.last_health_ok is None and state == ServerState.READY:
            # found running by this agent: no history of answers, so silence now is what it knows
            r["state"] = ServerState.UNRESPONSIVE
            r["reason"] = "no answer from %s when spectui attached to it" % self.health.last_path
            return True
        elif self.last_health_ok is None:
            self.last_health_ok = now
        elif (now - self.last_health_ok >= r.get("unresponsive_after_s", UNRESPONSIVE_AFTER_S)
              and state == ServerState.READY):
            r["state"] = ServerState.UNRESPONSIVE
            r["reason"] = "no answer from %s for %d s" % (self.health.last_path, now - self.last_health_ok)
            return True
        return changed

    def _answer(self, due):
        """The answer of the health check that ended since the last poll (True, False), else None; a new
        check begins when ``due`` and none runs (and, when checks do not run in the background, answers now)."""
        got = self.health.take()
        if got is None and due and not self.health.running:
            self.last_health_at = self.clock()
            self.health.begin()
            got = self.health.take()
        return got

    def stale(self):
        """Why the state shown may be out of date, in one sentence, or None: the last health check got no
        answer, the first one has not answered yet, or the last answer is older than the checks' rhythm."""
        h = self.health
        if self.record["state"] in FINAL_STATES + (ServerState.STOPPING,) or h.asked_at is None:
            return None
        now = self.clock()
        if h.checked == 0:
            return "no answer yet from %s (asked %.1f s ago)" % (h.last_path, now - h.asked_at)
        if h.failure is not None:
            return h.failure + ("; it last answered %d s ago" % (now - h.answered_at) if h.answered_at is not None
                                else "; it has not answered since spectui found it")
        if h.answered_at is not None and now - h.answered_at > HEALTH_EVERY_S + HEALTH_TIMEOUT_S + 1.0:
            return "it last answered %d s ago" % (now - h.answered_at)
        return None
