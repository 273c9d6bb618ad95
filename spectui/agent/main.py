"""The agent's entry point: hello, then requests in, replies and events out, until stdin closes.

Run on the host as the bundle shipped by the client (package ``spectui_agent``) or, for
tests and the local transport, as ``python -m spectui.agent.main``.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from . import agentlog, facts
from .bench import methods as bench_methods, traffic
from .bootstrap import bundle_hash as _bundle_hash, exit_now, own_sources
from .gpu import methods as gpu_methods
from .gpu.select import open_source
from .probe import methods as probe_methods
from .protocol import DEFAULT_STATE_DIR, GPU_SOURCES, AgentError, Channel, Method, hello
from .servers import methods as server_methods, telemetry
from .servers.manager import ServerManager
from .source import methods as source_methods

log = logging.getLogger(__name__)


def bundle_hash():
    pkg = sys.modules.get(__package__)
    return getattr(pkg, "__bundle_hash__", None) or _bundle_hash(own_sources())


def agent_methods(agent):
    return {Method.PING: agent.ping, Method.HOST_FACTS: agent.host_facts, Method.AGENT_STATS: agent.agent_stats}


# Every request method comes from one of these, each ``methods(agent) -> {name: fn(params)}``.
METHOD_TABLES = (agent_methods, gpu_methods.methods, server_methods.methods, telemetry.methods,
                 source_methods.methods, traffic.methods, probe_methods.methods, bench_methods.methods)


class Agent(object):
    def __init__(self, args, channel):
        self.args = args
        self.channel = channel
        self.state_dir = os.path.expanduser(args.state)
        self.simulated = args.sim
        self._source = None
        self._source_lock = threading.Lock()
        self.pool = ThreadPoolExecutor(max_workers=16)
        self.servers = ServerManager(self.state_dir, channel, self.gpu_source, simulated=self.simulated)
        self.started = time.time()
        self._on_close = []
        self.methods = {}
        for table in METHOD_TABLES:
            self.methods.update(table(self))
        # Methods answered on the reading thread (cheap, and their timing matters).
        self.inline = {Method.PING, Method.AGENT_STATS}

    # --- GPU -------------------------------------------------------------------------
    def gpu_source(self, interval_s=1.0):
        with self._source_lock:
            if self._source is None:
                self._source = open_source(self.args.gpu_source, self.state_dir, simulated=self.simulated,
                                           interval_s=interval_s, python=sys.executable)
            return self._source

    # --- misc ------------------------------------------------------------------------
    def ping(self, params):
        return {"t": time.time(), "echo": params.get("echo")}

    def host_facts(self, params):
        d = facts.host_facts(self.gpu_source())
        d["simulated"] = self.simulated
        d["state_dir"] = self.state_dir
        d["agent_pid"] = os.getpid()
        return d

    def agent_stats(self, params):
        t = os.times()
        return {"cpu_user_s": t.user, "cpu_system_s": t.system, "wall_s": time.time() - self.started,
                "threads": threading.active_count()}

    # --- dispatch --------------------------------------------------------------------
    def handle(self, msg):
        req_id = msg.get("id")
        method = msg.get("method")
        fn = self.methods.get(method)
        if fn is None:
            self.channel.error(req_id, "unknown_method", "the agent has no method %r" % (method,))
            return
        params = msg.get("params") or {}
        if method in self.inline:
            self._run(fn, req_id, params)
        else:
            self.pool.submit(self._run, fn, req_id, params)

    def _run(self, fn, req_id, params):
        try:
            result = fn(params)
        except AgentError as exc:
            self.channel.error(req_id, exc.code, exc.message)
        except KeyError as exc:
            self.channel.error(req_id, "bad_params", "the request lacks the parameter %s" % exc)
        except Exception as exc:
            log.error("a request failed inside the agent", exc_info=True)
            self.channel.error(req_id, "internal", "%s: %s" % (type(exc).__name__, exc))
        else:
            self.channel.reply(req_id, result)

    def on_close(self, fn):
        """Run ``fn`` when the agent shuts down."""
        self._on_close.append(fn)

    def close(self):
        for fn in self._on_close:
            try:
                fn()
            except Exception:
                log.debug("a close hook failed", exc_info=True)
        self.servers.close()
        with self._source_lock:
            if self._source is not None:
                self._source.close()
        self.pool.shutdown(wait=False)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="spectui-agent")
    p.add_argument("--state", default=DEFAULT_STATE_DIR, help="host state folder")
    p.add_argument("--sim", action="store_true", help="this host is simulated")
    p.add_argument("--gpu-source", default="auto", choices=GPU_SOURCES)
    p.add_argument("--log-level", default=agentlog.DEFAULT_LEVEL, choices=sorted(agentlog.LEVELS),
                   help="send log records at this level and above to the client")
    return p.parse_args(argv)


def main(argv=None, stdin=None, stdout=None):
    import json

    args = parse_args(sys.argv[1:] if argv is None else argv)
    stdin = stdin if stdin is not None else sys.stdin.buffer
    channel = Channel(stdout)
    logged = agentlog.install(channel, args.log_level)
    agent = Agent(args, channel)

    def on_signal(signum, frame):
        agent.close()
        os._exit(0)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(sig, on_signal)
        except (ValueError, OSError):
            pass

    channel.send(hello(bundle_hash()))
    log.info("agent started: pid %d, Python %s, state %s%s", os.getpid(), sys.version.split()[0],
             agent.state_dir, " (simulated host)" if agent.simulated else "")
    try:
        for raw in iter(stdin.readline, b""):
            if channel.broken:
                break
            raw = raw.strip()
            if not raw:
                continue
            try:
                msg = json.loads(raw.decode("utf-8"))
                if not isinstance(msg, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                log.warning("an unreadable request line (%s): %.200r", exc, raw)
                channel.send({"type": "protocol_error", "message": "unreadable request line: %s" % exc})
                continue
            agent.handle(msg)
    finally:
        agent.close()
        agentlog.uninstall(logged)
    return 0


def run_and_exit(argv=None):
    """Entry for a shipped agent: never leave a thread (or the process) behind."""
    code = 1
    try:
        code = main(argv)
    finally:
        exit_now(code)


if __name__ == "__main__":
    run_and_exit()
