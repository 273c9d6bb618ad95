"""The child process that runs one source search, so a slow regex never stalls the agent.

Python's regex engine holds the GIL for as long as one match runs, and a catastrophic pattern
(``(a+)+$`` on a long line) can run for hours: inside the agent that would stop pings,
telemetry and even its SIGTERM handler. So the agent starts this module as a child of the
host's Python (see ``source.grep_process``): the request is one JSON line on stdin after the
payload, and the answer is JSON lines on stdout:

* ``{"hits": [...]}``: a batch of hits (paths as the host names them);
* ``{"done": {...}}``: the search's statistics, last;
* ``{"deadline": {"path": P, "seconds": N}}``: the deadline passed while searching ``P``;
* ``{"error": {"code": C, "message": M}}``: the request could not be served.

Bounds that hold even while a match holds the GIL: a ``SIGALRM`` timer at the deadline (the
regex engine checks for signals as it runs, so the handler interrupts it), a CPU-time limit a
little past it (the kernel ends the process), and on Linux a parent-death signal, so the child
never outlives the agent.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys

from ..protocol import AgentError
from .grep import SearchDeadline, compile_pattern, grep_tree

log = logging.getLogger(__name__)

# The kernel ends the child this many CPU seconds past the deadline, should the timer fail.
CPU_LIMIT_GRACE_S = 5
_PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid):
    """Ask Linux to kill this process when the agent ends (best effort elsewhere: see ``parent_gone``)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except Exception:
            log.debug('no parent-death signal on this system (prctl unavailable)', exc_info=True)
    if parent_pid and os.getppid() != parent_pid:  # the agent ended before the request was read
        os._exit(3)


def limit_cpu(deadline_s):
    try:
        import resource

        cap = int(deadline_s) + 1 + CPU_LIMIT_GRACE_S
        soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (cap, hard))
    except (ImportError, ValueError, OSError):
        pass


class DeadlineAlarm(object):
    """``SIGALRM`` at the deadline raises ``SearchDeadline`` where the search is, unless an answer
    line is being written: then it is raised once the line is out (a line is never cut)."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.writing = False
        self.pending = False

    def start(self):
        signal.signal(signal.SIGALRM, self._fire)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def stop(self):
        signal.setitimer(signal.ITIMER_REAL, 0)

    def _fire(self, signum, frame):
        if self.writing:
            self.pending = True
            return
        raise SearchDeadline()

    def send(self, answer, obj):
        self.writing = True
        try:
            answer.send(obj)
        finally:
            self.writing = False
        if self.pending:
            raise SearchDeadline()


class Answer(object):
    """JSON lines to the agent."""

    def __init__(self, out):
        self.out = out

    def send(self, obj):
        self.out.write(json.dumps(obj, separators=(",", ":")).encode("utf-8") + b"\n")
        self.out.flush()


def serve(request, answer):
    deadline_s = float(request["deadline_s"])
    parent_pid = request.get("parent_pid")
    rx = compile_pattern(request["pattern"], bool(request.get("ignore_case")))

    def parent_gone():  # polled between files
        return bool(parent_pid) and os.getppid() != parent_pid

    alarm = DeadlineAlarm(deadline_s)
    try:
        alarm.start()
        try:
            _, stats = grep_tree(request["top"], rx, lambda p: p, include=request.get("include") or None,
                                 max_hits=int(request["max_hits"]),
                                 on_hits=lambda hits: alarm.send(answer, {"hits": hits}), cancelled=parent_gone)
        finally:
            alarm.stop()
    except SearchDeadline as exc:
        answer.send({"deadline": {"path": exc.path, "seconds": deadline_s}})
        return
    answer.send({"done": stats.to_dict()})


def run_and_exit(argv=None):
    answer = Answer(sys.stdout.buffer)
    code = 0
    try:
        request = json.loads(sys.stdin.buffer.readline().decode("utf-8"))
        die_with_parent(request.get("parent_pid"))
        limit_cpu(float(request["deadline_s"]))
        serve(request, answer)
    except AgentError as exc:
        answer.send({"error": {"code": exc.code, "message": exc.message}})
    except (OSError, ValueError) as exc:  # includes a closed pipe: nobody left to tell
        code = 1
        try:
            answer.send({"error": {"code": "internal", "message": "%s: %s" % (type(exc).__name__, exc)}})
        except (OSError, ValueError):
            pass
    finally:
        try:
            sys.stdout.flush()
        except Exception:
            log.debug("the search worker's output could not be flushed (the agent is gone)", exc_info=True)
        os._exit(code)
