"""Runs one source search in a child of the host's Python, with a deadline, and stops it on demand.

The agent's own threads only wait on the child's pipe (which releases the GIL), so pings,
telemetry and signals keep being served however long a regex runs. The child is killed when
the deadline passes (plus a grace, should its own timer fail), when the search is cancelled,
and when the agent closes; on Linux it also dies with the agent (see ``source.grep_worker``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

from ..bootstrap import bootstrap_code, make_payload, own_sources
from ..protocol import AgentError

WORKER_ENTRY = "source.grep_worker"
# The modules the child needs (the worker and what it imports).
WORKER_MODULES = ("protocol", "source", "source.paths", "source.grep", WORKER_ENTRY)
DEFAULT_DEADLINE_S = 30.0
MAX_DEADLINE_S = 600.0
# Past the deadline, the child has this long to answer for itself before it is killed.
KILL_GRACE_S = 2.0

_payload_lock = threading.Lock()
_payload = [None]


def worker_payload():
    with _payload_lock:
        if _payload[0] is None:
            sources = own_sources()
            _payload[0] = make_payload({n: sources[n] for n in WORKER_MODULES}, WORKER_ENTRY)
        return _payload[0]


def deadline_seconds(value):
    if value is None:
        return DEFAULT_DEADLINE_S
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if not 0 < seconds <= MAX_DEADLINE_S:
        raise AgentError("bad_params", "the search deadline must be between 0 and %g s, not %r"
                         % (MAX_DEADLINE_S, value))
    return seconds


def too_slow_message(pattern, seconds, where):
    return "the pattern %r took longer than %g s on %s; simplify it (nested repeats such as (a+)+ " \
           "backtrack without end)" % (pattern, seconds, where)


class SearchProcess(object):
    """One search's child process: ``run()`` streams hits to ``on_hits`` and returns the statistics."""

    def __init__(self, request, display, on_hits, python=None):
        self.request = dict(request, parent_pid=os.getpid())
        self.display = display
        self.on_hits = on_hits
        self.python = python or sys.executable
        self.proc = None
        self._lock = threading.Lock()
        self._stopped = False
        self.killed_for = None     # "deadline" or "cancelled"

    def stop(self, why="cancelled"):
        """Kill the child (from any thread); ``run()`` then returns what it had."""
        with self._lock:
            self._stopped = True
            if self.killed_for is None:
                self.killed_for = why
            proc = self.proc
        if proc is not None and proc.poll() is None:
            try:
                proc.kill()
            except OSError:
                pass

    def _start(self):
        payload = worker_payload()
        argv = [self.python, "-S", "-c", bootstrap_code(len(payload))]
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, close_fds=True)
        except OSError as exc:
            raise AgentError("grep_failed", "the search could not start a process of %s: %s" % (self.python, exc))
        with self._lock:
            self.proc = proc
            stopped = self._stopped
        if stopped:
            self.stop()
        try:
            proc.stdin.write(payload + json.dumps(self.request).encode("utf-8") + b"\n")
            proc.stdin.close()
        except OSError:
            pass  # it died at once: reading its stdout says how
        return proc

    def run(self):
        deadline = float(self.request["deadline_s"])
        proc = self._start()
        timer = threading.Timer(deadline + KILL_GRACE_S, self.stop, args=("deadline",))
        timer.daemon = True
        timer.start()
        names = {}
        final = None
        try:
            for raw in iter(proc.stdout.readline, b""):
                try:
                    msg = json.loads(raw.decode("utf-8"))
                except ValueError:
                    continue
                hits = msg.get("hits")
                if hits is not None:
                    for h in hits:
                        real = h["path"]
                        shown = names.get(real)
                        if shown is None:
                            shown = names[real] = self.display(real)
                        h["path"] = shown
                    self.on_hits(hits)
                else:
                    final = msg
        finally:
            timer.cancel()
            proc.stdout.close()
            self.stop("ended")
            code = proc.wait()
        return self._outcome(final, code)

    def _under(self):
        return "the files under %s" % (self.display(self.request["top"]) or ".")

    def _outcome(self, final, code):
        pattern = self.request["pattern"]
        if final is not None and "done" in final:
            return final["done"]
        if final is not None and "deadline" in final:
            d = final["deadline"]
            where = self.display(d["path"]) if d.get("path") else self._under()
            raise AgentError("grep_too_slow", too_slow_message(pattern, d["seconds"], where))
        if final is not None and "error" in final:
            raise AgentError(final["error"].get("code") or "internal", final["error"].get("message") or "")
        if self.killed_for == "cancelled":
            return None
        if self.killed_for == "deadline":
            raise AgentError("grep_too_slow", too_slow_message(pattern, self.request["deadline_s"], self._under()))
        raise AgentError("grep_failed", "the search process ended without an answer (exit status %s); "
                                        "try again, or report it with the pattern" % code)
