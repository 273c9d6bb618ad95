"""Server frames: accept length, accept rate, throughput and load of each running server.

Read next to the server, from three places (see SGLANG.md): ``/metrics`` (counters and
histograms, parsed by prometheus_client), the server's log (Decode lines of any era), and
``/server_info`` or ``/get_server_info`` (version, speculative settings, the cumulative
``avg_spec_accept_length``). Every value says where it came from:

* accept length over the last window: ``metrics-counters`` (Δgeneration_tokens /
  Δspec_verify_calls, exact) where the counters exist, else ``decode-log``;
* accept rate, named by formula: ``drafts-only`` = (L - 1) / (draft tokens - 1) and
  ``incl-bonus/draft-tokens`` = L / draft tokens, both ``derived`` from L when the number
  of draft tokens is known; a rate printed in the log keeps the formula of its era;
* ``stale``: nothing was decoded since the last frame, so the value shown is the last one;
* ``cumulative``: the server's own figure since start or the last /flush_cache.
Throughput from counters is measured even when it is zero (an idle server is at 0 tok/s).
"""

from __future__ import annotations

import json
import threading
import time
from urllib.error import HTTPError, URLError
from urllib.request import urlopen

from .logfollow import LogStream
from .promwindow import MetricsUnavailable, MetricsWindow, parse_metrics
from .server_process import server_url


HTTP_TIMEOUT_S = 2.0
SERVER_INFO_EVERY_S = 5.0
LATENCY_SPAN_S = 30.0
SERVING_STATES = ("ready", "unresponsive")


def _get(url):
    with urlopen(url, timeout=HTTP_TIMEOUT_S) as resp:
        return resp.read()


def _ms(seconds):
    return None if seconds is None else round(seconds * 1000.0, 2)


class ServerTelemetry(object):
    """Builds the frames of one server."""

    def __init__(self, record, clock=time.monotonic):
        self.name = record["name"]
        self.base = server_url(record.get("host"), record["port"])
        self.clock = clock
        self.short = MetricsWindow()
        self.long = MetricsWindow(span_s=LATENCY_SPAN_S)
        self.log = LogStream(record["log_path"], tail_bytes=0) if record.get("log_path") else None
        self.info = None
        self.info_at = None
        self.info_path = None
        self.seq = 0
        self.last_accept = None  # (value, source)
        self.last_rates = []
        self.last_tput = None
        self.sources = {}

    # --- sources -------------------------------------------------------------------------
    def _server_info(self):
        now = self.clock()
        if self.info_at is not None and now - self.info_at < SERVER_INFO_EVERY_S:
            return self.info
        self.info_at = now
        paths = [self.info_path] if self.info_path else ["/server_info", "/get_server_info"]
        for path in paths:
            try:
                self.info = json.loads(_get(self.base + path).decode("utf-8"))
                self.info_path = path
                self.sources["server_info"] = "ok"
                return self.info
            except HTTPError as exc:
                if exc.code == 404:
                    continue
                self.sources["server_info"] = "HTTP %d" % exc.code
            except (URLError, OSError, ValueError) as exc:
                self.sources["server_info"] = "unreachable (%s)" % (getattr(exc, "reason", None) or exc)
                break
        return self.info

    def _metrics(self):
        try:
            text = _get(self.base + "/metrics").decode("utf-8", "replace")
        except HTTPError as exc:
            self.sources["metrics"] = "HTTP %d (is --enable-metrics set?)" % exc.code
            return None, None
        except (URLError, OSError) as exc:
            self.sources["metrics"] = "unreachable (%s)" % (getattr(exc, "reason", None) or exc)
            return None, None
        try:
            snap = parse_metrics(text, taken_at=self.clock())
        except MetricsUnavailable as exc:
            self.sources["metrics"] = str(exc)
            return None, None
        self.sources["metrics"] = "ok"
        return self.short.update(snap), (self.long.update(snap), snap)

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
        info = self._server_info() or {}
        short, longer = self._metrics()
        long_ws, snap = longer if longer else (None, None)
        decodes = self._decode_records()
        last_decode = decodes[-1] if decodes else None
        algorithm = info.get("speculative_algorithm")
        speculative = algorithm not in (None, "", "NONE", "None")
        draft_tokens = info.get("speculative_num_draft_tokens")
        if draft_tokens is None and snap is not None:
            draft_tokens = snap.gauges.get("spec_num_draft_tokens")
        gauges = snap.gauges if snap is not None else {}

        # accept length
        accept = None
        if speculative:
            if short is not None and short.accept_length is not None:
                accept = {"value": round(short.accept_length, 4), "source": "metrics-counters", "stale": False}
            elif (short is None or short.verify_calls is None) and last_decode and last_decode.get("accept_len") is not None:
                accept = {"value": last_decode["accept_len"], "source": "decode-log", "stale": False}
            elif self.last_accept is not None:
                accept = {"value": self.last_accept[0], "source": self.last_accept[1], "stale": True}
            if accept is not None and not accept["stale"]:
                self.last_accept = (accept["value"], accept["source"])

        # accept rates
        rates = []
        if accept is not None:
            length = accept["value"]
            if draft_tokens:
                d = float(draft_tokens)
                if d > 1:
                    rates.append({"value": round((length - 1.0) / (d - 1.0), 4), "formula": "drafts-only",
                                  "source": "derived", "stale": accept["stale"]})
                rates.append({"value": round(length / d, 4), "formula": "incl-bonus/draft-tokens",
                              "source": "derived", "stale": accept["stale"]})
            if last_decode and last_decode.get("accept_rate") is not None:
                rates.append({"value": last_decode["accept_rate"], "formula": last_decode.get("accept_rate_formula"),
                              "source": "decode-log", "stale": False})
            elif accept["stale"]:
                rates.extend(dict(r, stale=True) for r in self.last_rates if r["source"] == "decode-log")
            if not accept["stale"]:
                self.last_rates = rates

        # throughput
        if short is not None and short.generation_tokens_per_s is not None:
            tput = {"value": round(short.generation_tokens_per_s, 2), "source": "metrics-counters", "stale": False}
        elif last_decode and last_decode.get("gen_throughput") is not None:
            tput = {"value": last_decode["gen_throughput"], "source": "decode-log", "stale": False}
        elif self.last_tput is not None:
            tput = dict(self.last_tput, stale=True)
        else:
            tput = None
        if tput is not None and not tput["stale"]:
            self.last_tput = tput

        cumulative = None
        states = info.get("internal_states") or []
        cum = [s.get("avg_spec_accept_length") for s in states if isinstance(s, dict)
               and s.get("avg_spec_accept_length") is not None]
        if speculative and cum:
            cumulative = {"value": round(sum(cum) / len(cum), 4), "source": "server_info", "cumulative": True}

        def load(key, log_key):
            if key in gauges:
                return gauges[key]
            return last_decode.get(log_key) if last_decode else None

        self.seq += 1
        lat = long_ws
        return {
            "name": self.name, "seq": self.seq, "t": time.time(), "state": state,
            "window_s": round(short.elapsed_s, 3) if short is not None else None,
            "accept_length": accept,
            "accept_rate": rates,
            "cumulative_accept_length": cumulative,
            "gen_throughput": tput,
            "running_req": load("num_running_reqs", "running_req"),
            "queue_req": load("num_queue_reqs", "queue_req"),
            "token_usage": load("token_usage", "token_usage"),
            "ttft_ms": {"p50": _ms(lat.ttft_p50), "p99": _ms(lat.ttft_p99)} if lat and lat.ttft_p50 is not None else None,
            "itl_ms": {"p50": _ms(lat.itl_p50), "p99": _ms(lat.itl_p99)} if lat and lat.itl_p50 is not None else None,
            "speculative": {"algorithm": algorithm if speculative else None,
                            "num_steps": info.get("speculative_num_steps"),
                            "topk": info.get("speculative_eagle_topk"),
                            "draft_tokens": draft_tokens},
            "version": info.get("version"),
            "sources": dict(self.sources),
        }

    def close(self):
        if self.log is not None:
            self.log.close()


class TelemetryStream(object):
    """One thread emitting ``server_frame`` events for every serving server."""

    def __init__(self, agent, interval_s=1.0):
        self.agent = agent
        self.interval_s = max(0.1, float(interval_s))
        self.trackers = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="server-telemetry")
        self._thread.daemon = True

    def start(self):
        self._thread.start()

    def _run(self):
        next_at = time.monotonic()
        while not self._stop.is_set():
            self.tick()
            next_at += self.interval_s
            delay = next_at - time.monotonic()
            if delay < 0:
                next_at, delay = time.monotonic(), 0
            self._stop.wait(delay)

    def tick(self):
        servers = self.agent.servers.serving()
        for name in list(self.trackers):
            rec = servers.get(name)
            if rec is None or rec["pid"] != self.trackers[name][0]:
                self.trackers.pop(name)[1].close()
        for name, rec in servers.items():
            if rec["state"] not in SERVING_STATES:
                continue
            if name not in self.trackers:
                self.trackers[name] = (rec["pid"], ServerTelemetry(rec))
            try:
                data = self.trackers[name][1].frame(rec["state"])
            except Exception as exc:  # one server's trouble must not stop the stream
                data = {"name": name, "t": time.time(), "state": rec["state"], "error": str(exc)}
            if not self.agent.channel.event("server_frame", data):
                return

    def stop(self):
        self._stop.set()
        for _, tracker in self.trackers.values():
            tracker.close()


def methods(agent):
    holder = {}

    def subscribe(params):
        interval = float(params.get("interval_s", 1.0))
        if "stream" in holder:
            holder.pop("stream").stop()
        stream = holder["stream"] = TelemetryStream(agent, interval)
        agent.servers.adopt()
        stream.start()
        agent.on_close(stream.stop)
        return {"interval_s": stream.interval_s}

    def unsubscribe(params):
        if "stream" in holder:
            holder.pop("stream").stop()
        return {"stopped": True}

    return {"server.telemetry.subscribe": subscribe, "server.telemetry.unsubscribe": unsubscribe}
