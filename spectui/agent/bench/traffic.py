"""Demo traffic: a steady load of varied requests against whichever server is ready.

The console starts it only on the demo host, so that a newcomer sees the panels move; on a
real host spectui sends no requests unless asked. ``traffic.start`` runs exactly
``concurrency`` workers (1 to 16, default 1); each sends its next request as soon as the last
one returns, so the server holds that many requests at once. The prompts come from a seeded
workload generator (task templates x topics x audiences x lengths: thousands of distinct
prompts, a few of them repetitive) and most are sampled at a chat temperature, some greedy,
as a real service's traffic is: an n-gram trie cannot learn the answers by heart.
Requests stream, so that ``traffic.stop`` (or the agent's end) closes them at once and the
server aborts them. ``seed`` picks the workload; ``seeded`` gives each sampled request a
``sampling_seed`` too, for a run that repeats.

``scenario`` ``shift`` (the demo's "workload changes" scenario) starts with a recurring job instead:
a small pool of the same requests, answered greedily, as a templated extraction or code-edit
service sends them. N-gram speculation thrives on it (the trie has seen each answer before); after
``shift_after_s`` the traffic turns into the varied chat above and its acceptance collapses.
Standard library only.
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time

from ..protocol import FINAL_STATES, OWN_ORIGINS, AgentError, Method, ServerState
from ..servers.process import connect_host
from .sse import sse_data

MAX_CONCURRENCY = 16
DEFAULT_CONCURRENCY = 1
DEFAULT_MAX_NEW_TOKENS = 160
REQUEST_TIMEOUT_S = 60.0
TARGET_EVERY_S = 1.0
GREEDY_SHARE = 0.2  # the rest is sampled
TEMPERATURES = (0.6, 0.7, 0.7, 0.8)
TOP_P = 0.95
SCENARIOS = ("steady", "shift")
SHIFT_AFTER_S = 120.0
SHIFT_AFTER_RANGE = (5.0, 3600.0)
RECURRING_POOL = 6  # distinct requests of the recurring job

# --- the workload -------------------------------------------------------------------------------
TOPICS = (
    "speculative decoding", "tensor parallelism", "the KV cache", "prefix caching", "mixture of experts models",
    "the all-reduce over PCIe", "continuous batching", "CUDA graphs", "quantisation to eight bits",
    "the attention kernel", "a rabbit who is always late", "a tea party that never ends", "a garden of talking flowers",
    "a cat that can vanish", "a queen who shouts at everyone", "a long fall down a well", "a key to a tiny door",
    "a pool of tears", "a race where everybody wins", "a caterpillar on a mushroom", "the history of the printing press",
    "how bread rises", "why the sky is blue", "the water cycle", "how a bicycle stays upright", "the moon's phases",
    "compound interest", "a trip by night train", "learning to play the piano", "a city in the rain",
    "keeping bees", "the first day at a new school", "a lighthouse keeper", "a map with a missing island",
    "an old clock shop", "a letter that arrives fifty years late", "chess openings", "making a good cup of tea",
    "the rules of cricket", "a storm at sea", "planting an orchard", "a robot that learns to paint",
    "a library that never closes", "winter in the mountains", "a market on the river", "the last train home",
    "a dragon who is afraid of the dark", "how vaccines work", "the life of a star", "why cats purr",
)
AUDIENCES = ("a child of eight", "a new engineer", "a busy manager", "a curious student", "an old friend",
             "a sceptical reviewer", "someone who has never heard of it", "an expert in the field")
STYLES = ("in plain words", "with one good example", "as a short story", "as a list of steps", "in a friendly tone",
          "very briefly", "in some detail", "with a little humour")
LANGUAGES = ("French", "German", "Spanish", "Italian", "Dutch", "Portuguese")
NAMES = ("Alice", "the Rabbit", "the Duchess", "the Hatter", "the Mouse", "the Dodo", "Bill", "the Queen", "Dinah",
         "the Caterpillar", "the Gryphon", "the King")
PLACES = ("by the river bank", "in a long low hall", "at the bottom of a well", "in the garden", "at the tea table",
          "in the wood", "on the sea shore", "in the kitchen")
OPENINGS = (
    "Alice was beginning to get very tired of sitting by her sister on the bank.",
    "There was nothing so very remarkable in that, and she went on.",
    "The rabbit hole went straight on like a tunnel for some way, and then dipped suddenly down.",
    "Either the well was very deep, or she fell very slowly, for she had plenty of time as she went down.",
    "It was all very well to say drink me, but the wise little Alice was not going to do that in a hurry.",
    "Soon her eye fell on a little glass box that was lying under the table.",
    "The first question of course was, how to get dry again.",
    "They were indeed a queer looking party that assembled on the bank.",
)
CODE_TASKS = (
    ("fib", "returns the n-th Fibonacci number"), ("is_prime", "tells whether a number is prime"),
    ("word_count", "counts the words in a text"), ("merge", "merges two sorted lists"),
    ("flatten", "flattens a nested list"), ("median", "returns the median of a list of numbers"),
    ("slugify", "turns a title into a URL slug"), ("retry", "retries a call with exponential back-off"),
    ("chunks", "splits a list into chunks of n items"), ("dedupe", "removes duplicates and keeps the order"),
)

TEMPLATES = (
    "Explain {topic} to {audience}, {style}.",
    "Write a short story about {topic}, set {place}. The main character is {name}.",
    "Summarise what is known about {topic} in {n} points, {style}.",
    "Give me {n} questions that {audience} might ask about {topic}, and answer each one briefly.",
    "Compare {topic} with {topic2}. Which matters more, and why?",
    "Translate into {language}: {opening}",
    "Continue this passage in the same style, for a few paragraphs:\n\n{opening} {opening2}",
    "Here are my notes on {topic}:\n{notes}\nTurn them into a clear paragraph {style}.",
    "Write a Python function `{fn}(...)` that {task}. Add a docstring and two tests.",
    "Review this code and suggest improvements:\n\n{code}",
    "What would {name} say about {topic}? Answer in {name}'s voice, {style}.",
    "Plan a lesson on {topic} for {audience}: goals, {n} activities, and a short quiz.",
    "Write a letter from {name} to {name2} about {topic}.",
    "List the steps to {task_phrase}, then check each step once more and list them again.",
    "Add more lines like these, one per line:\n{lines}",
)


def _code_block(rng, fn):
    lines = ["def %s(items):" % fn, "    result = []", "    for item in items:"]
    for _ in range(rng.randint(1, 3)):
        lines.append("        if item %s %d:" % (rng.choice(("<", ">", "==", "!=")), rng.randint(0, 99)))
        lines.append("            result.append(item)")
    lines.append("    return result")
    return "\n".join(lines)


class Workload(object):
    """A seeded stream of varied prompts and sampling knobs (one per worker)."""

    def __init__(self, seed=0, max_new_tokens=DEFAULT_MAX_NEW_TOKENS, seeded=False):
        self.rng = random.Random("spectui-demo-traffic:%s" % seed)
        self.max_new_tokens = max_new_tokens
        self.seeded = seeded  # sampled requests carry a sampling_seed (a reproducible run)
        self.recurring = None  # the recurring job's requests (scenario "shift", before the shift)

    def recurring_job(self, pool=RECURRING_POOL):
        """From now on, cycle through ``pool`` fixed requests, each answered greedily."""
        rng = random.Random("spectui-demo-recurring")  # the same job on every worker
        saved, self.rng = self.rng, rng
        self.recurring = [{"text": self.prompt(), "sampling_params": {"max_new_tokens": self.max_new_tokens,
                                                                       "temperature": 0.0}, "stream": True}
                          for _ in range(pool)]
        self.rng = saved

    def prompt(self):
        rng = self.rng
        template = rng.choice(TEMPLATES)
        fn, task = rng.choice(CODE_TASKS)
        topic, topic2 = rng.sample(TOPICS, 2)
        name, name2 = rng.sample(NAMES, 2)
        notes = "\n".join("- %s %s" % (rng.choice(("about", "on", "why", "how", "when")), rng.choice(TOPICS))
                          for _ in range(rng.randint(2, 6)))
        text = template.format(
            topic=topic, topic2=topic2, audience=rng.choice(AUDIENCES), style=rng.choice(STYLES),
            place=rng.choice(PLACES), name=name, name2=name2, n=rng.randint(3, 9), language=rng.choice(LANGUAGES),
            opening=rng.choice(OPENINGS), opening2=rng.choice(OPENINGS), notes=notes, fn=fn, task=task,
            code=_code_block(rng, fn), task_phrase="explain %s to %s" % (topic, rng.choice(AUDIENCES)),
            line=rng.choice(("assert %s(%d) == %d" % (fn, rng.randint(0, 9), rng.randint(0, 99)),
                             "%s = %s(%s)" % (rng.choice(("x", "y", "total", "result")), fn, rng.choice(NAMES)),
                             "| %s | %d | %d |" % (rng.choice(NAMES), rng.randint(0, 99), rng.randint(0, 99)))),
            lines="\n".join("assert %s(%d) == %d" % (fn, rng.randint(0, 9), rng.randint(0, 99))
                             for _ in range(rng.randint(3, 8))),
        )
        # some requests carry context before the question, as chat turns and documents do
        if rng.random() < 0.35:
            context = " ".join(rng.choice(OPENINGS) for _ in range(rng.randint(1, 6)))
            text = "Context: %s\n\n%s" % (context, text)
        return text

    def sampling(self):
        rng = self.rng
        lo = max(1, self.max_new_tokens // 2)
        params = {"max_new_tokens": rng.randint(lo, max(lo, self.max_new_tokens))}
        if rng.random() < GREEDY_SHARE:
            params["temperature"] = 0.0
        else:
            params["temperature"] = rng.choice(TEMPERATURES)
            params["top_p"] = TOP_P
            if self.seeded:
                params["sampling_seed"] = rng.randrange(1 << 31)
        return params

    def request(self):
        """The body of one ``/generate`` request (streaming)."""
        if self.recurring:
            return dict(self.rng.choice(self.recurring))
        return {"text": self.prompt(), "sampling_params": self.sampling(), "stream": True}


# --- the workers --------------------------------------------------------------------------------
RECENT_PEAK_S = 2.0  # how long a request in flight still counts as the traffic's in what a server reports


class Target(object):
    """Where the traffic goes: the server the console watches (``name``), or, where the console names none
    (``named`` false), the newest ready server spectui started. ``explicit``: the operator chose this server
    on the console, so it gets traffic even when spectui did not start it."""

    def __init__(self, name=None, named=False, explicit=False):
        self.name = name
        self.named = named
        self.explicit = explicit
        self.pid = None      # the chosen external server's process: another one under its name is not chosen
        self.seen = False    # the named server was seen live: its absence now means it stopped


def _own(record):
    return record.get("origin") in OWN_ORIGINS


class Traffic(object):
    def __init__(self, agent):
        self.agent = agent
        self._lock = threading.Lock()
        self._stop = None
        self._threads = []
        self._conns = {}  # connection -> the server name it talks to
        self._want = Target()
        self._target = None   # (name, host, port) requests go to now, or None
        self._why = None      # why nothing is sent, in one sentence
        self._target_at = 0.0
        self._runs = 0
        self._config = None
        self._recent = {}     # server name -> (peak in flight, monotonic time of the last change)
        self.concurrency = 0
        self.max_new_tokens = DEFAULT_MAX_NEW_TOKENS
        self.started_at = None
        self.scenario = "steady"
        self.shift_at = None  # time.time() of the scenario's shift
        self.requests = 0
        self.errors = 0
        self.tokens = 0
        self.in_flight = 0
        self.last_error = None

    # --- methods ---------------------------------------------------------------------------
    def start(self, params):
        """Start (or re-aim) the traffic. ``server``: the server the console watches, the only one that gets
        requests (null: none); without it, the newest ready server spectui started. ``explicit``: the
        operator chose that server, so it gets requests even when spectui did not start it. Called again
        with only another server, the workers keep going and aim at it."""
        params = params or {}
        try:
            concurrency = int(params.get("concurrency", DEFAULT_CONCURRENCY))
            max_new = int(params.get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS))
            seed = int(params.get("seed", 0))
        except (TypeError, ValueError):
            raise AgentError("bad_params", "concurrency, max_new_tokens and seed must be whole numbers")
        seeded = bool(params.get("seeded", False))
        scenario = params.get("scenario", "steady")
        if scenario not in SCENARIOS:
            raise AgentError("bad_params", "demo traffic scenario must be one of %s, not %r"
                             % (", ".join(SCENARIOS), scenario))
        try:
            shift_after = float(params.get("shift_after_s", SHIFT_AFTER_S))
        except (TypeError, ValueError):
            raise AgentError("bad_params", "shift_after_s must be a number of seconds")
        if not SHIFT_AFTER_RANGE[0] <= shift_after <= SHIFT_AFTER_RANGE[1]:
            raise AgentError("bad_params", "shift_after_s must be between %g and %g seconds, not %g"
                             % (SHIFT_AFTER_RANGE + (shift_after,)))
        if not 1 <= concurrency <= MAX_CONCURRENCY:
            raise AgentError("bad_params", "demo traffic concurrency must be between 1 and %d, not %d"
                             % (MAX_CONCURRENCY, concurrency))
        if not 1 <= max_new <= 1024:
            raise AgentError("bad_params", "max_new_tokens must be between 1 and 1024, not %d" % max_new)
        name = params.get("server")
        if name is not None and not isinstance(name, str):
            raise AgentError("bad_params", "server must be a server's name, not %r" % (name,))
        want = Target(name or None, "server" in params, bool(params.get("explicit")) and bool(name))
        config = (concurrency, max_new, seed, seeded, scenario, shift_after)
        with self._lock:
            running = self._stop is not None and not self._stop.is_set()
            if running and config == self._config:  # the same traffic, perhaps to another server
                self._aim(want)
                conns = [c for c, n in self._conns.items() if n != want.name or not want.named]
            else:
                conns = None
        if conns is not None:
            _cut(conns)
            self._resolve()
            return self.status({})
        self._halt()
        with self._lock:
            self._aim(want)
            stop = threading.Event()
            self._stop = stop
            self._runs += 1
            self._config = config
            self.concurrency = concurrency
            self.max_new_tokens = max_new
            self.started_at = time.time()
            self.scenario = scenario
            self.shift_at = self.started_at + shift_after if scenario == "shift" else None
            self._threads = []
        self._resolve()
        with self._lock:
            for i in range(concurrency):
                work = Workload("%d:%d:%d" % (seed, self._runs, i), max_new, seeded)
                if scenario == "shift":
                    work.recurring_job()
                t = threading.Thread(target=self._worker, args=(work, stop), name="demo-traffic-%d" % i)
                t.daemon = True
                t.start()
                self._threads.append(t)
        return self.status({})

    def _aim(self, want):
        """Take ``want`` as the target (under the lock); the next look resolves it."""
        old = self._want
        if old.named and want.named and old.name == want.name and old.explicit == want.explicit:
            return
        self._want = want
        self._target = None
        self._why = None
        self._target_at = 0.0

    def stop(self, params):
        self._halt()
        return self.status({})

    def status(self, params):
        with self._lock:
            running = self._stop is not None and not self._stop.is_set()
            target = self._target
            want = self._want
            return {
                "running": running,
                "concurrency": self.concurrency if running else 0,
                "in_flight": self.in_flight,
                "named": want.named,                          # the console named the server (else: spectui's newest)
                "target": want.name if want.named else None,  # the server the console named
                "explicit": want.explicit,
                "server": target[0] if target else None,      # the server requests go to now
                "port": target[2] if target else None,
                "sending": bool(running and target),
                "why": self._why if running and not target else None,
                "requests": self.requests,
                "errors": self.errors,
                "tokens": self.tokens,
                "last_error": self.last_error,
                "started_at": self.started_at if running else None,
                "scenario": self.scenario if running else None,
                "phase": self._phase() if running else None,
            }

    def in_flight_to(self, name):
        """Requests this traffic has had in flight to server ``name`` lately (the most at once over the last
        :data:`RECENT_PEAK_S`): what a server's own count of running requests may still hold of it."""
        with self._lock:
            now = sum(1 for n in self._conns.values() if n == name)
            peak, at = self._recent.get(name, (0, 0.0))
            return max(now, peak if time.monotonic() - at <= RECENT_PEAK_S else 0)

    def _phase(self):
        """``recurring`` before the shift, ``varied`` after it (and always, in the steady scenario)."""
        return "recurring" if self.shift_at is not None and time.time() < self.shift_at else "varied"

    # --- workers -----------------------------------------------------------------------------
    def _halt(self):
        with self._lock:
            stop, threads = self._stop, self._threads
            conns = list(self._conns)
            self._threads = []
        if stop is not None:
            stop.set()
        _cut(conns)
        for t in threads:
            t.join(2.0)

    def _agent_gone(self):
        channel = getattr(self.agent, "channel", None)
        return bool(channel is not None and getattr(channel, "broken", False))

    def _ready_server(self):
        """(name, host, port) of the server to send to now, or None (``_why`` says why); looked up at most
        every ``TARGET_EVERY_S``."""
        with self._lock:
            if time.monotonic() - self._target_at < TARGET_EVERY_S:
                return self._target
        return self._resolve()

    def _resolve(self):
        with self._lock:
            want = self._want
        try:
            records = self.agent.servers.serving()
        except Exception as exc:  # the manager is closing, or a record is unreadable
            records = None
            why = "waiting: the servers cannot be read (%s)" % exc
        target = None
        if records is not None:
            target, why = self._choose(want, records)
        with self._lock:
            if self._want is want:
                self._target, self._why = target, why
                self._target_at = time.monotonic()
        return target

    @staticmethod
    def _choose(want, records):
        """``((name, host, port) or None, why)``: where ``want`` sends requests among ``records`` (the agent's
        live servers), never to a server spectui did not start unless the operator chose it."""
        if not want.named:
            ready = [r for r in records.values() if _own(r) and r.get("state") == ServerState.READY and r.get("port")]
            if not ready:
                return None, "waiting: no server spectui started is ready"
            r = max(ready, key=lambda r: r.get("ready_at") or 0)
            return (r["name"], r.get("host"), int(r["port"])), None
        name = want.name
        if name is None:
            return None, "waiting: no server is watched"
        r = records.get(name)
        if r is None or r.get("state") in FINAL_STATES:
            return None, ("paused: %s stopped" % name) if want.seen else ("waiting: %s is not running" % name)
        want.seen = True
        if not _own(r):
            if not want.explicit:
                return None, "not sending: %s was not started by spectui" % name
            if want.pid is None:
                want.pid = r.get("pid")
            elif r.get("pid") != want.pid:
                return None, ("not sending: %s is another process now (pid %s), not the one chosen"
                              % (name, r.get("pid")))
        if r.get("state") != ServerState.READY or not r.get("port"):
            return None, "waiting: %s is %s" % (name, r.get("state"))
        return (name, r.get("host"), int(r["port"])), None

    def _worker(self, work, stop):
        while not stop.is_set() and not self._agent_gone():
            target = self._ready_server()
            if target is None:
                stop.wait(TARGET_EVERY_S / 2)
                continue
            name, host, port = target
            if work.recurring and self._phase() == "varied":
                work.recurring = None  # the shift: the varied chat from here on
            try:
                tokens = self._one(name, host, port, work.request(), stop)
                with self._lock:
                    self.requests += 1
                    self.tokens += tokens
            except (OSError, ValueError, http.client.HTTPException) as exc:
                if stop.is_set():
                    break
                with self._lock:
                    aimed = self._target is not None and self._target[0] == name
                    if aimed:
                        self.errors += 1
                        self.last_error = "%s: %s" % (name, exc)
                    self._target_at = 0.0  # look again: the server may have gone
                if aimed:
                    stop.wait(1.0)

    def _one(self, name, host, port, body, stop):
        """Send one streaming request and read it to the end; returns its completion tokens."""
        conn = http.client.HTTPConnection(connect_host(host), port, timeout=REQUEST_TIMEOUT_S)
        with self._lock:
            if stop.is_set() or self._target is None or self._target[0] != name:
                raise OSError("stopped")
            self._conns[conn] = name
            self.in_flight += 1
        try:
            conn.request("POST", "/generate", body=json.dumps(body).encode("utf-8"),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            if resp.status != 200:
                raise ValueError("HTTP %d: %s" % (resp.status, resp.read(300).decode("utf-8", "replace")))
            tokens = 0
            for data in sse_data(resp):
                meta = json.loads(data.decode("utf-8")).get("meta_info") or {}
                tokens = int(meta.get("completion_tokens") or tokens)
            return tokens
        finally:
            with self._lock:
                self._ended(name)
                self._conns.pop(conn, None)
                self.in_flight -= 1
            conn.close()

    def _ended(self, name):
        """A request to ``name`` ends: keep how many were in flight until now (under the lock)."""
        before = sum(1 for n in self._conns.values() if n == name)
        peak, at = self._recent.get(name, (0, 0.0))
        t = time.monotonic()
        if before >= peak or t - at > RECENT_PEAK_S:
            self._recent[name] = (before, t)


def _cut(conns):
    """End requests in flight now: the server aborts them."""
    for conn in conns:
        sock = getattr(conn, "sock", None)
        try:
            if sock is not None:
                sock.shutdown(2)
        except OSError:
            pass


def methods(agent):
    traffic = Traffic(agent)
    agent.traffic = traffic  # server telemetry asks it which requests in flight are its own
    on_close = getattr(agent, "on_close", None)
    if on_close is not None:
        on_close(lambda: traffic.stop({}))
    return {
        Method.TRAFFIC_START: traffic.start,
        Method.TRAFFIC_STOP: traffic.stop,
        Method.TRAFFIC_STATUS: traffic.status,
    }
