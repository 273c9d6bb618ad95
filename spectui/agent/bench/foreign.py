"""Load on a benchmarked server that spectui did not send: the server's own counters against the run's own.

SGLang counts every request it finishes in ``/metrics``: ``num_requests_total``, ``prompt_tokens_total``
and ``generation_tokens_total`` grow by one request and its prompt and completion tokens when a request
ends, aborted ones included (sglang 0.5.23 wheel, sglang/srt/observability/metrics_collector.py:2092-2136,
called from sglang/srt/managers/tokenizer_manager.py:3287); its own health checks are left out
(``log_metrics=False``, sglang/srt/entrypoints/http_server.py:761 and :768, tested at
tokenizer_manager.py:2788). ``num_running_reqs`` and ``num_queue_reqs`` are gauges the scheduler sets
at each stats log (metrics_collector.py:364-375 and :1646-1649).

A run reads the counters just before and just after it measures, and knows what it sent itself: the
requests, the tokens streamed back, the prompt tokens. What the server counted beyond that came from
someone else: another console's demo traffic, another user's client, another benchmark on the same
server. Its share of the generated tokens (and of the requests) is the run's ``foreign_load``; while the
run measures, the gauges sampled against the run's own requests in flight say how many foreign requests
ran beside it. Requests that straddle the run's edges are counted by the side they finish on, so the share
is exact for the run's own and close for the others. Standard library only.
"""

from __future__ import annotations

from ..servers.bounded_http import FetchFailed, fetch
from ..servers.figures import in_decode
from ..servers.metrics import MetricsUnavailable, parse_metrics
from ..servers.metrics import counter_increase as metrics_increase
from ..servers.process import server_url

#: A run whose foreign share of tokens or requests reaches this is marked.
MARK_SHARE = 0.01
METRICS_MAX_BYTES = 8 << 20
METRICS_DEADLINE_S = 3.0


def counter_increase(before, after, name):
    """How much counter ``name`` grew between two ``metrics`` snapshots (``{"counters": ...}``); None when
    ``after`` lacks it or it went back (the server restarted).

    A counter that ``before`` lacks and ``after`` has was 0 before: SGLang's request and token counters are
    labelled, and a labelled counter has no sample until its first increment, at the first request the server
    finishes (sglang 0.5.23 wheel, sglang/srt/observability/metrics_collector.py:1855-1863 and :2109-2136), so a
    fresh server's /metrics lacks them until then."""
    inc, reset = metrics_increase(((before or {}).get("counters") or {}).get(name),
                                  ((after or {}).get("counters") or {}).get(name))
    return None if reset else inc


def running_now(snap):
    """Requests the server runs now, from one ``/metrics`` snapshot: its ``num_running_reqs`` gauge, or more where
    the tokenizer's histograms count more requests between their first token and their end (the gauge holds the
    scheduler's last batch report, which lags a batch that grew: ``figures.in_decode``); None without the gauge."""
    if "num_running_reqs" not in snap.gauges:
        return None
    return max(int(snap.gauges.get("num_running_reqs") or 0), in_decode(snap.histograms) or 0)


def server_load(snap):
    """Requests the server runs and queues now (:func:`running_now` and ``num_queue_reqs``); None without
    ``num_running_reqs``."""
    running = running_now(snap)
    if running is None:
        return None
    return running + int(snap.gauges.get("num_queue_reqs") or 0)


def read_load(host, port):
    """``(running, queued)`` of the server at ``host:port`` from its ``/metrics``; raises ``ValueError`` with a
    sentence saying why when it cannot be read."""
    try:
        text = fetch(server_url(host, port, "/metrics"), METRICS_MAX_BYTES, METRICS_DEADLINE_S)
        snap = parse_metrics(text.decode("utf-8", "replace"))
    except (FetchFailed, MetricsUnavailable) as exc:
        raise ValueError(str(exc))
    running = running_now(snap)
    if running is None:
        raise ValueError("its /metrics has no num_running_reqs (is --enable-metrics set?)")
    return running, int(snap.gauges.get("num_queue_reqs") or 0)


def _part(server, own):
    """``(foreign, share)`` of a counter's increase ``server`` of which ``own`` was the run's."""
    if server is None or own is None:
        return None, None
    foreign = max(0, int(round(server - own)))
    return foreign, (float(foreign) / server if server > 0 else 0.0)


def foreign_load(before, after, own, samples=()):
    """The run's ``foreign_load``: ``before``/``after`` the run's ``metrics`` snapshots, ``own`` what it sent
    (``requests``, ``tokens``, ``prompt_tokens``; a value None where not known), ``samples`` the server's
    running + queued requests against the run's own in flight, ``(server, own)``, taken while it measured.

    ``share`` is the share of the tokens the server generated meanwhile that were not the run's (of the
    requests where tokens are not known); ``marked`` when it, or the requests' share, reaches
    :data:`MARK_SHARE`. ``known`` false (and ``why``) when the counters cannot say."""
    out = {"known": False, "why": None, "marked": False, "share": None, "requests_share": None,
           "server_requests": None, "own_requests": own.get("requests"), "foreign_requests": None,
           "server_tokens": None, "own_tokens": own.get("tokens"), "foreign_tokens": None,
           "server_prompt_tokens": None, "own_prompt_tokens": own.get("prompt_tokens"),
           "foreign_prompt_tokens": None, "in_flight": _in_flight(samples)}
    errors = [s.get("error") for s in (before, after) if s and s.get("error")]
    if errors or not before or not after:
        out["why"] = "/metrics: %s" % (errors[0] if errors else "not read")
        return out
    requests = counter_increase(before, after, "num_requests_total")
    tokens = counter_increase(before, after, "generation_tokens_total")
    prompt = counter_increase(before, after, "prompt_tokens_total")
    if requests is None and tokens is None:
        out["why"] = "the server's request and token counters are missing or went back (a restart?)"
        return out
    out["server_requests"], out["server_tokens"], out["server_prompt_tokens"] = requests, tokens, prompt
    out["foreign_requests"], out["requests_share"] = _part(requests, own.get("requests"))
    out["foreign_tokens"], token_share = _part(tokens, own.get("tokens"))
    out["foreign_prompt_tokens"], _ = _part(prompt, own.get("prompt_tokens"))
    out["share"] = token_share if token_share is not None else out["requests_share"]
    if out["share"] is None:
        out["why"] = "what the run sent itself is not known"
        return out
    out["known"] = True
    # the counters count a request when it finishes (and its tokens with it): one longer than the run, in flight
    # from before it to after it, is in no counter's increase, and only the samples of what the server runs see it
    flight = out["in_flight"] or {}
    # ... when someone else's request ran in most samples (a sample read a moment before the run's own count
    # dropped is no foreign load)
    persistent = flight.get("median", 0) >= 1
    out["marked"] = max(out["share"], out["requests_share"] or 0.0,
                        flight.get("share", 0.0) if persistent else 0.0) >= MARK_SHARE
    return out


def _in_flight(samples):
    """Foreign requests in flight beside the run, from ``(server, own)`` samples: their mean, median and most, and
    ``share``, the part of the requests the server ran in those samples that were not the run's."""
    pairs = [(s, max(0, s - o)) for s, o in samples if s is not None]
    if not pairs:
        return None
    foreign = [f for _, f in pairs]
    served = sum(s for s, _ in pairs)
    return {"samples": len(foreign), "mean": round(float(sum(foreign)) / len(foreign), 2), "max": max(foreign),
            "median": sorted(foreign)[len(foreign) // 2],
            "share": round(float(sum(foreign)) / served, 4) if served > 0 else 0.0}
