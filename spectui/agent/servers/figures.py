"""Which source each live figure comes from, and the rules that keep it honest.

A figure is a dict ``{"value", "source", "stale", "window_s", "age_s", ...}``. The rules:

* **DP ranks**: a figure combined over several ``dp_rank`` series or ``internal_states``
  entries says how many (``ranks``): summed for throughput, averaged for the accept length.
* **Throughput** (aggregate generated tokens per second) from the freshest per-iteration
  source the server offers: ``realtime-counter`` (``sglang:realtime_tokens_total{mode="decode"}``,
  bumped every decode iteration in 0.5.23: ``srt/managers/scheduler_components/
  metrics_reporter.py:905``), then ``decode-log`` (``gen throughput (token/s)`` of the last
  Decode line, every ``--decode-log-interval`` steps), ``metrics-gauge`` (``sglang:gen_throughput``,
  set with the same line) and ``server_info`` (``last_gen_throughput``, summed over the DP
  ranks of ``internal_states``; see :func:`state_values` for the releases' shapes);
  only as a last resort ``finished-counters``: ``generation_tokens_total`` over a long window,
  which moves only when a request finishes (``observe_one_finished_request``).
* **No false zero**: while requests run, a window that saw no completion never reads 0
  from the finished-request counters; it shows the last good value with its age, or
  ``measuring`` (value ``None``). A per-iteration source that reads 0 while requests run
  is held over for :data:`HOLD_S` (a long prefill), then believed.
* **Per stream**: what one request sees, from the inter-token latency histogram's exact mean
  (``itl-histogram``: 1 / (Δsum / Δcount)); on releases before it (0.3.5.post2 to 0.4.4) from
  ``time_per_output_token_seconds`` (``tpot-histogram``: each observation is one request's mean
  time per token so far); without either, throughput / running requests.
* **Accept length**: ``metrics-counters`` (Δgeneration_tokens / Δspec_verify_calls over a
  window long enough to span completions; ``spec_verify_calls_total`` exists from 0.5.13:
  sglang 0.5.13, sglang/srt/observability/metrics_collector.py:1439), else the
  ``sglang:spec_accept_length`` gauge (from 0.4.2: sglang 0.4.2, sglang/srt/metrics/collector.py:82;
  set with each Decode log line, so it is the mean over the last ``--decode-log-interval``
  steps: ``window="last decode-log interval"``), else the Decode line. ``stale`` only when nothing was
  decoded since the value was measured.
"""

from __future__ import annotations

RATE_SPAN_S = 2.0  # per-iteration throughput
STREAM_SPAN_S = 5.0  # per-stream speed (the long span when it saw too few tokens)
STREAM_MIN_TOKENS = 8
LONG_SPAN_S = 30.0  # finished-request counters (throughput, accept length) and latency histograms
HISTORY_S = 60.0
HOLD_S = 10.0
FRESH_S = 10.0


def _r(x, nd=2):
    return None if x is None else round(float(x), nd)


def figure(value, source, window_s=None, age_s=None, stale=False, **extra):
    d = {"value": _r(value, 4), "source": source, "stale": bool(stale), "window_s": _r(window_s, 1),
         "age_s": _r(age_s, 1)}
    d.update(extra)
    return d


class Holder(object):
    """The last good value of one figure, to show (with its age) instead of a false zero."""

    def __init__(self):
        self.value = None
        self.source = None
        self.window_s = None
        self.at = None

    def keep(self, fig, now):
        if fig is not None and fig.get("value") and not fig.get("stale") and not fig.get("held"):
            self.value, self.source, self.window_s, self.at = fig["value"], fig["source"], fig.get("window_s"), now

    def held(self, now, stale=False):
        if self.value is None:
            return None
        return figure(self.value, self.source, self.window_s, now - self.at, stale=stale, held=True)


class Changes(object):
    """When a polled value last changed (a gauge or a log figure that holds between updates)."""

    def __init__(self):
        self._seen = {}

    def see(self, key, value, now):
        prev = self._seen.get(key)
        if prev is None or prev[0] != value:
            self._seen[key] = (value, now, prev is not None)
            return 0.0
        return now - prev[1]

    def moved(self, key):
        """Whether ``key`` changed since it was first seen (a first value may be an old one)."""
        prev = self._seen.get(key)
        return bool(prev and prev[2])


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def state_values(info, key):
    """``key`` of each DP rank's scheduler state in a ``/server_info`` (``/get_server_info``) body.

    From 0.4.7 ``internal_states`` is a list, one entry per DP rank (sglang 0.4.7,
    sglang/srt/entrypoints/http_server.py:228 and srt/managers/tokenizer_manager.py:998-999);
    0.4.4 to 0.4.6 merged the first rank's state into the top level (sglang 0.4.4,
    srt/entrypoints/http_server.py:213, ``**internal_states``; tokenizer_manager.py:766,
    ``res[0].internal_state``); before 0.4.4 there is none (sglang 0.4.3,
    srt/entrypoints/http_server.py:156-162)."""
    info = info or {}
    states = info.get("internal_states")
    if isinstance(states, list):
        return [s[key] for s in states if isinstance(s, dict) and _number(s.get(key))]
    return [info[key]] if _number(info.get(key)) else []


def sum_states(info, key):
    vals = state_values(info, key)
    return sum(vals) if vals else None


def mean_states(info, key):
    vals = state_values(info, key)
    return sum(vals) / len(vals) if vals else None


def throughput(now, rate_ws, fin_ws, gauges, log_rec, log_age, info, changes, running, holder, busy=True,
               dp_ranks=1):
    """The aggregate generation throughput figure (see the module docstring). ``busy``: whether
    anything was decoded lately, as far as the sources tell; ``dp_ranks``: how many DP groups
    the gauges were summed over."""
    fig = None
    if rate_ws is not None and rate_ws.decode_tokens_per_s is not None:
        fig = figure(rate_ws.decode_tokens_per_s, "realtime-counter", rate_ws.elapsed_s, 0.0)
    elif running == 0 or not busy:
        fig = figure(0.0, "idle")  # nothing runs or nothing was decoded lately: a held figure is over
    elif log_rec is not None and log_rec.get("gen_throughput") is not None and log_age is not None \
            and log_age <= FRESH_S:
        fig = figure(log_rec["gen_throughput"], "decode-log", None, log_age)
    else:
        g = gauges.get("gen_throughput")
        age = changes.see("gen_throughput", g, now) if g is not None else None
        s = sum_states(info, "last_gen_throughput")
        sage = changes.see("last_gen_throughput", s, now) if s is not None else None
        nstates = len(state_values(info, "last_gen_throughput"))
        if g is not None and age <= FRESH_S:
            fig = _ranked(figure(g, "metrics-gauge", None, age), dp_ranks)
        elif s is not None and sage <= FRESH_S:
            fig = _ranked(figure(s, "server_info", None, sage), nstates)
        elif fin_ws is not None and fin_ws.generation_tokens_per_s is not None:
            fig = figure(fin_ws.generation_tokens_per_s, "finished-counters", fin_ws.elapsed_s, 0.0)
            if not fig["value"] and running:
                # no request finished in the window, yet some run: not a measured zero
                fig = holder.held(now) or figure(None, "finished-counters", fin_ws.elapsed_s, measuring=True)
    if fig is not None and fig.get("value") == 0.0 and running and fig["source"] != "finished-counters":
        if holder.at is not None and now - holder.at <= HOLD_S:
            fig = holder.held(now)
    if fig is None:
        fig = holder.held(now, stale=True)
    holder.keep(fig, now)
    return fig


def _ranked(fig, ranks):
    if ranks and ranks > 1:
        fig["ranks"] = int(ranks)
    return fig


def per_stream(now, short_ws, long_ws, agg, running, holder):
    """Tokens per second one request sees."""
    fig = None
    for ws in (short_ws, long_ws):
        itl = ws.itl if ws is not None else None
        if itl is not None and (itl.count or 0) >= STREAM_MIN_TOKENS and (itl.sum or 0) > 0:
            fig = figure(itl.count / itl.sum, "itl-histogram", ws.elapsed_s, 0.0, tokens=int(itl.count))
            break
    for ws in (short_ws, long_ws) if fig is None else ():
        tpot = getattr(ws, "tpot", None) if ws is not None else None
        if tpot is not None and (tpot.count or 0) >= STREAM_MIN_TOKENS and (tpot.sum or 0) > 0:
            # mean of the requests' mean seconds per token: its inverse is one stream's speed
            fig = figure(tpot.count / tpot.sum, "tpot-histogram", ws.elapsed_s, 0.0, observations=int(tpot.count))
            break
    if fig is None and agg is not None and agg.get("value") and running:
        fig = figure(agg["value"] / float(running), agg["source"] + "/running", agg.get("window_s"),
                     agg.get("age_s"))
    if fig is None and running:
        fig = holder.held(now) or figure(None, "itl-histogram", measuring=True)
    elif fig is None:
        fig = holder.held(now, stale=True)
    holder.keep(fig, now)
    return fig


def accept_length(now, acc_ws, verify_age, gauges, log_rec, log_age, changes, busy, holder, dp_ranks=1):
    """The accept length figure; ``None`` before anything was measured. ``verify_age``: seconds
    since ``spec_verify_calls_total`` last moved (a request finished); ``dp_ranks``: how many DP
    groups the gauge was averaged over."""
    fig = None
    if acc_ws is not None and acc_ws.verify_calls and acc_ws.generation_tokens is not None:
        fig = figure(acc_ws.generation_tokens / acc_ws.verify_calls, "metrics-counters", acc_ws.elapsed_s, verify_age,
                     requests=None if acc_ws.requests is None else int(acc_ws.requests))
    if fig is None:
        g = gauges.get("spec_accept_length")
        if g is not None:
            age = changes.see("spec_accept_length", g, now)
            if g > 0 and (age <= FRESH_S or busy):
                fig = _ranked(figure(g, "metrics-gauge", None, age, window="last decode-log interval"), dp_ranks)
    if fig is None and log_rec is not None and log_rec.get("accept_len") is not None \
            and log_age is not None and (log_age <= FRESH_S or busy):
        fig = figure(log_rec["accept_len"], "decode-log", None, log_age)
    if fig is None:
        return holder.held(now, stale=not busy)
    if not busy:
        fig["stale"] = True
    holder.keep(dict(fig, stale=False), now)
    return fig


def in_decode(histograms):
    """Requests that have their first token and have not finished, from the tokenizer's own cumulative
    histograms (``time_to_first_token_seconds`` count minus ``e2e_request_latency_seconds`` count), or None.

    Both move with each output as it happens (sglang 0.5.23 wheel, sglang/srt/managers/tokenizer_manager.py:3235-3246
    and 3287-3298), where the ``num_running_reqs`` gauge holds the scheduler's last batch report: the count before
    the prefill that added requests (sglang/srt/managers/scheduler_components/metrics_reporter.py:860), until the
    next Decode log line (every ``--decode-log-interval`` iterations, metrics_reporter.py:933-934). A request
    aborted before its first token is finished without a first token, so this can only count short: it is a lower
    bound for the running requests."""
    ttft = histograms.get("time_to_first_token_seconds")
    if ttft is None or ttft.count is None:
        return None
    e2e = histograms.get("e2e_request_latency_seconds")
    done = e2e.count if e2e is not None and e2e.count is not None else 0.0
    return max(0, int(round(ttft.count - done)))


def latency(ws, name, quantile_bound, histogram_mean):
    """p50 / p99 / mean in ms of one histogram over a window, with what a bucket can tell."""
    hist = getattr(ws, name) if ws is not None else None
    if hist is None or not hist.count:
        return None
    out = {"source": "metrics-histogram", "window_s": _r(ws.elapsed_s, 1), "count": int(hist.count)}
    for q, key in ((0.5, "p50"), (0.99, "p99")):
        v, rel = quantile_bound(q, hist)
        out[key] = None if v is None else round(v * 1000.0, 2)
        out[key + "_rel"] = rel
    m = histogram_mean(hist)
    out["mean"] = None if m is None else round(m * 1000.0, 2)
    return out
