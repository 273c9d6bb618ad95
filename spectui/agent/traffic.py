"""Demo traffic: a light background load against whichever server is ready.

The console starts it only on the demo host, so that a newcomer sees the panels move; on a
real host spectui sends no requests unless asked. A few worker threads post short
``/generate`` requests made of built-in text (some of it repetitive, so n-gram speculation
has something to find), each worker sending its next request as soon as one returns. Worker
0 runs all the time; the others run ten seconds in thirty, so the load alternates between
stretches of exactly one request and of a few (the break-even figure needs the former). Everything stops with ``traffic.stop`` or when the agent ends.
"""

from __future__ import annotations

import json
import random
import threading
import time

from urllib.error import HTTPError, URLError
from urllib.request import Request, urlopen

from .protocol import AgentError
from .server_process import server_url

MAX_CONCURRENCY = 8
REQUEST_TIMEOUT_S = 60.0
TARGET_EVERY_S = 2.0
BURST_S = 10.0

PROMPTS = [
    "Speculative decoding drafts a few tokens with a cheap model and verifies them with the target model "
    "in one forward pass. Explain why the accept length decides whether it pays off.",
    "Write a short Python function that returns the n-th Fibonacci number, then explain it line by line.",
    "List the steps to profile a slow inference server: first measure, then find the bottleneck, then fix "
    "the bottleneck, then measure again. Repeat the list, then repeat it once more.",
    "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog. The quick brown "
    "fox jumps over the lazy dog. Continue the pattern.",
    "Summarise the trade-off between tensor parallelism over PCIe and over NVLink for a large mixture of "
    "experts model in three sentences.",
    "Translate into French: the server is ready, the model is loaded, and the first request has arrived.",
    "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):\n",
    "Count from one to twenty in words, separated by commas: one, two, three, four,",
]


class Traffic(object):
    def __init__(self, agent):
        self.agent = agent
        self._lock = threading.Lock()
        self._stop = None
        self._threads = []
        self._target = None
        self._target_at = 0.0
        self.concurrency = 0
        self.max_new_tokens = 160
        self.started_at = None
        self.requests = 0
        self.errors = 0
        self.tokens = 0
        self.last_error = None

    # --- methods ---------------------------------------------------------------------------
    def start(self, params):
        try:
            concurrency = int(params.get("concurrency", 2))
            max_new = int(params.get("max_new_tokens", 160))
        except (TypeError, ValueError):
            raise AgentError("bad_params", "concurrency and max_new_tokens must be whole numbers")
        if not 1 <= concurrency <= MAX_CONCURRENCY:
            raise AgentError("bad_params", "demo traffic concurrency must be between 1 and %d, not %d"
                             % (MAX_CONCURRENCY, concurrency))
        if not 1 <= max_new <= 1024:
            raise AgentError("bad_params", "max_new_tokens must be between 1 and 1024, not %d" % max_new)
        self._halt()
        with self._lock:
            stop = threading.Event()
            self._stop = stop
            self.concurrency = concurrency
            self.max_new_tokens = max_new
            self.started_at = time.time()
            self._threads = []
            for i in range(concurrency):
                t = threading.Thread(target=self._worker, args=(i, stop), name="demo-traffic-%d" % i)
                t.daemon = True
                t.start()
                self._threads.append(t)
        return self.status({})

    def stop(self, params):
        self._halt()
        return self.status({})

    def status(self, params):
        with self._lock:
            running = self._stop is not None and not self._stop.is_set()
            target = self._target
            return {
                "running": running,
                "concurrency": self.concurrency if running else 0,
                "server": target[0] if target else None,
                "port": target[2] if target else None,
                "requests": self.requests,
                "errors": self.errors,
                "tokens": self.tokens,
                "last_error": self.last_error,
                "started_at": self.started_at if running else None,
            }

    # --- workers -----------------------------------------------------------------------------
    def _halt(self):
        with self._lock:
            stop, threads = self._stop, self._threads
            self._threads = []
        if stop is not None:
            stop.set()
        for t in threads:
            t.join(0.2)

    def _agent_gone(self):
        channel = getattr(self.agent, "channel", None)
        return bool(channel is not None and getattr(channel, "broken", False))

    def _ready_server(self):
        """(name, host, port) of the ready server, newest first; looked up at most every 2 s."""
        with self._lock:
            if time.monotonic() - self._target_at < TARGET_EVERY_S:
                return self._target
        target = None
        try:
            servers = self.agent.servers.list({})["servers"]
        except Exception as exc:  # the manager is closing, or a record is unreadable
            servers = []
            self.last_error = "cannot list servers: %s" % exc
        ready = [s for s in servers if s.get("state") == "ready" and s.get("port")]
        if ready:
            ready.sort(key=lambda s: s.get("ready_at") or 0, reverse=True)
            s = ready[0]
            target = (s["name"], s.get("host"), int(s["port"]))
        with self._lock:
            self._target = target
            self._target_at = time.monotonic()
        return target

    def _worker(self, index, stop):
        rnd = random.Random(1000 + index)
        while not stop.is_set() and not self._agent_gone():
            if index > 0 and int(time.time() // BURST_S) % 3 != 0:
                stop.wait(0.5)
                continue
            target = self._ready_server()
            if target is None:
                stop.wait(1.0)
                continue
            name, host, port = target
            prompt = rnd.choice(PROMPTS)
            body = {
                "text": prompt,
                "sampling_params": {"max_new_tokens": rnd.randint(self.max_new_tokens // 2, self.max_new_tokens),
                                    "temperature": 0.0 if rnd.random() < 0.5 else 0.7},
            }
            url = server_url(host, port, "/generate")
            req = Request(url, data=json.dumps(body).encode("utf-8"), headers={"Content-Type": "application/json"})
            try:
                with urlopen(req, timeout=REQUEST_TIMEOUT_S) as resp:
                    out = json.loads(resp.read().decode("utf-8"))
                meta = (out.get("meta_info") or {}) if isinstance(out, dict) else {}
                with self._lock:
                    self.requests += 1
                    self.tokens += int(meta.get("completion_tokens") or 0)
            except (HTTPError, URLError, OSError, ValueError) as exc:
                with self._lock:
                    self.errors += 1
                    self.last_error = "%s: %s" % (name, exc)
                    self._target_at = 0.0  # look again: the server may have gone
                stop.wait(1.0)
                continue
            # back to back: the load is one request (worker 0 alone) or exactly N, rarely in between
            stop.wait(rnd.uniform(0.0, 0.02))


def methods(agent):
    traffic = Traffic(agent)
    on_close = getattr(agent, "on_close", None)
    if on_close is not None:
        on_close(lambda: traffic.stop({}))
    return {
        "traffic.start": traffic.start,
        "traffic.stop": traffic.stop,
        "traffic.status": traffic.status,
    }
