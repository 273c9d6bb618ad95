"""The agent's entry point: hello, then requests in, replies and events out, until stdin closes.

Run on the host as the bundle shipped by the client (package ``spectui_agent``) or, for
tests and the local transport, as ``python -m spectui.agent.main``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from . import agentlog
from .bootstrap import bundle_hash as _bundle_hash, exit_now, own_sources
from .protocol import DEFAULT_STATE_DIR, GPU_SOURCES, AgentError, Channel, Method, hello

log = logging.getLogger(__name__)


def bundle_hash():
    pkg = sys.modules.get(__package__)
    return getattr(pkg, "__bundle_hash__", None) or _bundle_hash(own_sources())


def agent_methods(agent):
    return {Method.PING: agent.ping, Method.HOST_FACTS: agent.host_facts, Method.AGENT_STATS: agent.agent_stats}


# Every request method comes from a table, ``methods(agent) -> {name: fn(params)}``: the agent's own and those of
# these modules, loaded with the agent (the console's first calls: facts, GPUs, servers, their telemetry) ...
FIRST_TABLES = ("gpu.methods", "servers.methods", "servers.telemetry")
# ... and those of these modules, each loaded with the first call of one of its methods (named by the prefix), so
# that the agent answers its hello and the first calls without them.
LATER_TABLES = (("source.", "source.methods"), ("traffic.", "bench.traffic"), ("probe.", "probe.methods"),
                ("bench.", "bench.methods"))


def method_table(module):
    """The ``methods`` function of the agent's module ``module`` (``bench.methods``), loaded now."""
    return importlib.import_module("." + module, __package__).methods


class LaterBenchmarks(object):
    """The benchmark runs on this host (the bench methods' ``BenchHost``, which the server manager asks which live
    runs measure a server) until the bench methods load: the first use loads them, and they put their own in its
    place."""

    def __init__(self, agent):
        self._agent = agent

    def __getattr__(self, name):
        self._agent.load_methods("bench.")
        return getattr(self._agent.servers.benchmarks, name)


class Agent(object):
    def __init__(self, args, channel):
        self.args = args
        self.channel = channel
        self.state_dir = os.path.expanduser(args.state)
        self.simulated = args.sim
        self._source = None
        self._source_lock = threading.Lock()
        self.pool = ThreadPoolExecutor(max_workers=16)
        from .servers.manager import ServerManager

        self.servers = ServerManager(self.state_dir, channel, self.gpu_source, simulated=self.simulated)
        self.servers.benchmarks = LaterBenchmarks(self)
        self.started = time.time()
        self._on_close = []
        self.methods = agent_methods(self)
        for module in FIRST_TABLES:
            self.methods.update(method_table(module)(self))
        self._later = dict(LATER_TABLES)  # the tables not loaded yet, by their methods' prefix
        self._later_lock = threading.RLock()
        # Methods answered on the reading thread (cheap, and their timing matters).
        self.inline = {Method.PING, Method.AGENT_STATS}

    # --- GPU -------------------------------------------------------------------------
    def gpu_source(self, interval_s=1.0):
        with self._source_lock:
            if self._source is None:
                from .gpu.select import open_source

                self._source = open_source(self.args.gpu_source, self.state_dir, simulated=self.simulated,
                                           interval_s=interval_s, python=sys.executable)
            return self._source

    # --- misc ------------------------------------------------------------------------
    def ping(self, params):
        return {"t": time.time(), "echo": params.get("echo")}

    def host_facts(self, params):
        from . import facts

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
    def load_methods(self, prefix):
        """Load the table of the methods named ``prefix...`` if it is not loaded yet."""
        with self._later_lock:
            module = self._later.get(prefix)
            if module is not None:
                self.methods.update(method_table(module)(self))
                del self._later[prefix]

    def load_all_methods(self):
        """Load every table not loaded yet; the methods, all of them."""
        for prefix, _ in LATER_TABLES:
            self.load_methods(prefix)
        return self.methods

    def method(self, name):
        """The function that answers method ``name``, its module loaded now if this is its first call; None: no
        such method."""
        fn = self.methods.get(name)
        if fn is None and isinstance(name, str):
            prefix = name.split(".", 1)[0] + "."
            if prefix in self._later:
                self.load_methods(prefix)
                fn = self.methods.get(name)
        return fn

    def handle(self, msg):
        req_id = msg.get("id")
        method = msg.get("method")
        fn = self.method(method)
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


class Stopped(BaseException):
    """SIGTERM or SIGHUP: raised in the main thread, whatever it was doing, so that it closes the agent."""


def parse_args(argv):
    p = argparse.ArgumentParser(prog="spectui-agent")
    p.add_argument("--state", default=DEFAULT_STATE_DIR, help="host state folder")
    p.add_argument("--sim", action="store_true", help="this host is simulated")
    p.add_argument("--gpu-source", default="auto", choices=GPU_SOURCES)
    p.add_argument("--log-level", default=agentlog.DEFAULT_LEVEL, choices=sorted(agentlog.LEVELS),
                   help="send log records at this level and above to the client")
    return p.parse_args(argv)


def serve(agent, channel, stdin):
    """Answer each request line of ``stdin`` until it ends (the console closed it) or the channel breaks."""
    import json

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


def main(argv=None, stdin=None, stdout=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    stdin = stdin if stdin is not None else sys.stdin.buffer
    channel = Channel(stdout)
    logged = agentlog.install(channel, args.log_level)
    agent = Agent(args, channel)

    closing = []

    def on_signal(signum, frame):
        # Unwind the main thread to its ``finally``, which closes the agent. Closing here, inside whatever the
        # signal interrupted, would wait for ever on a lock that code holds (the pool's, in ``submit``).
        if not closing:
            raise Stopped(signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(sig, on_signal)
        except (ValueError, OSError):
            pass

    try:
        channel.send(hello(bundle_hash()))
        log.info("agent started: pid %d, Python %s, state %s%s", os.getpid(), sys.version.split()[0],
                 agent.state_dir, " (simulated host)" if agent.simulated else "")
        serve(agent, channel, stdin)
    except Stopped:
        pass  # SIGTERM or SIGHUP: the agent closes as at the end of its input
    finally:
        closing.append(True)
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
