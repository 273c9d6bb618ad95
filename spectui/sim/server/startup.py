"""Start-up as SGLang does it: distributed init, weight loading (with tqdm progress lines), the
KV pool at ``--mem-fraction-static``, CUDA graph capture; the virtual GPUs fill as it goes.

The whole sequence takes ``--sim-load-time`` seconds. It fails as SGLang fails: weights that do
not fit in what the GPU has free raise a CUDA out-of-memory error during loading
(``--sim-fail-load oom`` forces one), and a static fraction too small for the weights, or memory
still held by another server or by orphaned ranks, leaves no room for the KV pool.

On several nodes the distributed init is where the nodes meet (``rendezvous``: it waits for them
and gives the joint memory of all nodes, so every node plans the same KV pool, as SGLang plans it
from the least free memory over all ranks), each rank warns that the custom all-reduce is off, and
node 0 is done only once every node has loaded (``after_load``).
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass
from typing import Awaitable, Callable, Optional, Tuple

from spectui.sim.faults import LoadFailure, oom_traceback, not_enough_memory_traceback
from spectui.sim.logfmt import SimLogger
from spectui.sim.ranks import RankGroup
from spectui.sim.server.config import CUDA_CONTEXT_MIB, GRAPH_MIB, KV_KIB_PER_TOKEN, ServerConfig

GIB = 1024.0


@dataclass
class MemoryPlan:
    total_mib: float
    other_mib: float  # held on the same GPU by other processes (another server, orphaned ranks)
    weights_mib: float
    draft_mib: float
    kv_mib: float
    graph_mib: float
    max_total_num_tokens: int


def plan_memory(cfg: ServerConfig, total_mib: float, other_mib: float = 0.0) -> MemoryPlan:
    """SGLang's rule: the KV pool gets what is left of the *available* memory once
    ``(1 - mem_fraction_static)`` of the GPU is set aside, so memory held by other processes
    shrinks it (or leaves no room at all)."""
    tp = cfg.tp_size
    weights = cfg.weights_gb * 1024.0 / tp
    draft = cfg.draft_weights_gb * 1024.0 / tp
    available = total_mib - other_mib - CUDA_CONTEXT_MIB - weights - draft
    kv = available - total_mib * (1.0 - cfg.mem_fraction_static)
    per_token_kib = KV_KIB_PER_TOKEN / tp
    tokens = int(max(0.0, kv) * 1024.0 / per_token_kib)
    if cfg.args.max_total_tokens:
        tokens = min(tokens, int(cfg.args.max_total_tokens))
        kv = min(kv, tokens * per_token_kib / 1024.0)
    return MemoryPlan(total_mib, other_mib, weights, draft, kv, GRAPH_MIB, tokens)


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return "%02d:%02d" % (seconds // 60, seconds % 60)


def tqdm_line(desc: str, k: int, n: int, elapsed: float) -> str:
    pct = 100.0 * k / n if n else 100.0
    if k == 0 or elapsed <= 0:
        rest, rate = "?", "?it/s"
    else:
        per = elapsed / k
        rest = _clock(per * (n - k))
        rate = ("%.2fs/it" % per) if per >= 1.0 else ("%.2fit/s" % (1.0 / per))
    return "%s: %3.0f%% Completed | %d/%d [%s<%s, %s]" % (desc, pct, k, n, _clock(elapsed), rest, rate)


class Startup:
    def __init__(self, cfg: ServerConfig, log: SimLogger, ranks: RankGroup, total_mib: float,
                 load_time: float, fail_oom: bool = False, sleep: Callable = asyncio.sleep, other_mib: float = 0.0,
                 rendezvous: Optional[Callable[[], Awaitable[Tuple[float, float]]]] = None,
                 after_load: Optional[Callable[[], Awaitable[None]]] = None):
        self.cfg = cfg
        self.log = log
        self.ranks = ranks
        self.plan = plan_memory(cfg, total_mib, other_mib)
        self.load_time = max(0.0, load_time)
        self.fail_oom = fail_oom
        self.sleep = sleep
        self.used_mib = 0.0
        self.rendezvous = rendezvous  # the nodes meet: the joint (total_mib, other_mib)
        self.after_load = after_load  # waits for the other nodes' load

    def _set_used(self, mib: float) -> None:
        self.used_mib = mib
        self.ranks.set_memory(mib)
        self.ranks.publish()

    def _avail_gb(self) -> float:
        return max(0.0, self.plan.total_mib - self.plan.other_mib - self.used_mib) / GIB

    async def run(self) -> None:
        cfg, log, plan, L = self.cfg, self.log, self.plan, self.load_time
        t0 = time.monotonic()
        log.all_ranks("Init torch distributed begin.")
        if self.rendezvous is not None:
            total_mib, other_mib = await self.rendezvous()
            self.plan = plan = plan_memory(cfg, total_mib, other_mib)
        await self.sleep(0.06 * L)
        self._set_used(CUDA_CONTEXT_MIB)
        if cfg.nnodes > 1:
            log.all_ranks(custom_all_reduce_off(cfg.era))
        log.all_ranks("Init torch distributed ends. mem usage=%.2f GB" % (CUDA_CONTEXT_MIB / GIB))
        log.all_ranks("Load weight begin. avail mem=%.2f GB" % self._avail_gb())

        shards = max(1, int(round(cfg.weights_gb / 9.4)))
        shard_mib = plan.weights_mib / shards
        load_s = 0.6 * L
        desc = "Loading safetensors checkpoint shards"
        tw = time.monotonic()
        log.raw(tqdm_line(desc, 0, shards, 0.0))
        oom_at = None
        if self.fail_oom:
            oom_at = max(1, int(math.ceil(shards * 0.6)))
        for k in range(1, shards + 1):
            await self.sleep(load_s / shards)
            need = CUDA_CONTEXT_MIB + shard_mib * k
            room = plan.total_mib - plan.other_mib
            if need > room or (oom_at is not None and k >= oom_at):
                self._set_used(max(self.used_mib, room - 210.0))
                raise LoadFailure(oom_traceback(shard_mib, plan.total_mib, self.used_mib + plan.other_mib))
            self._set_used(need)
            log.raw(tqdm_line(desc, k, shards, time.monotonic() - tw))
        log.all_ranks(
            "Load weight end. elapsed=%.2f s, type=%s, avail mem=%.2f GB, mem usage=%.2f GB."
            % (time.monotonic() - tw, cfg.architecture, self._avail_gb(), plan.weights_mib / GIB)
        )
        if plan.draft_mib > 0:
            log.all_ranks("Load weight begin. avail mem=%.2f GB" % self._avail_gb())
            await self.sleep(0.04 * L)
            self._set_used(self.used_mib + plan.draft_mib)
            log.all_ranks(
                "Load weight end. elapsed=%.2f s, type=%s, avail mem=%.2f GB, mem usage=%.2f GB."
                % (0.04 * L, "LlamaForCausalLMEagle3" if cfg.spec.algorithm == "EAGLE3" else cfg.architecture,
                   self._avail_gb(), plan.draft_mib / GIB)
            )
        if plan.kv_mib < 512.0 or plan.max_total_num_tokens < 256:
            raise LoadFailure(not_enough_memory_traceback())
        await self.sleep(0.05 * L)
        self._set_used(self.used_mib + plan.kv_mib)
        kv_gb = plan.kv_mib / GIB
        log.all_ranks("KV Cache is allocated. #tokens: %d, K size: %.2f GB, V size: %.2f GB"
                      % (plan.max_total_num_tokens, kv_gb / 2, kv_gb / 2))
        log.all_ranks("Memory pool end. avail mem=%.2f GB" % self._avail_gb())
        if cfg.cuda_graph_max_bs > 0:
            log.all_ranks("Capture cuda graph begin. This can take up to several minutes. avail mem=%.2f GB" % self._avail_gb())
            tg = time.monotonic()
            await self.sleep(0.12 * L)
            self._set_used(min(plan.total_mib - plan.other_mib - 64.0, self.used_mib + plan.graph_mib))
            log.all_ranks("Capture cuda graph end. Time elapsed: %.2f s. mem usage=%.2f GB. avail mem=%.2f GB."
                          % (time.monotonic() - tg, plan.graph_mib / GIB, self._avail_gb()))
        if cfg.first_rank == 0:  # global TP0 only (sglang 0.5.23 wheel, sglang/srt/managers/scheduler.py:1267)
            log.rank0(
                "max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=%d, max_running_requests=%d, "
                "context_len=%d, available_gpu_mem=%.2f GB"
                % (plan.max_total_num_tokens, cfg.chunked_prefill_size, cfg.args.max_prefill_tokens,
                   cfg.max_running_requests, cfg.context_len, self._avail_gb())
            )
        rest = L - (time.monotonic() - t0) - 0.08 * L
        if rest > 0:
            await self.sleep(rest)
        if self.after_load is not None:
            await self.after_load()


def custom_all_reduce_off(era: str) -> str:
    """Each rank's warning when its TP group spans nodes (sglang 0.5.23 wheel,
    sglang/srt/distributed/device_communicators/custom_all_reduce_utils.py:459-464; 0.5.6
    custom_all_reduce.py:93-99; 0.4.6.post5 custom_all_reduce.py:184-190)."""
    name = "CustomAllreduce" if era == "0.5.23" else "Custom allreduce"
    return "%s is disabled because this process group spans across nodes." % name
