"""The agent's entry point: hello, then requests in, replies and events out, until stdin closes.

Run on the host as the bundle shipped by the client (package ``spectui_agent``) or, for
tests and the local transport, as ``python -m spectui.agent.main``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from . import facts, launch_help
from .bootstrap import bundle_hash as _bundle_hash, exit_now, own_sources
from .gpu_select import SOURCES, open_source
from .gpu_stream import GpuStream
from .protocol import AgentError, Channel, hello
from .server_manager import ServerManager

DEFAULT_STATE = "~/.cache/spectui"

# Agent modules that register request methods (see Agent.__init__).
FEATURE_MODULES = ["server_telemetry", "source_methods", "traffic", "probe_methods", "bench_methods"]


def bundle_hash():
    pkg = sys.modules.get(__package__)
    return getattr(pkg, "__bundle_hash__", None) or _bundle_hash(own_sources())


class Agent(object):
    def __init__(self, args, channel):
        self.args = args
        self.channel = channel
        self.state_dir = os.path.expanduser(args.state)
        self.simulated = args.sim
        self._source = None
        self._source_lock = threading.Lock()
        self.stream = None
        self.pool = ThreadPoolExecutor(max_workers=16)
        self.servers = ServerManager(self.state_dir, channel, self.gpu_source, simulated=self.simulated)
        self.started = time.time()
        self._on_close = []
        self.methods = {
            "ping": self.ping,
            "host.facts": self.host_facts,
            "gpu.sample": self.gpu_sample,
            "gpu.subscribe": self.gpu_subscribe,
            "gpu.unsubscribe": self.gpu_unsubscribe,
            "agent.stats": self.agent_stats,
            "python.sglang": launch_help.sglang_version,
            "launch.help": launch_help.launch_help,
            "launch.parse": launch_help.launch_parse,
            "servers.list": lambda p: self.servers.list(p),
            "server.start": lambda p: self.servers.start(p),
            "server.stop": lambda p: self.servers.stop(p),
            "server.switch": lambda p: self.servers.switch(p),
            "server.wait": lambda p: self.servers.wait(p),
            "server.logs": lambda p: self.servers.logs(p),
            "server.plan_stop": lambda p: self.servers.plan_stop(p),
            "server.adopt": lambda p: self.servers.adopt_external(p),
            "server.plan_switch": lambda p: self.servers.plan_switch(p),
        }
        # Feature modules add their methods: each has ``methods(agent) -> {name: fn(params)}``.
        for name in FEATURE_MODULES:
            module = importlib.import_module("." + name, __package__)
            self.methods.update(module.methods(self))
        # Methods answered on the reading thread (cheap, and their timing matters).
        self.inline = {"ping", "agent.stats"}

    # --- GPU -------------------------------------------------------------------------
    def gpu_source(self, interval_s=1.0):
        with self._source_lock:
            if self._source is None:
                self._source = open_source(self.args.gpu_source, self.state_dir, simulated=self.simulated,
                                           interval_s=interval_s, python=sys.executable)
            return self._source

    def gpu_sample(self, params):
        stream = GpuStream(self.gpu_source(), self.channel)
        return stream.frame()

    def gpu_subscribe(self, params):
        interval = float(params.get("interval_s", 1.0))
        if interval < 0.1:
            raise AgentError("bad_params", "the GPU telemetry interval must be at least 0.1 s, not %g s" % interval)
        if self.stream is not None:
            self.stream.stop()
        self.stream = GpuStream(self.gpu_source(interval), self.channel, interval)
        self.stream.start()
        return {"source": self.stream.source.name, "interval_s": self.stream.interval_s,
                "message": getattr(self.stream.source, "message", None)}

    def gpu_unsubscribe(self, params):
        if self.stream is not None:
            self.stream.stop()
            self.stream = None
        return {"stopped": True}

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
                pass
        self.servers.close()
        if self.stream is not None:
            self.stream.stop()
        with self._source_lock:
            if self._source is not None:
                self._source.close()
        self.pool.shutdown(wait=False)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="spectui-agent")
    p.add_argument("--state", default=DEFAULT_STATE, help="host state folder")
    p.add_argument("--sim", action="store_true", help="this host is simulated")
    p.add_argument("--gpu-source", default="auto", choices=SOURCES)
    return p.parse_args(argv)


def main(argv=None, stdin=None, stdout=None):
    import json

    args = parse_args(sys.argv[1:] if argv is None else argv)
    stdin = stdin if stdin is not None else sys.stdin.buffer
    channel = Channel(stdout)
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
                channel.send({"type": "protocol_error", "message": "unreadable request line: %s" % exc})
                continue
            agent.handle(msg)
    finally:
        agent.close()
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
