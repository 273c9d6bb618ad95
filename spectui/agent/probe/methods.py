"""``probe.run``: the verify-cost probe, run with the profile's interpreter.

On a real host the agent starts ``probe.worker`` from memory with the interpreter named in the
request (the SGLang venv, which has torch; it may differ from the agent's own), attached, in its
own process group, and waits for its result at most ``timeout_s``. Progress lines of the worker
become ``probe.progress`` events. Across nodes, each node's agent gets the same request plus
``nnodes``, its ``node_rank`` and ``dist_init_addr`` (``HOST0:PORT``, where node 0's first rank
listens) and starts its ``world_size / nnodes`` ranks, which meet the others there (``probe.worker``).
On the simulated host the probe reads the simulator's hardware model instead (``probe.sim``), the
multi-node one for ``nnodes`` above 1. One probe runs at a time.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from . import sim as probe_sim
from .topology import host_topology
from ..bootstrap import bootstrap_code, make_payload, own_sources
from ..protocol import AgentError, Method

log = logging.getLogger(__name__)

WORKER_KEYS = ("backend", "device", "world_size", "gpus", "model", "hidden_size", "layers", "dtype_bytes",
               "tokens", "iters", "warmup", "max_seconds", "env", "nnodes", "node_rank", "dist_init_addr")
DEFAULT_TIMEOUT_S = 900.0


class ProbeRunner(object):
    def __init__(self, agent):
        self.agent = agent
        self._lock = threading.Lock()
        self._proc = None
        self._cancelled = False

    def run(self, params):
        if not self._lock.acquire(False):
            raise AgentError("busy", "a probe is already running on this host; wait for it to finish")
        self._cancelled = False
        try:
            if self.agent.simulated:
                self._event({"stage": "sim", "preset": probe_sim.preset_for(params),
                             "nnodes": probe_sim.node_count(params)})
                return probe_sim.run(params, self.agent.gpu_source())
            return self._run_worker(params)
        finally:
            self._lock.release()

    def _event(self, data):
        self.agent.channel.event("probe.progress", data)

    def _run_worker(self, params):
        python = params.get("python") or sys.executable
        timeout = float(params.get("timeout_s") or DEFAULT_TIMEOUT_S)
        config = dict((k, params.get(k)) for k in WORKER_KEYS)
        config["timeout_s"] = timeout
        payload = make_payload(own_sources(), "probe.worker")
        argv = [python, "-u", "-c", bootstrap_code(len(payload)), json.dumps(config)]
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True, close_fds=True)
        except FileNotFoundError:
            raise AgentError("no_python", "%s does not exist on the host" % python)
        except PermissionError:
            raise AgentError("no_python", "%s is not executable on the host" % python)
        self._proc = proc
        if self._cancelled:
            self._kill(proc)
            self._proc = None
            raise AgentError("cancelled", "the probe was cancelled")
        stderr = collections.deque(maxlen=40)
        lines = collections.deque()
        got = threading.Condition()

        def read_out():
            for raw in iter(proc.stdout.readline, b""):
                with got:
                    lines.append(raw)
                    got.notify()
            with got:
                lines.append(None)
                got.notify()

        def read_err():
            for raw in iter(proc.stderr.readline, b""):
                text = raw.decode("utf-8", "replace").rstrip()
                if text:
                    stderr.append(text)

        readers = [threading.Thread(target=read_out, daemon=True), threading.Thread(target=read_err, daemon=True)]
        for t in readers:
            t.start()
        try:
            try:
                proc.stdin.write(payload)
                proc.stdin.close()
            except OSError:
                pass
            deadline = time.monotonic() + timeout
            outcome = None
            while outcome is None:
                with got:
                    while not lines:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            raise AgentError("timeout", "the probe did not finish within %d s (raise --timeout, "
                                             "or lower --iters / --max-seconds)" % timeout)
                        got.wait(min(left, 1.0))
                    raw = lines.popleft()
                if raw is None:
                    break
                try:
                    msg = json.loads(raw.decode("utf-8", "replace"))
                except ValueError:
                    continue
                kind = msg.get("type")
                if kind == "progress":
                    msg.pop("type", None)
                    self._event(msg)
                elif kind in ("result", "error"):
                    outcome = msg
            if outcome is None and self._cancelled:
                raise AgentError("cancelled", "the probe was cancelled")
            if outcome is None:
                readers[1].join(5)
                last = stderr[-1] if stderr else "it ended without a result"
                raise AgentError("probe_failed", "the probe could not run with %s: %s" % (python, last))
            if outcome["type"] == "error":
                raise AgentError(outcome.get("code") or "probe_failed", outcome.get("message") or "the probe failed")
            return outcome["result"]
        finally:
            self._kill(proc)
            self._proc = None

    def _kill(self, proc):
        # The worker is not reaped yet, so its process group id is still its own: this ends it
        # and any rank it left behind.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            proc.wait(5)
        except Exception:
            log.debug('the probe worker did not end within 5 s of its kill', exc_info=True)

    def cancel(self, params=None):
        """End the running probe, if any (its ``probe.run`` answers ``cancelled``): a probe across nodes is
        cancelled on every node when one of them fails, so the others do not wait out their rendezvous."""
        if not self._lock.locked():
            return {"cancelled": False}
        self._cancelled = True  # a worker not started yet is ended as soon as it starts
        proc = self._proc
        if proc is not None:
            self._kill(proc)
        return {"cancelled": True}

    def close(self):
        proc = self._proc
        if proc is not None:
            self._kill(proc)


def rendezvous_port(params):
    """A TCP port free on this host now, for a probe across nodes to meet at on this node (node 0): the
    other nodes' ranks connect to it, so it is bound on every address, as torch's TCPStore binds it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("", 0))
        return {"port": s.getsockname()[1]}
    finally:
        s.close()


def topology(agent, params):
    """The host's GPU topology alone (no torch needed): NVML and nvidia-smi, or the simulator's."""
    gpus = params.get("gpus")
    if agent.simulated:
        return probe_sim.sim_topology(params.get("sim_hardware") or probe_sim.DEFAULT_PRESET, agent.gpu_source(),
                                      gpus)
    return host_topology(selected=[int(g) for g in gpus] if gpus else None)


def methods(agent):
    runner = ProbeRunner(agent)
    agent.on_close(runner.close)
    return {Method.PROBE_RUN: runner.run, Method.PROBE_TOPOLOGY: lambda params: topology(agent, params),
            Method.PROBE_CANCEL: runner.cancel, Method.PROBE_PORT: rendezvous_port}
