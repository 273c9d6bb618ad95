"""The scheduler: one asyncio loop doing continuous batching in simulated GPU time.

Each iteration is one forward pass: a prefill of waiting requests when there is room, else a
decode step of every running request (plain, or draft + verify). The loop does the step's CPU
work (the simulation itself) up front, then sleeps until the cost model says the pass ends, and
only then makes the new tokens visible: clients measure real tokens per second. Deadlines are
absolute, so sleep overshoot does not accumulate while the loop is busy.
"""

from __future__ import annotations

import asyncio
import collections
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Deque, List, Optional, Tuple

from spectui.sim.engine.prefix_cache import PrefixCache
from spectui.sim.engine.request import Request
from spectui.sim.engine.speculation import EAGLE_FAMILY, SpecConfig, make_speculator
from spectui.sim.hardware import CostModel
from spectui.sim.logfmt import LogFormat, SimLogger
from spectui.sim.metrics import ServerMetrics
from spectui.sim.model.markov import TargetModel

RESYNC_S = 0.025  # a step starting later than this after its deadline starts from "now"


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
        self.prefix_cache = PrefixCache(enabled=config.enable_prefix_cache)
        self.waiting: Deque[Request] = collections.deque()
        self.running: List[Request] = []
        self._wakeup = asyncio.Event()
        self._next: Optional[float] = None
        self.hung = False
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
        self.on_finished: Optional[Callable[[Request], None]] = None

    # -- requests ---------------------------------------------------------------------------
    def submit(self, req: Request) -> None:
        self.waiting.append(req)
        self._wakeup.set()

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
        if self.waiting or self.running:
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
                self._wakeup.clear()
                await self._wakeup.wait()
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
        self.log.rank0(
            self.fmt.prefill(
                new_seq=len(batch), new_token=new_tokens, cached_token=cached_total, num_token=num_token,
                token_usage=usage, running=len(self.running), queue=len(self.waiting),
                input_throughput=new_tokens / gap if gap > 0 else 0.0,
            )
        )
        if self.metrics is not None:
            total = new_tokens + cached_total
            self.metrics.cache_hit_rate.set(cached_total / total if total else 0.0)
            self.metrics.num_running_reqs.set(len(self.running) + len(batch))
            self.metrics.num_queue_reqs.set(len(self.waiting))
            self.metrics.token_usage.set(round(usage, 2))
            self.metrics.num_used_tokens.set(num_token)
            self.metrics.is_cuda_graph.set(0)
        dur_ms = self.cost.prefill_ms(new_tokens, extra_draft_extend=self.spec.algorithm in EAGLE_FAMILY)

        def finish():
            t = time.monotonic()
            for req in batch:
                self._publish(req, t)
                if req.finished:
                    self._finish(req, t)
                else:
                    self.running.append(req)
            self._win_generated += produced

        return dur_ms, produced, finish

    # -- one decode step ------------------------------------------------------------------------
    def _decode_step(self):
        batch = [r for r in self.running if not r.aborted]
        aborted = [r for r in self.running if r.aborted]
        spec = self.spec
        step = self.speculator.step
        generated = accept = correct_sum = 0
        for req in batch:
            out, correct = step(req)
            n = len(out)
            generated += n
            if spec.enabled:
                req.record_verify(correct)
                accept += n
                correct_sum += correct
        bs = len(batch)
        dur_ms = self.cost.step_ms(spec.algorithm, bs, spec.num_steps, spec.eagle_topk, spec.num_draft_tokens)

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
            if spec.enabled:
                self._win_accept += accept
                self._win_correct += correct_sum
                self._win_forward += bs
                self.total_accept += accept
                self.total_forward += bs
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
        if spec.enabled and self._win_forward > 0:
            accept_len = self._win_accept / self._win_forward
            accept_rate = self.fmt.accept_rate(self._win_accept, self._win_correct, self._win_forward, spec.num_draft_tokens)
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

    def _fail_all(self, now: float) -> None:
        for req in list(self.waiting) + list(self.running):
            req.abort("internal error")
            self._finish(req, now)
        self.waiting.clear()
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
                aborted=req.aborted,
            )
        if self.on_finished is not None:
            self.on_finished(req)
        req.updated.set()
        req.done.set()
