"""Server frames: throughput, per-stream speed, accept length and rate, latency and load of
each running server.

Read next to the server, from three places: ``/metrics`` (counters, gauges and histograms,
parsed by prometheus_client), the server's log (Decode lines of any era), and
``/server_info`` or ``/get_server_info`` (version, speculative settings, internal states).
Which source each figure takes, and the rules that keep it from lying (no zero from a window
that saw no completion, stale only when nothing was decoded), are in ``servers.figures``.

Every figure carries ``source``, ``window_s`` (the span it was measured over, where it has
one) and ``age_s`` (how old the newest data behind it is). The accept rate comes first in
the formula of the server's release (``servers.releases``), the other formula after it;
``cumulative`` is the server's own figure since start or the last /flush_cache.
"""

from __future__ import annotations

import functools
import json
import threading
import time

from . import figures as lf
from .bounded_http import FetchFailed, HttpStatus, fetch
from ..logs.follow import LogStream
from ..threads import name_this_thread
from .metrics import MetricsUnavailable, MetricsWindow, histogram_mean, parse_metrics, quantile_bound
from .proc_table import cmdline
from .spec_settings import NUM_STEPS, launch_settings
from .process import api_key_in, server_url
from .releases import FORMULA_INCL_BONUS, FORMULAS, accept_rate_formula, old_formula_width, rate_from_length
from .width import WidthChanges, width_now
from ..protocol import (INFO_PATHS, METRICS_PATH, OWN_ORIGINS, SERVING_STATES, AgentError, Method, ServerState,
                        telemetry_interval)


HTTP_DEADLINE_S = 2.0  # for the whole answer, not each byte: a server that drips is cut here
METRICS_MAX_BYTES = 8 << 20
SERVER_INFO_MAX_BYTES = 1 << 20
SERVER_INFO_EVERY_S = 5.0


def _get(url, max_bytes, headers=None):
    return fetch(url, max_bytes, HTTP_DEADLINE_S, headers=headers)


NO_SPECULATION = {"algorithm": None, "num_steps": None, "topk": None, "draft_tokens": None}


def speculative_settings(info, gauges):
    """The speculative settings a frame shows: none at all when nothing speculates
    (:func:`~spec_settings.launch_settings`). The live draft width (``sglang:spec_num_draft_tokens``,
    which adaptive speculation changes) comes before the launch value."""
    launch = launch_settings(info)
    if launch is None:
        return dict(NO_SPECULATION)
    draft_tokens = gauges.get("spec_num_draft_tokens") or launch["draft_tokens"]
    if isinstance(draft_tokens, float) and draft_tokens.is_integer():
        draft_tokens = int(draft_tokens)
    out = {"algorithm": launch["algorithm"], "num_steps": launch["num_steps"], "topk": launch["topk"],
           "draft_tokens": draft_tokens}
    adaptive = active_width(info, gauges)
    if adaptive is not None:
        out["adaptive"] = adaptive
    return out


def active_width(info, gauges):
    """The step count adaptive speculation runs now, or None where the server does not say.

    SGLang 0.5.23 changes ``speculative_num_steps`` at run time when ``/server_info`` says
    ``speculative_adaptive`` (the resolved value: false where SGLang turned it off, sglang 0.5.23
    wheel, sglang/srt/arg_groups/speculative_hook.py:1374-1389), and reports the active count in
    the ``sglang:spec_num_steps`` gauge ("Currently active speculative_num_steps",
    sglang/srt/observability/metrics_collector.py:535-537), read from the worker at each decode
    log with ``spec_num_draft_tokens`` (metrics_reporter.py:518-540 and 1016-1019). Both gauges
    read 0 until the first decode log: that is no report (0 steps, drafting off, has 1 draft token).
    ``/server_info``'s ``speculative_num_steps`` stays the launch value."""
    if info.get("speculative_adaptive") is not True:
        return None
    steps, tokens = gauges.get("spec_num_steps"), gauges.get("spec_num_draft_tokens")
    if steps is None or (not steps and not tokens):
        return None
    return {"steps": int(steps), "draft_tokens": int(tokens) if tokens else None, "source": "metrics-gauge",
            "launch_steps": info.get(NUM_STEPS)}


def _step_series(snap):
    """``{"step_series": ...}``: the labelled step counters of ``snap`` for step costs, or ``{}`` when the server
    publishes none of them (or /metrics was not read)."""
    steps = snap.step_pairs() if snap is not None else None
    return {"step_series": steps} if steps else {}


class ServerTelemetry(object):
    """Builds the frames of one server. ``ours()``, when given, counts the requests spectui has in flight to
    it (this agent's demo traffic, benchmark runs): the frame says how many of the server's own running and
    queued requests are not those (``foreign_reqs``)."""

    def __init__(self, record, clock=time.monotonic, ours=None):
        self.name = record["name"]
        self.ours = ours
        self.base = server_url(record.get("host"), record["port"])
        self.clock = clock
        self.window = MetricsWindow(span_s=lf.HISTORY_S)
        self.log = LogStream(record["log_path"], tail_bytes=0) if record.get("log_path") else None
        self.pid = record.get("pid")
        self.info = None
        self.info_at = None
        self.info_path = None
        self.seq = 0
        self.read_at = None
        self.read_s = None
        self.last_decode = None
        self.last_decode_at = None
        self.log_gap = None
        self.changes = lf.Changes()
        self.widths = WidthChanges()
        self.hold_tput = lf.Holder()
        self.hold_stream = lf.Holder()
        self.hold_accept = lf.Holder()
        self.sources = {}

    # --- sources -------------------------------------------------------------------------
    def _auth(self):
        """``(headers,)`` that carry the server's ``--api-key``, read from its command line now (SGLang asks for it
        on /server_info but not on /metrics: see ``process.api_key_in``), or ``()`` for a server without one."""
        key = api_key_in(cmdline(self.pid) or []) if self.pid else None
        return ({"Authorization": "Bearer " + key},) if key else ()

    def _server_info(self):
        now = self.clock()
        if self.info_at is not None and now - self.info_at < SERVER_INFO_EVERY_S:
            return self.info
        self.info_at = now
        paths = [self.info_path] if self.info_path else list(INFO_PATHS)
        for path in paths:
            try:
                self.info = json.loads(_get(self.base + path, SERVER_INFO_MAX_BYTES, *self._auth()).decode("utf-8"))
                self.info_path = path
                self.sources["server_info"] = "ok"
                return self.info
            except HttpStatus as exc:
                if exc.code == 404:
                    continue
                self.sources["server_info"] = "HTTP %d" % exc.code
            except FetchFailed as exc:
                self.sources["server_info"] = str(exc)
                break
            except ValueError as exc:
                self.sources["server_info"] = "%s is not JSON (%s)" % (path, exc)
                break
        return self.info

    def _metrics(self):
        """The newest snapshot (added to the window), or ``None``."""
        began = time.time()
        try:
            text = _get(self.base + METRICS_PATH, METRICS_MAX_BYTES).decode("utf-8", "replace")
        except HttpStatus as exc:
            self.sources["metrics"] = "HTTP %d (is --enable-metrics set?)" % exc.code
            return None
        except FetchFailed as exc:
            self.sources["metrics"] = str(exc)
            return None
        try:
            read_at = time.time()  # the wall time of the snapshot: the frame's ``t``, where its windows end
            snap = parse_metrics(text, taken_at=self.clock())
        except MetricsUnavailable as exc:
            self.sources["metrics"] = str(exc)
            return None
        except ValueError as exc:
            self.sources["metrics"] = "not Prometheus text (%s)" % exc
            return None
        self.sources["metrics"] = "ok"
        self.read_at = read_at
        self.read_s = read_at - began  # the server rendered the text somewhere in the read's span
        self.window.add(snap)
        return snap

    def _decode_records(self):
        if self.log is None:
            return []
        try:
            recs = self.log.poll()
        except OSError as exc:
            self.sources["log"] = "unreadable (%s)" % exc
            return []
        self.sources["log"] = "ok"
        return [r for r in recs if r.get("kind") == "decode"]

    # --- frame -----------------------------------------------------------------------------
    def frame(self, state):
        now = self.clock()
        info = self._server_info() or {}
        snap = self._metrics()
        decodes = self._decode_records()
        if decodes:
            if self.last_decode_at is not None:  # how often Decode lines come (--decode-log-interval steps)
                gap = (now - self.last_decode_at) / len(decodes)
                self.log_gap = gap if self.log_gap is None else 0.8 * self.log_gap + 0.2 * gap
            self.last_decode, self.last_decode_at = decodes[-1], now
        log_rec = self.last_decode
        log_age = None if self.last_decode_at is None else now - self.last_decode_at
        gauges = snap.gauges if snap is not None else {}
        have_metrics = snap is not None
        w = self.window
        rate_ws = w.stats_over(lf.RATE_SPAN_S) if have_metrics else None
        stream_ws = w.stats_over(lf.STREAM_SPAN_S) if have_metrics else None
        long_ws = w.stats_over(lf.LONG_SPAN_S) if have_metrics else None

        spec = speculative_settings(info, gauges)
        speculative = spec["algorithm"] is not None
        draft_tokens = spec["draft_tokens"]
        version = info.get("version")
        dp_ranks = len(snap.dp_ranks) if snap is not None else 0

        def load(key, log_key):
            if key in gauges:
                return gauges[key]
            return log_rec.get(log_key) if log_rec else None

        running = load("num_running_reqs", "running_req")
        running_source = None if running is None else "metrics-gauge" if "num_running_reqs" in gauges else "decode-log"
        decoding_now = lf.in_decode(snap.histograms) if snap is not None else None
        if decoding_now is not None and (running is None or decoding_now > running):
            running, running_source = decoding_now, "tokenizer-histograms"  # the gauge lags the batch that grew
        decoding = rate_ws.decode_tokens if rate_ws is not None else None
        if decoding is not None:
            busy = decoding > 0
        else:
            quiet_after = max(3.0, 3.0 * (self.log_gap or 0.0))
            busy = bool(decodes) or (log_age is not None and log_age <= quiet_after) or bool(
                rate_ws is not None and rate_ws.generation_tokens) or bool("num_running_reqs" in gauges and running)
            if not busy and not have_metrics:
                # no /metrics: last_gen_throughput that changed lately means a Decode line was logged
                s = lf.sum_states(info, "last_gen_throughput")
                if s:
                    age = self.changes.see("last_gen_throughput", s, now)
                    busy = self.changes.moved("last_gen_throughput") and age <= SERVER_INFO_EVERY_S + lf.FRESH_S
        if running is None and busy:
            running, running_source = 1, "busy"

        tput = lf.throughput(now, rate_ws, long_ws, gauges, log_rec, log_age, info, self.changes, running,
                             self.hold_tput, busy, dp_ranks)
        stream = lf.per_stream(now, stream_ws, long_ws, tput, running, self.hold_stream)

        accept = None
        rates = []
        if speculative:
            verify_total = snap.counters.get("spec_verify_calls_total") if snap is not None else None
            verify_age = self.changes.see("spec_verify_calls_total", verify_total, now) \
                if verify_total is not None else None
            accept = lf.accept_length(now, long_ws, verify_age, gauges, log_rec, log_age, self.changes, busy,
                                      self.hold_accept, dp_ranks)
            rates = self._rates(accept, draft_tokens, version, log_rec, log_age, info.get(NUM_STEPS))

        cumulative = None
        cum = lf.mean_states(info, "avg_spec_accept_length")
        if speculative and cum is not None:
            cumulative = {"value": round(cum, 4), "source": "server_info", "cumulative": True}
            if len(lf.state_values(info, "avg_spec_accept_length")) > 1:
                cumulative["ranks"] = len(lf.state_values(info, "avg_spec_accept_length"))
            finished = snap.counters.get("num_requests_total") if snap is not None else None
            if finished is not None:  # how many requests the figure covers: the console shows it after enough
                cumulative["requests"] = int(finished)

        queued = load("num_queue_reqs", "queue_req")
        spectui_in_flight = foreign = None
        if self.ours is not None:
            spectui_in_flight = self.ours()
            if "num_running_reqs" in gauges:
                foreign = max(0, int(running or 0) + int(queued or 0) - spectui_in_flight)
        self.seq += 1
        frame = {
            # the time the figures describe: a frame built late (a busy host) still says where its windows end
            "name": self.name, "seq": self.seq, "t": self.read_at if snap is not None else time.time(), "state": state,
            # how long the /metrics read took: the server's figures are of a moment up to that long before ``t``
            "read_s": round(self.read_s, 3) if snap is not None and self.read_s is not None else None,
            "window_s": round(rate_ws.elapsed_s, 3) if rate_ws is not None else None,
            "accept_length": accept,
            "accept_rate": rates,
            "cumulative_accept_length": cumulative,
            "gen_throughput": tput,
            "per_stream": stream,
            "running_req": running,
            "running_source": running_source,
            "queue_req": queued,
            "spectui_in_flight": spectui_in_flight,
            "foreign_reqs": foreign,
            "token_usage": load("token_usage", "token_usage"),
            "ttft_ms": lf.latency(long_ws, "ttft", quantile_bound, histogram_mean),
            "itl_ms": lf.latency(long_ws, "itl", quantile_bound, histogram_mean),
            "speculative": spec,
            "dp_ranks": dp_ranks or None,
            "version": version,
            "sources": dict(self.sources),
        }
        frame.update(_step_series(snap))
        frame.update(self._width(snap, speculative))
        return frame

    def _width(self, snap, speculative):
        """``width_now`` (the width in force at this read, None when not read or not reported) and
        ``width_changes`` (see ``servers.width``)."""
        width = width_now(snap.gauges, self.read_at) if snap is not None and speculative else None
        self.widths.see(width)
        return {"width_now": width, "width_changes": self.widths.listed()}

    def _rates(self, accept, draft_tokens, version, log_rec, log_age, num_steps=None):
        """The headline accept rate first (the release's formula), then the other formula,
        then the rate as the log printed it when it has one."""
        if accept is None or accept.get("value") is None:
            return []
        log_formula = log_rec.get("accept_rate_formula") if log_rec else None
        formula = accept_rate_formula(version) or log_formula or FORMULAS[0]
        order = [formula] + [f for f in FORMULAS if f != formula]
        out = []
        for f in order:
            width = old_formula_width(version, num_steps, draft_tokens) if f == FORMULA_INCL_BONUS else draft_tokens
            v = rate_from_length(accept["value"], width, f)
            if v is not None:
                out.append({"value": round(v, 4), "formula": f, "source": "derived", "stale": accept["stale"],
                            "window_s": accept.get("window_s"), "of": accept["source"]})
        if log_rec and log_rec.get("accept_rate") is not None and log_age is not None and log_age <= lf.FRESH_S:
            logged = min(1.0, max(0.0, float(log_rec["accept_rate"])))
            f = accept_rate_formula(version) or log_formula
            entry = {"value": round(logged, 4), "formula": f, "source": "decode-log", "stale": False}
            if accept["source"] == "decode-log" and f == formula:
                # the server's own figure over the same window replaces the derived one
                out = [entry] + [r for r in out if r["formula"] != formula]
            else:
                out.append(entry)
        return out

    def close(self):
        if self.log is not None:
            self.log.close()


class ServerPoller(object):
    """One thread building and emitting one server's frames every ``interval_s``: a server that is
    slow to answer delays only its own frames (each fetch ends by ``HTTP_DEADLINE_S``)."""

    def __init__(self, tracker, state, emit, interval_s):
        self.tracker = tracker
        self.state = state  # updated by the stream as the server's state changes
        self.emit = emit
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="server-telemetry-%s" % tracker.name)
        self._thread.daemon = True

    def start(self):
        self._thread.start()

    def _run(self):
        name_this_thread("tel-%s" % self.tracker.name)
        try:
            next_at = time.monotonic()
            while not self._stop.is_set():
                if not self.emit(self.frame()):
                    return
                next_at += self.interval_s
                delay = next_at - time.monotonic()
                if delay < 0:
                    next_at, delay = time.monotonic(), 0
                self._stop.wait(delay)
        finally:
            self.tracker.close()

    def frame(self):
        state = self.state
        try:
            return self.tracker.frame(state)
        except Exception as exc:  # one server's trouble must not stop its frames
            return {"name": self.tracker.name, "t": time.time(), "state": state, "error": str(exc)}

    def stop(self):
        """Ask the thread to end; it closes the tracker once its current frame is done."""
        self._stop.set()

    def join(self, timeout=None):
        self._thread.join(timeout)


class TelemetryStream(object):
    """``server_frame`` events for the servers the console watches: every serving server spectui started
    (or adopted), and the servers it found running that the console names (``watch``); one thread follows
    which servers serve, and each has its own :class:`ServerPoller`. A server another user runs is read
    only while the console looks at it."""

    def __init__(self, agent, interval_s=1.0, watched=()):
        self.agent = agent
        self.interval_s = interval_s  # checked on entry (protocol.telemetry_interval)
        self.watched = frozenset(watched)
        self.pollers = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="server-telemetry")
        self._thread.daemon = True

    def start(self):
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            self.tick()
            self._stop.wait(self.interval_s)

    def _emit(self, data):
        if self._stop.is_set():
            return False
        if not self.agent.channel.event("server_frame", data):
            self._stop.set()
            return False
        return True

    def watch(self, names):
        """Read these servers too (names of servers spectui found running); the others found stop at once."""
        self.watched = frozenset(names)
        self.tick()

    def _read(self, rec):
        """Whether ``rec``'s server is read: spectui's own, or one the console names."""
        return rec.get("origin") in OWN_ORIGINS or rec["name"] in self.watched

    def tick(self):
        """Start a poller for each watched server now serving, stop those of servers gone, replaced or no
        longer watched."""
        servers = self.agent.servers.serving()
        for name in list(self.pollers):
            rec = servers.get(name)
            pid, poller = self.pollers[name]
            if rec is None or rec["pid"] != pid or rec["state"] not in SERVING_STATES or not self._read(rec):
                self.pollers.pop(name)
                poller.stop()
        if self._stop.is_set():
            return
        for name, rec in servers.items():
            if rec["state"] not in SERVING_STATES or not self._read(rec):
                continue
            if name in self.pollers:
                self.pollers[name][1].state = rec["state"]
                continue
            ours = functools.partial(spectui_in_flight, self.agent, dict(rec))
            poller = ServerPoller(ServerTelemetry(rec, ours=ours), rec["state"], self._emit, self.interval_s)
            self.pollers[name] = (rec["pid"], poller)
            poller.start()

    def stop(self):
        self._stop.set()
        for _, poller in self.pollers.values():
            poller.stop()


def spectui_in_flight(agent, record):
    """The requests spectui has in flight to ``record``'s server: this agent's demo traffic (lately, see
    ``Traffic.in_flight_to``) and every benchmark run on this host that measures it."""
    n = 0
    traffic = getattr(agent, "traffic", None)
    if traffic is not None:
        n += traffic.in_flight_to(record["name"])
    bench = getattr(agent.servers, "benchmarks", None)
    if bench is not None:
        n += bench.in_flight(record)
    return n


def _watched(params):
    names = params.get("servers") or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise AgentError("bad_params", "servers must be a list of server names")
    return names


def methods(agent):
    holder = {}

    def subscribe(params):
        """Frames of spectui's servers, and of the servers found running named in ``servers``."""
        interval = telemetry_interval(params, "server telemetry")
        watched = _watched(params)
        if "stream" in holder:
            watched = watched or holder["stream"].watched
            holder.pop("stream").stop()
        stream = holder["stream"] = TelemetryStream(agent, interval, watched)
        agent.servers.adopt()
        stream.start()
        agent.on_close(stream.stop)
        return {"interval_s": stream.interval_s, "servers": sorted(stream.watched)}

    def watch(params):
        """The servers found running (``servers``: their names) whose frames the console wants now, besides
        spectui's own; the others found are no longer read."""
        watched = _watched(params)
        stream = holder.get("stream")
        if stream is None:
            raise AgentError("not_subscribed", "subscribe to server telemetry first")
        stream.watch(watched)
        return {"servers": sorted(stream.watched)}

    def unsubscribe(params):
        if "stream" in holder:
            holder.pop("stream").stop()
        return {ServerState.STOPPED: True}

    return {Method.SERVER_TELEMETRY_SUBSCRIBE: subscribe, Method.SERVER_TELEMETRY_UNSUBSCRIBE: unsubscribe,
            Method.SERVER_TELEMETRY_WATCH: watch}
