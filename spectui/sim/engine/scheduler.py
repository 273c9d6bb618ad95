"""The scheduler: one asyncio loop doing continuous batching in simulated GPU time.

Each iteration is one forward pass: a prefill of waiting requests when there is room, else a
decode step of every running request (plain, or draft + verify). The loop does the step's CPU
work (the simulation itself) up front, then sleeps until the cost model says the pass ends, and
only then makes the new tokens visible: clients measure real tokens per second. Deadlines are
absolute, so sleep overshoot does not accumulate while the loop is busy.

Metrics follow the scheduler of the era (``--sim-log-format``): gauges are set at a prefill and
at each logged decode step; ``sglang:realtime_tokens_total`` (0.5.23 era) grows at every prefill
and every decode iteration (sglang 0.5.23 wheel,
sglang/srt/managers/scheduler_components/metrics_reporter.py:809-816 and :909-916). When the
server goes idle, 0.5.23 republishes at once the gauges that disagree with the idle state
(``_maybe_log_idle_metrics``, metrics_reporter.py:1476-1532: ``num_running_reqs`` and
``gen_throughput`` drop to 0), and every 30 s while idle; older releases only 30 s after the
last stats log (sglang 0.5.6 wheel, sglang/srt/managers/scheduler_runtime_checker_mixin.py:223-
276). The speculative gauges keep their last value. A health check (``HEALTH_CHECK_`` rid) is
skipped while the scheduler has work, as SGLang's does (sglang 0.5.23 wheel,
sglang/srt/managers/scheduler.py:2240-2247): running requests already show that it is alive.

``slow_factor`` (set by ``--sim-slow-after``, default 1) multiplies the modelled time of every
forward pass, prefill, decode and verify alike: a GPU that throttles its clocks, or one rank that
straggles and holds up every collective.
"""

from __future__ import annotations

import asyncio
import collections
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Deque, List, Optional, Tuple

from spectui.sim.engine.adaptive import AdaptiveSteps
from spectui.sim.engine.prefix_cache import PrefixCache
from spectui.sim.engine.request import Request
from spectui.sim.engine.speculation import EAGLE_FAMILY, SpecConfig, make_speculator
from spectui.sim.hardware import CostModel
from spectui.sim.logfmt import LogFormat, SimLogger
from spectui.sim.metrics import ServerMetrics
from spectui.sim.model.markov import TargetModel

RESYNC_S = 0.025  # a step starting later than this after its deadline starts from "now"
IDLE_METRICS_S = 30.0  # idle gauges are republished this long after the last stats log
RECENT_REQUESTS = 256


@dataclass
class SchedulerConfig:
    max_running_requests: int = 256
    max_prefill_tokens: int = 16384
    max_total_num_tokens: int = 500_000
    decode_log_interval: int = 40
    base_seed: int = 0
    enable_prefix_cache: bool = True


class StepTiming:
    """How well the loop keeps to its cost model (for the capacity benchmark)."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.steps = 0
        self.model_s = 0.0
        self.actual_s = 0.0
        self.cpu_s = 0.0
        self.late_steps = 0
        self.tokens = 0

    def add(self, model_s: float, actual_s: float, cpu_s: float, tokens: int) -> None:
        self.steps += 1
        self.model_s += model_s
        self.actual_s += actual_s
        self.cpu_s += cpu_s
        self.tokens += tokens
        if cpu_s > model_s:
            self.late_steps += 1

    def as_dict(self) -> dict:
        n = max(1, self.steps)
        return {
            "steps": self.steps,
            "tokens": self.tokens,
            "model_s": self.model_s,
            "actual_s": self.actual_s,
            "cpu_s": self.cpu_s,
            "mean_model_step_ms": 1000.0 * self.model_s / n,
            "mean_actual_step_ms": 1000.0 * self.actual_s / n,
            "mean_cpu_step_ms": 1000.0 * self.cpu_s / n,
            "cpu_fraction": self.cpu_s / self.actual_s if self.actual_s > 0 else 0.0,
            "late_steps": self.late_steps,
        }


class Counters:
    """Ground truth for ``/sim/stats``: what the scheduler did, counted as it happened."""

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.started = time.time()
        self.prefill_steps = 0
        self.prefill_s = 0.0  # modelled time of prefill passes
        self.prefill_tokens = 0  # first tokens, made by prefill passes
        self.decode_steps = 0
        self.decode_s = 0.0  # modelled time of decode passes
        self.decode_stream_s = 0.0  # the same, times the batch size: decode time seen by the streams
        self.decode_tokens = 0
        self.verify_calls = 0  # request-verify steps, counted at each step (not at finish)
        self.correct_drafts = 0
        self.finished = 0
        self.health_checks_run = 0
        self.health_checks_skipped = 0
        self.recent: Deque[dict] = collections.deque(maxlen=RECENT_REQUESTS)

    def as_dict(self) -> dict:
        return {
            "since": self.started,
            "generated_tokens": self.prefill_tokens + self.decode_tokens,
            "prefill_tokens": self.prefill_tokens,
            "decode_tokens": self.decode_tokens,
            "verify_calls": self.verify_calls,
            "correct_drafts": self.correct_drafts,
            "accept_length": self.decode_tokens / self.verify_calls if self.verify_calls else None,
            "prefill_steps": self.prefill_steps,
            "prefill_s": self.prefill_s,
            "decode_steps": self.decode_steps,
            "decode_s": self.decode_s,
            "decode_stream_s": self.decode_stream_s,
            "stream_decode_tok_s": self.decode_tokens / self.decode_stream_s if self.decode_stream_s > 0 else None,
            "requests_finished": self.finished,
            "health_checks_run": self.health_checks_run,
            "health_checks_skipped": self.health_checks_skipped,
        }


class Scheduler:
    def __init__(
        self,
        model: TargetModel,
        cost: CostModel,
        spec: SpecConfig,
        config: SchedulerConfig,
        log: SimLogger,
        fmt: LogFormat,
        metrics: Optional[ServerMetrics] = None,
    ):
        self.model = model
        self.cost = cost
        self.spec = spec
        self.config = config
        self.log = log
        self.fmt = fmt
        self.metrics = metrics
        self.speculator = make_speculator(model, spec)
        self.launch_draft_tokens = spec.num_draft_tokens
        # --speculative-adaptive: the active step count follows the accepted drafts (engine.adaptive)
        self.adaptive = AdaptiveSteps(spec.num_steps, spec.adaptive_slots, log.rank0) \
            if spec.adaptive_slots and hasattr(self.speculator, "set_steps") else None
        self.prefix_cache = PrefixCache(enabled=config.enable_prefix_cache)
        self.waiting: Deque[Request] = collections.deque()
        self.running: List[Request] = []
        self.prefilling: List[Request] = []  # the batch whose prefill runs now: neither waiting nor running
        self._wakeup = asyncio.Event()
        self._next: Optional[float] = None
        self.hung = False
        self.slow_factor = 1.0  # every forward pass takes this many times its modelled time
        self.timing = StepTiming()
        self.busy: Deque[Tuple[float, float]] = collections.deque()
        self.forward_ct = 0
        self.forward_ct_decode = 0
        self.last_gen_throughput = 0.0
        self.last_decode_tic = time.monotonic()
        self.last_prefill_tic = time.monotonic()
        self._win_generated = 0
        self._win_accept = 0
        self._win_correct = 0
        self._win_forward = 0
        self.total_accept = 0
        self.total_forward = 0
        self.cuda_graph_max_bs = cost.p.cuda_graph_max_bs
        # the most tokens a prefill runs as a (breakable) CUDA graph; 0: prefill graphs off
        self.prefill_graph_max_tokens = 0
        self.on_finished: Optional[Callable[[Request], None]] = None
        self.counters = Counters()
        self.last_output_mono = 0.0  # when a forward pass last gave any request its tokens
        self.last_stats_log = time.monotonic()  # when the gauges were last set
        self.max_in_flight = 0
        self._gauge_running = 0  # what num_running_reqs / gen_throughput last said
        self._gauge_gen = 0.0
        self.idle_since: Optional[float] = None  # when the scheduler last ran out of work (None: busy)

    # -- requests ---------------------------------------------------------------------------
    def submit(self, req: Request) -> None:
        self.waiting.append(req)
        self.max_in_flight = max(self.max_in_flight, len(self.waiting) + len(self.running))
        self._wakeup.set()

    @property
    def busy_now(self) -> bool:
        return bool(self.waiting or self.prefilling or self.running)

    def in_flight(self) -> List[Request]:
        """Every request the server holds and has not finished: queued, in the prefill that runs now, or
        decoding (SGLang counts a request from its arrival to its end: tokenizer_manager's ``rid_to_state``)."""
        return list(self.waiting) + list(self.prefilling) + list(self.running)

    def submit_health_check(self, req: Request) -> bool:
        """Run a health-check request only when idle (else running requests vouch for the
        server); returns whether it was queued."""
        if self.busy_now:
            self.counters.health_checks_skipped += 1
            return False
        self.counters.health_checks_run += 1
        self.submit(req)
        return True

    @property
    def num_used_tokens(self) -> int:
        return sum(r.seq_len for r in self.running)

    @property
    def token_usage(self) -> float:
        return self.num_used_tokens / max(1, self.config.max_total_num_tokens)

    def avg_spec_accept_length(self) -> Optional[float]:
        if not self.spec.enabled or self.total_forward <= 0:
            return None
        return self.total_accept / self.total_forward

    def flush(self) -> bool:
        """``/flush_cache``: only when idle, as SGLang does."""
        if self.busy_now:
            return False
        self.prefix_cache.reset()
        self.speculator.reset()
        self.total_accept = self.total_forward = 0
        self._win_accept = self._win_correct = self._win_forward = 0
        return True

    # -- utilization --------------------------------------------------------------------------
    def utilization(self, window_s: float = 1.0) -> float:
        """Busy fraction of the last ``window_s`` seconds of wall time."""
        now = time.monotonic()
        lo = now - window_s
        busy = self.busy
        while busy and busy[0][1] < lo:
            busy.popleft()
        total = 0.0
        for s, e in busy:
            total += max(0.0, min(e, now) - max(s, lo))
        return max(0.0, min(1.0, total / window_s))

    # -- the loop --------------------------------------------------------------------------------
    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        offset = time.monotonic() - loop.time()
        prev_wake: Optional[float] = None
        while True:
            if not self.waiting and not self.running:
                self._next = None
                prev_wake = None
                self._on_idle()
                if self.idle_since is None:
                    self.idle_since = time.monotonic()
                self._wakeup.clear()
                timeout = None
                if self.metrics is not None:
                    timeout = max(0.05, self.last_stats_log + IDLE_METRICS_S - time.monotonic())
                try:
                    await asyncio.wait_for(self._wakeup.wait(), timeout)
                except asyncio.TimeoutError:
                    pass
                self._count_idle()
                continue
            now = loop.time()
            start = self._next if (self._next is not None and now - self._next < RESYNC_S) else now
            cpu0 = time.thread_time()
            try:
                if self.waiting and len(self.running) < self.config.max_running_requests:
                    dur_ms, tokens, finish = self._prefill_step()
                else:
                    dur_ms, tokens, finish = self._decode_step()
            except Exception:  # a simulator bug: fail the requests in flight, keep serving
                self.log.rank0("Scheduler hit an exception: " + traceback.format_exc().rstrip())
                self._fail_all(time.monotonic())
                continue
            cpu = time.thread_time() - cpu0
            end = start + dur_ms / 1000.0
            delay = end - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            wake = loop.time()
            self._next = end
            self.busy.append((start + offset, end + offset))
            self.forward_ct += 1
            finish()
            self.last_output_mono = time.monotonic()
            # Back-to-back steps are timed wake to wake, so a late step shows up in full
            # while sleep overshoot (absorbed by the absolute deadlines) does not.
            actual = wake - (prev_wake if prev_wake is not None else start)
            prev_wake = wake
            self.timing.add(dur_ms / 1000.0, actual, cpu, tokens)

    # -- one prefill ----------------------------------------------------------------------------
    def _prefill_step(self):
        cfg = self.config
        room = cfg.max_running_requests - len(self.running)
        used = self.num_used_tokens
        batch: List[Request] = []
        new_tokens = cached_total = 0
        while self.waiting and len(batch) < room:
            req = self.waiting[0]
            if req.aborted:
                self.waiting.popleft()
                self._finish(req, time.monotonic())
                continue
            n = len(req.prompt_ids)
            if batch and (new_tokens + n > cfg.max_prefill_tokens or used + n > cfg.max_total_num_tokens):
                break
            self.waiting.popleft()
            req.cached_tokens = self.prefix_cache.match(req.prompt_ids)
            cached_total += req.cached_tokens
            new_tokens += n - req.cached_tokens
            used += n
            batch.append(req)
        self.prefilling = batch
        num_token = self.num_used_tokens + sum(len(r.prompt_ids) for r in batch)
        produced = 0
        for req in batch:
            req.start(self.model, cfg.base_seed)
            if req.params.max_new_tokens <= 0:
                req.finish_length_now()
                first = []
            else:
                first = req.commit(1, self.model.vocab)
            produced += len(first)
            self.speculator.on_prefill(req, first)
        now = time.monotonic()
        gap = now - self.last_prefill_tic
        self.last_prefill_tic = now
        usage = num_token / max(1, cfg.max_total_num_tokens)
        prefill_graph = 0 < new_tokens <= self.prefill_graph_max_tokens
        self.log.rank0(
            self.fmt.prefill(
                new_seq=len(batch), new_token=new_tokens, cached_token=cached_total, num_token=num_token,
                token_usage=usage, running=len(self.running), queue=len(self.waiting),
                input_throughput=new_tokens / gap if gap > 0 else 0.0,
                pending_tokens=sum(len(r.prompt_ids) for r in self.waiting), cuda_graph=prefill_graph,
            )
        )
        m = self.metrics
        if m is not None:
            total = new_tokens + cached_total
            m.cache_hit_rate.set(cached_total / total if total else 0.0)
            self._gauge_running = len(self.running) + len(batch)
            m.num_running_reqs.set(self._gauge_running)
            m.num_queue_reqs.set(len(self.waiting))
            m.token_usage.set(round(usage, 2))
            m.num_used_tokens.set(num_token)
            m.is_cuda_graph.set(1 if prefill_graph else 0)
            if self.fmt.era == "0.5.23":  # _current_gen_throughput: 0 once decode stats are 30 s old
                stale = now - self.last_decode_tic > IDLE_METRICS_S
                self._gauge_gen = 0.0 if stale else self.last_gen_throughput
                m.gen_throughput.set(self._gauge_gen)
            self.last_stats_log = now
        dur_ms = self.slow_factor * self.cost.prefill_ms(new_tokens,
                                                         extra_draft_extend=self.spec.algorithm in EAGLE_FAMILY)

        def finish():
            t = time.monotonic()
            self.prefilling = []
            for req in batch:
                self._publish(req, t)
                if req.finished:
                    self._finish(req, t)
                else:
                    self.running.append(req)
            self._win_generated += produced
            c = self.counters
            c.prefill_steps += 1
            c.prefill_s += dur_ms / 1000.0
            c.prefill_tokens += produced
            if m is not None:
                m.realtime_tokens(prefill_compute=new_tokens, prefill_cache=cached_total)
                m.forward_pass("prefill", prefill_graph)
                m.forward_seconds({"extend": dur_ms / 1000.0})

        return dur_ms, produced, finish

    # -- one decode step ------------------------------------------------------------------------
    def _decode_step(self):
        batch = [r for r in self.running if not r.aborted]
        aborted = [r for r in self.running if r.aborted]
        spec = self.spec
        adaptive = self.adaptive
        if adaptive is not None and batch:
            adaptive.before_batch(len(batch))
            self.speculator.set_steps(adaptive.steps)
        generated = accept = correct_sum = 0
        corrects = []
        for req, (out, correct) in zip(batch, self.speculator.step_batch(batch)):
            n = len(out)
            generated += n
            if spec.enabled:
                req.record_verify(correct)
                accept += n
                correct_sum += correct
                corrects.append(correct)
        bs = len(batch)
        # adaptive speculation at 0 steps drafts nothing, yet the target still runs its verify forward with a
        # one-node tree and the draft its extend (sglang 0.5.23 wheel, sglang/srt/speculative/eagle_worker_v2.py:
        # 1469-1472, 1490-1500; _build_trivial_verify_input, 1678-1686): the cost model's EAGLE step at 0 steps
        algorithm = spec.algorithm
        dur_ms = self.slow_factor * self.cost.step_ms(algorithm, bs, spec.num_steps, spec.eagle_topk,
                                                      spec.num_draft_tokens)
        cuda_graph = bs <= self.cuda_graph_max_bs
        device_s = {category: self.slow_factor * ms / 1000.0 for category, ms in self.cost.forward_parts(
            algorithm, bs, spec.num_steps, spec.eagle_topk, spec.num_draft_tokens, cuda_graph).items()}
        if adaptive is not None and corrects:
            adaptive.after_verify(corrects, bs)
            self.speculator.set_steps(adaptive.steps)

        def finish():
            t = time.monotonic()
            for req in aborted:
                self._finish(req, t)
            still = []
            for req in batch:
                self._publish(req, t)
                if req.finished:
                    self._finish(req, t)
                else:
                    still.append(req)
            self.running = still
            self.forward_ct_decode += 1
            self._win_generated += generated
            c = self.counters
            c.decode_steps += 1
            c.decode_s += dur_ms / 1000.0
            c.decode_stream_s += bs * dur_ms / 1000.0
            c.decode_tokens += generated
            if spec.enabled:
                c.verify_calls += bs
                c.correct_drafts += correct_sum
            if self.metrics is not None:
                self.metrics.realtime_tokens(decode=generated)
                self.metrics.forward_pass("decode", cuda_graph)
                self.metrics.forward_seconds(device_s)
            if spec.enabled:
                self._win_accept += accept
                self._win_correct += correct_sum
                self._win_forward += bs
            if self.forward_ct_decode % max(1, self.config.decode_log_interval) == 0:
                self._log_decode(bs, t)

        return dur_ms, generated, finish

    def _log_decode(self, bs: int, now: float) -> None:
        gap = now - self.last_decode_tic
        self.last_decode_tic = now
        self.last_gen_throughput = self._win_generated / gap if gap > 0 else 0.0
        self._win_generated = 0
        spec = self.spec
        accept_len = accept_rate = 0.0
        # the cumulative counters behind /server_info's avg_spec_accept_length take the window only
        # here, when the line is written (sglang 0.5.23 wheel,
        # sglang/srt/managers/scheduler_components/metrics_reporter.py:934-1000)
        self.total_accept += self._win_accept
        self.total_forward += self._win_forward
        if spec.enabled and self._win_forward > 0:
            accept_len = self._win_accept / self._win_forward
            # the launch value, as SGLang's log does (get_spec(), metrics_reporter.py:974-977), not the active width
            accept_rate = self.fmt.accept_rate(self._win_accept, self._win_correct, self._win_forward,
                                               self.launch_draft_tokens)
        self._win_accept = self._win_correct = self._win_forward = 0
        num_token = self.num_used_tokens
        usage = num_token / max(1, self.config.max_total_num_tokens)
        cuda_graph = bs <= self.cuda_graph_max_bs
        self.log.rank0(
            self.fmt.decode(
                running=bs, num_token=num_token, token_usage=usage, spec=spec.enabled, accept_len=accept_len,
                accept_rate=accept_rate, cuda_graph=cuda_graph, gen_throughput=self.last_gen_throughput,
                queue=len(self.waiting),
            )
        )
        m = self.metrics
        if m is not None:
            self.last_stats_log = time.monotonic()
            self._gauge_running, self._gauge_gen = bs, self.last_gen_throughput
            m.num_running_reqs.set(bs)
            m.num_queue_reqs.set(len(self.waiting))
            m.gen_throughput.set(self.last_gen_throughput)
            m.token_usage.set(round(usage, 2))
            m.num_used_tokens.set(num_token)
            m.is_cuda_graph.set(1 if cuda_graph else 0)
            m.utilization.set(min(1.0, bs / max(1, self.config.max_running_requests)))
            if spec.enabled:
                m.spec_accept_length.set(accept_len)
                m.spec_accept_rate.set(accept_rate)
                m.spec_num_steps.set(spec.num_steps)
                m.spec_num_draft_tokens.set(spec.num_draft_tokens)

    def _on_idle(self) -> None:
        """Idle gauges, as the era's scheduler publishes them (see the module docstring)."""
        m = self.metrics
        if m is None:
            return
        now = time.monotonic()
        stale = self.fmt.era == "0.5.23" and (self._gauge_running != 0 or self._gauge_gen != 0)
        if not stale and now <= self.last_stats_log + IDLE_METRICS_S:
            return
        m.num_running_reqs.set(0)
        m.num_queue_reqs.set(0)
        m.gen_throughput.set(0)
        self._gauge_running = self._gauge_gen = 0
        m.token_usage.set(0.0)
        m.num_used_tokens.set(0)
        self.last_stats_log = now

    def _count_idle(self) -> None:
        """Add the idle wall time since the last count to ``scheduler_idle_seconds_total``."""
        now = time.monotonic()
        if self.idle_since is not None and self.metrics is not None:
            self.metrics.idle_seconds(now - self.idle_since)
        self.idle_since = now if not (self.waiting or self.running) else None

    def _fail_all(self, now: float) -> None:
        for req in self.in_flight():
            req.abort("internal error")
            self._finish(req, now)
        self.waiting.clear()
        self.prefilling = []
        self.running = []

    # -- results ------------------------------------------------------------------------------------
    def _publish(self, req: Request, now: float) -> None:
        n_new = len(req.output_ids) - req.visible
        if n_new > 0:
            if req.first_token_mono is None:
                req.first_token_mono = now
                if self.metrics is not None and req.log_metrics:
                    self.metrics.observe_first_token(req.stream, now - req.arrival_mono)
            elif self.metrics is not None and req.log_metrics:
                self.metrics.observe_tokens(now - req.last_token_mono, n_new)
            req.last_token_mono = now
            req.visible = len(req.output_ids)
        req.updated.set()

    def _finish(self, req: Request, now: float) -> None:
        req.finished_mono = now
        if req.finish_reason is None:
            req.abort()
        if not req.aborted:
            self.prefix_cache.insert(req.prompt_ids + req.output_ids)
        if self.metrics is not None and req.log_metrics:
            self.metrics.observe_finished(
                streaming=req.stream, prompt_tokens=len(req.prompt_ids), generation_tokens=len(req.output_ids),
                cached_tokens=req.cached_tokens, e2e_s=now - req.arrival_mono, verify_ct=req.verify_ct,
                aborted=req.aborted, decode_s=(now - req.first_token_mono) if req.first_token_mono else 0.0,
            )
        self.counters.finished += 1
        if req.log_metrics:
            self.counters.recent.append(self._request_entry(req, now))
        if self.on_finished is not None:
            self.on_finished(req)
        req.updated.set()
        req.done.set()

    def _request_entry(self, req: Request, now: float) -> dict:
        n = len(req.output_ids)
        decode_s = (req.last_token_mono - req.first_token_mono) if (req.first_token_mono and req.last_token_mono) else 0.0
        p = req.params
        return {
            "rid": req.rid,
            "prompt_tokens": len(req.prompt_ids),
            "prompt_hash": req.prompt_hash(),
            "completion_tokens": n,
            "cached_tokens": req.cached_tokens,
            "temperature": p.temperature,
            "greedy": p.greedy,
            "seeded": p.seed is not None,
            "verify_ct": req.verify_ct,
            "correct_drafts": req.correct_drafts,
            "accept_length": n / req.verify_ct if req.verify_ct else None,
            "decode_s": decode_s,
            "decode_tok_s": (n - 1) / decode_s if decode_s > 0 and n > 1 else None,
            "e2e_s": now - req.arrival_mono,
            "finish": (req.finish_reason or {}).get("type"),
            "finished_at": time.time(),
        }
