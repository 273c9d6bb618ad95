"""Agent side of the wire protocol: JSON lines on stdin/stdout.

The first line the agent writes is ``{"type": "hello", ...}``. Then:

* request (client -> agent): ``{"id": N, "method": "name", "params": {...}}``
* reply (agent -> client): ``{"type": "reply", "id": N, "result": ...}`` or
  ``{"type": "reply", "id": N, "error": {"code": "...", "message": "one sentence"}}``
* event (agent -> client, pushed): ``{"type": "event", "event": "name", "data": {...}}``
"""

from __future__ import annotations

import json
import os
import sys
import threading

PROTOCOL_VERSION = 1


class ServerState(object):
    """A server's lifecycle state, as ``state`` of its record (``server`` events, ``servers.list``):
    ``starting`` -> ``loading`` (weights) -> ``ready``, ``unresponsive`` while its health check
    fails, ``stopping``, and one final state: ``stopped``, ``failed`` (never became ready) or
    ``crashed`` (died after it was ready)."""

    STARTING = "starting"
    LOADING = "loading"
    READY = "ready"
    UNRESPONSIVE = "unresponsive"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"
    CRASHED = "crashed"


#: Every state, in lifecycle order.
SERVER_STATES = (ServerState.STARTING, ServerState.LOADING, ServerState.READY, ServerState.UNRESPONSIVE,
                 ServerState.STOPPING, ServerState.STOPPED, ServerState.FAILED, ServerState.CRASHED)
#: A server in one of these has processes on the host.
LIVE_STATES = SERVER_STATES[:5]
#: A server in one of these has ended; its record stays until pruned.
FINAL_STATES = SERVER_STATES[5:]
#: Up and answering requests (``unresponsive`` is up but failing its health check).
SERVING_STATES = (ServerState.READY, ServerState.UNRESPONSIVE)
#: The states a benchmark run ends in (``bench.status``'s ``state``); before them it is ``running``.
BENCH_FINAL_STATES = ("done", "failed", "interrupted")
BENCH_BUSY = "bench_busy"  # the error code of a run refused: another live run measures its server
#: Not serving when it should: a failed start, a crash, a failing health check.
DOWN_STATES = (ServerState.UNRESPONSIVE, ServerState.CRASHED, ServerState.FAILED)
#: Where a server on the host came from: started by spectui, found running, or found and adopted.
ORIGINS = ("spectui", "external", "adopted")
#: Origins of spectui's own servers, as a record keeps them (a record of a server spectui started may have none).
OWN_ORIGINS = (None, "spectui", "adopted")


class Method(object):
    """Request method names (``{"method": ...}``); each is answered by one agent module's ``methods``."""

    PING = "ping"
    HOST_FACTS = "host.facts"
    AGENT_STATS = "agent.stats"
    GPU_SAMPLE = "gpu.sample"
    GPU_SUBSCRIBE = "gpu.subscribe"
    GPU_UNSUBSCRIBE = "gpu.unsubscribe"
    SERVERS_LIST = "servers.list"
    SERVER_START = "server.start"
    SERVER_STOP = "server.stop"
    SERVER_SWITCH = "server.switch"
    SERVER_WAIT = "server.wait"
    SERVER_LOGS = "server.logs"
    SERVER_PLAN_STOP = "server.plan_stop"
    SERVER_PLAN_SWITCH = "server.plan_switch"
    SERVER_ADOPT = "server.adopt"
    SERVER_TELEMETRY_SUBSCRIBE = "server.telemetry.subscribe"
    SERVER_TELEMETRY_UNSUBSCRIBE = "server.telemetry.unsubscribe"
    SERVER_TELEMETRY_WATCH = "server.telemetry.watch"
    PYTHON_SGLANG = "python.sglang"
    LAUNCH_HELP = "launch.help"
    LAUNCH_PARSE = "launch.parse"
    SOURCE_LOCATE = "source.locate"
    SOURCE_OPEN = "source.open"
    SOURCE_TREE = "source.tree"
    SOURCE_READ = "source.read"
    SOURCE_GREP = "source.grep"
    SOURCE_CANCEL = "source.cancel"
    SOURCE_DEF = "source.def"
    SOURCE_FLAGS = "source.flags"
    SOURCE_ALGORITHMS = "source.algorithms"
    PROBE_RUN = "probe.run"
    PROBE_TOPOLOGY = "probe.topology"
    PROBE_CANCEL = "probe.cancel"
    PROBE_PORT = "probe.port"
    BENCH_START = "bench.start"
    BENCH_STATUS = "bench.status"
    BENCH_LIST = "bench.list"
    BENCH_RESULTS = "bench.results"
    BENCH_CANCEL = "bench.cancel"
    BENCH_WATCH = "bench.watch"
    BENCH_ENGINES = "bench.engines"
    TRAFFIC_START = "traffic.start"
    TRAFFIC_STOP = "traffic.stop"
    TRAFFIC_STATUS = "traffic.status"


class Event(object):
    """Event names (``{"type": "event", "event": ...}``) the agent pushes."""

    GPU = "gpu"
    SERVER = "server"
    SWITCH = "switch"
    SERVER_FRAME = "server_frame"
    SOURCE_GREP = "source.grep"
    PROBE_PROGRESS = "probe.progress"
    BENCH_PROGRESS = "bench_progress"
    AGENT_LOG = "agent.log"


#: The GPU telemetry sources ``--gpu-source`` names: ``auto`` tries NVML, then ``nvidia-smi``,
#: then the simulator's GPUs; ``none`` reads no GPU.
GPU_SOURCES = ("auto", "nvml", "nvidia-smi", "sim", "none")
#: The shortest GPU or server telemetry interval the agent serves, in seconds (10 Hz).
MIN_TELEMETRY_INTERVAL_S = 0.1
#: SIGTERM, then this long before SIGKILL, when a server is stopped.
STOP_GRACE_S = 20.0
#: The host's state folder (server records, logs, benchmark runs).
DEFAULT_STATE_DIR = "~/.cache/spectui"

# The HTTP paths the agent polls on each server it watches: /metrics and /server_info (or /get_server_info)
# for telemetry (servers/telemetry.py), the health check's (servers/watch.py). uvicorn logs each poll as an
# access line in the server's log; the console hides those lines (spectui.core.console.logs.is_poll_line).
METRICS_PATH = "/metrics"
INFO_PATHS = ("/server_info", "/get_server_info")   # /get_server_info: the name before 0.4.7
HEALTH_PATHS = INFO_PATHS + ("/ready", "/model_info", "/get_model_info")
# A multi-node server's nodes of rank 1 and up serve no API: once their schedulers are up they start a
# health-check-only server on the port, whose /health answers 200 without generating (sglang 0.5.23 wheel,
# sglang/srt/entrypoints/engine.py:1234-1290 and sglang/srt/utils/common.py:3624,
# launch_dummy_health_check_server). That answer is such a node's readiness; it logs no ready line.
FOLLOWER_HEALTH_PATHS = ("/health",)
POLLED_PATHS = (METRICS_PATH,) + HEALTH_PATHS + FOLLOWER_HEALTH_PATHS

# Events the agent pushes that the client's transport layer handles itself.
EVENT_AGENT_LOG = Event.AGENT_LOG   # one of the agent's log records (see agentlog.py)


class AgentError(Exception):
    """An error the agent reports to the client as one sentence."""

    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


def telemetry_interval(params, what="telemetry"):
    """A subscription's ``interval_s`` (default 1 s), checked where it enters the agent: a number
    of seconds no shorter than :data:`MIN_TELEMETRY_INTERVAL_S`."""
    value = params.get("interval_s", 1.0)
    try:
        interval = float(value)
    except (TypeError, ValueError):
        interval = None
    if interval is None or not interval >= MIN_TELEMETRY_INTERVAL_S:
        given = "%g s" % interval if interval is not None else repr(value)
        raise AgentError("bad_params", "the %s interval must be at least %g s, not %s"
                         % (what, MIN_TELEMETRY_INTERVAL_S, given))
    return interval


class Channel:
    """Thread-safe writer of JSON lines to the client."""

    def __init__(self, out=None):
        self._out = out if out is not None else sys.stdout.buffer
        self._lock = threading.Lock()
        self.broken = False

    def send(self, obj):
        data = (json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")
        with self._lock:
            if self.broken:
                return False
            try:
                self._out.write(data)
                self._out.flush()
            except (OSError, ValueError):
                # The client is gone: nobody to talk to any more.
                self.broken = True
                return False
        return True

    def event(self, name, data):
        return self.send({"type": "event", "event": name, "data": data})

    def reply(self, req_id, result):
        return self.send({"type": "reply", "id": req_id, "result": result})

    def error(self, req_id, code, message):
        return self.send({"type": "reply", "id": req_id, "error": {"code": code, "message": message}})


def hello(bundle_hash):
    return {
        "type": "hello",
        "protocol": PROTOCOL_VERSION,
        "agent_hash": bundle_hash,
        "pid": os.getpid(),
        "python": sys.executable,
        "python_version": "%d.%d.%d" % sys.version_info[:3],
    }
