"""``/metrics``: SGLang's metric names, labels and buckets in a per-server registry.

Scheduler gauges carry ``model_name, engine_type, tp_rank, pp_rank, moe_ep_rank`` and are set
when a Prefill or Decode line is logged (so the speculative gauges hold the last log window and
go stale when idle, as SGLang's do). Request counters and latency histograms carry
``model_name, engine_type`` (plus ``is_streaming`` where SGLang has it) and are updated as
requests produce tokens and finish.

``sglang:realtime_tokens_total`` (scheduler labels plus ``mode`` in ``prefill_compute``,
``prefill_cache``, ``decode``) exists from SGLang 0.5.7 on, so only in the 0.5.23 era here
(sglang 0.5.23 wheel, sglang/srt/observability/metrics_collector.py:1032-1039; increments skip
a zero delta, :1558-1578). Its decode series grows at every decode iteration, unlike
``generation_tokens_total``, which moves only when a request finishes.

The step counters of the 0.5.23 era (docs/step-costs.md): ``sglang:cuda_graph_passes_total{mode}``, one
``decode_cuda_graph``/``decode_none`` per decode batch and one ``prefill_cuda_graph``/``prefill_none`` per
prefill batch, a series appearing with its first pass (metrics_collector.py:737-741, :1527-1533);
``sglang:scheduler_idle_seconds_total``, seeded at 0 (:1062-1068, :1086, :1614-1615); and, only with
``SGLANG_ENABLE_METRICS_DEVICE_TIMER`` true in the server's environment (sglang/srt/environ.py:479, read as
``EnvBool``: ``true``, ``1``, ``yes``, ``y``), ``sglang:forward_execution_seconds_total{category}``, the
device seconds of each timed forward by category (:1054-1061, :1598-1606). The simulator adds the cost
model's modelled milliseconds of each forward, so the step costs read from it are the modelled ones.
"""

from __future__ import annotations

from typing import Dict, Mapping, Optional

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

TTFT_BUCKETS = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400]
E2E_BUCKETS = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400]
ITL_BUCKETS = [
    0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080,
    0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000,
]
DEVICE_TIMER_ENV = "SGLANG_ENABLE_METRICS_DEVICE_TIMER"


def device_timer_on(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` turns SGLang's device timer on (``EnvBool``, sglang/srt/environ.py:145-147)."""
    return (environ.get(DEVICE_TIMER_ENV) or "").strip().lower() in ("true", "1", "yes", "y")


class ServerMetrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self, model_name: str, engine_type: str = "unified", era: str = "0.5.23", dp_size: int = 1,
                 device_timer: bool = False):
        # SGLang serves its registry in prometheus_client's multiprocess mode, which writes no
        # ``_created`` series (sglang 0.5.23 wheel, sglang/srt/observability/metrics_collector.py:
        # the collectors are made after PROMETHEUS_MULTIPROC_DIR is set); this process's
        # registry is the simulated server's only one
        disable_created_metrics()
        self.era = era
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.sched_labels: Dict[str, str] = {
            "model_name": model_name,
            "engine_type": engine_type,
            "tp_rank": "0",
            "pp_rank": "0",
            "moe_ep_rank": "0",
        }
        if dp_size > 1:  # a DP replica's scheduler labels its series (metrics_collector.py:1382-1392)
            self.sched_labels["dp_rank"] = "0"
        self.tok_labels: Dict[str, str] = {"model_name": model_name, "engine_type": engine_type}
        sl = list(self.sched_labels)
        tl = list(self.tok_labels)

        def gauge(name, doc):
            return Gauge(name, doc, labelnames=sl, registry=r).labels(**self.sched_labels)

        self.num_running_reqs = gauge("sglang:num_running_reqs", "The number of running requests.")
        self.num_queue_reqs = gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.")
        self.gen_throughput = gauge("sglang:gen_throughput", "The generation throughput (token/s).")
        self.cache_hit_rate = gauge("sglang:cache_hit_rate", "The prefix cache hit rate.")
        self.token_usage = gauge("sglang:token_usage", "The token usage.")
        self.num_used_tokens = gauge("sglang:num_used_tokens", "The number of used tokens.")
        self.spec_accept_length = gauge(
            "sglang:spec_accept_length",
            "Mean acceptance length of speculative decoding (accepted drafts + bonus token per forward).",
        )
        self.spec_accept_rate = gauge(
            "sglang:spec_accept_rate",
            "Speculative acceptance rate (`accepted drafts / proposed drafts` in batch).",
        )
        self.spec_num_steps = gauge("sglang:spec_num_steps", "Currently active speculative_num_steps.")
        self.spec_num_draft_tokens = gauge(
            "sglang:spec_num_draft_tokens", "Currently active speculative_num_draft_tokens."
        )
        self.utilization = gauge("sglang:utilization", "The utilization (request load, not GPU load).")
        self.max_total_num_tokens = gauge("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV pool.")
        self.is_cuda_graph = gauge("sglang:is_cuda_graph", "Whether the last batch ran a CUDA graph.")

        self._realtime = None  # a series appears with its first increment, as in SGLang
        if era == "0.5.23":
            self._realtime = Counter(
                "sglang:realtime_tokens",
                "Total number of tokens processed (updated on each log interval). "
                "mode: prefill_compute, prefill_cache, decode.",
                labelnames=sl + ["mode"], registry=r,
            )
        self._passes = self._idle = self._forward_seconds = None
        if era == "0.5.23":
            self._passes = Counter(
                "sglang:cuda_graph_passes", "Total number of forward passes categorized by CUDA graph.",
                labelnames=sl + ["mode"], registry=r,
            )
            self._idle = Counter(
                "sglang:scheduler_idle_seconds", "Total wall time while the scheduler has no runnable or queued work.",
                labelnames=sl, registry=r,
            ).labels(**self.sched_labels)
            if device_timer:
                self._forward_seconds = Counter(
                    "sglang:forward_execution_seconds",
                    "Total time that GPU is busy executing model forward passes. Refer to ForwardMode for "
                    "category labels.",
                    labelnames=sl + ["category"], registry=r,
                )

        stream_l = tl + ["is_streaming"]
        self.prompt_tokens_total = Counter(
            "sglang:prompt_tokens", "Number of prefill tokens processed.", labelnames=stream_l, registry=r
        )
        self.generation_tokens_total = Counter(
            "sglang:generation_tokens", "Number of generation tokens processed.", labelnames=stream_l, registry=r
        )
        # these get their series at their first increment, as SGLang's (sglang 0.5.23 wheel,
        # sglang/srt/observability/metrics_collector.py:2112-2136 and 2186): a server that
        # verified, hit its cache or aborted nothing shows none of these families
        self.spec_verify_calls_total = Counter(
            "sglang:spec_verify_calls", "Number of speculative decoding verification calls.", labelnames=tl, registry=r
        )
        self.num_requests_total = Counter(
            "sglang:num_requests", "Number of requests processed.", labelnames=stream_l, registry=r
        )
        self.cached_tokens_total = Counter(
            "sglang:cached_tokens", "Number of cached prompt tokens by source (device/host/storage).",
            labelnames=tl + ["cache_source"], registry=r,
        )
        self.num_aborted_requests_total = Counter(
            "sglang:num_aborted_requests", "Number of requests aborted.", labelnames=tl, registry=r
        )
        self.ttft = Histogram(
            "sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
            labelnames=stream_l, buckets=TTFT_BUCKETS, registry=r,
        )
        self.itl = Histogram(
            "sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
            labelnames=tl, buckets=ITL_BUCKETS, registry=r,
        ).labels(**self.tok_labels)
        self.tpot = None  # sglang 0.5.23 wheel, sglang/srt/observability/metrics_collector.py:2057-2064
        if era == "0.5.23":
            self.tpot = Histogram(
                "sglang:request_time_per_output_token_seconds",
                "Per-request TPOT in seconds: (finished_time - first_token_time) / (completion_tokens - 1).",
                labelnames=stream_l, buckets=ITL_BUCKETS, registry=r,
            )
        self.e2e = Histogram(
            "sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds",
            labelnames=stream_l, buckets=E2E_BUCKETS, registry=r,
        )
        # Children per is_streaming value, created up front so both series exist from the start.
        self._stream = {}
        for flag in ("true", "false"):
            lab = dict(self.tok_labels, is_streaming=flag)
            self._stream[flag] = (
                self.prompt_tokens_total.labels(**lab),
                self.generation_tokens_total.labels(**lab),
                self.num_requests_total.labels(**lab),
                self.ttft.labels(**lab),
                self.e2e.labels(**lab),
            )

    # -- the scheduler ------------------------------------------------------------------------------
    def realtime_tokens(self, prefill_compute: int = 0, prefill_cache: int = 0, decode: int = 0) -> None:
        """One prefill or decode iteration's tokens (``increment_realtime_tokens``)."""
        if self._realtime is None:
            return
        for mode, delta in (("prefill_compute", prefill_compute), ("prefill_cache", prefill_cache),
                            ("decode", decode)):
            if delta:
                self._realtime.labels(mode=mode, **self.sched_labels).inc(delta)

    def forward_pass(self, kind: str, cuda_graph: bool) -> None:
        """One decode or prefill batch processed (``kind``: ``decode`` or ``prefill``)."""
        if self._passes is not None:
            self._passes.labels(mode="%s_%s" % (kind, "cuda_graph" if cuda_graph else "none"),
                                **self.sched_labels).inc()

    def forward_seconds(self, parts: Mapping[str, float]) -> None:
        """The device seconds of one batch's forwards by category (only with the device timer on)."""
        if self._forward_seconds is None:
            return
        for category, seconds in parts.items():
            if seconds > 0:
                self._forward_seconds.labels(category=category, **self.sched_labels).inc(seconds)

    def idle_seconds(self, seconds: float) -> None:
        if self._idle is not None and seconds > 0:
            self._idle.inc(seconds)

    @property
    def device_timer(self) -> Optional[bool]:
        """Whether this server times its forwards (None before the 0.5.23 era, which has no such counter)."""
        return None if self._passes is None else self._forward_seconds is not None

    # -- requests ---------------------------------------------------------------------------------
    def observe_first_token(self, streaming: bool, ttft_s: float) -> None:
        self._stream["true" if streaming else "false"][3].observe(ttft_s)

    def observe_tokens(self, interval_s: float, new_tokens: int) -> None:
        """Inter-token latency of ``new_tokens`` tokens that arrived together after ``interval_s``."""
        if new_tokens <= 0:
            return
        each = interval_s / new_tokens
        for _ in range(new_tokens):
            self.itl.observe(each)

    def observe_finished(self, streaming: bool, prompt_tokens: int, generation_tokens: int, cached_tokens: int,
                         e2e_s: float, verify_ct: int, aborted: bool = False, decode_s: float = 0.0) -> None:
        """One finished request; ``decode_s``: first token to finish (its TPOT is that over the
        tokens after the first, observed only when positive: req_time_stats.py:492-499)."""
        flag = "true" if streaming else "false"
        prompt_c, gen_c, req_c, _, e2e_h = self._stream[flag]
        prompt_c.inc(prompt_tokens)
        gen_c.inc(generation_tokens)
        req_c.inc()
        e2e_h.observe(e2e_s)
        if self.tpot is not None and generation_tokens > 1 and decode_s > 0:
            self.tpot.labels(is_streaming=flag, **self.tok_labels).observe(decode_s / (generation_tokens - 1))
        if verify_ct > 0:
            self.spec_verify_calls_total.labels(**self.tok_labels).inc(verify_ct)
        if cached_tokens > 0:
            self.cached_tokens_total.labels(cache_source="device", **self.tok_labels).inc(cached_tokens)
        if aborted:
            self.num_aborted_requests_total.labels(**self.tok_labels).inc()

    def render(self) -> bytes:
        """The text exposition without families that have no series yet: SGLang's multiprocess
        collector builds its families from the values written so far, so an unused one is absent."""
        return generate_latest(_WithSeries(self.registry))


class _WithSeries:
    def __init__(self, registry: CollectorRegistry):
        self.registry = registry

    def collect(self):
        return (fam for fam in self.registry.collect() if fam.samples)
