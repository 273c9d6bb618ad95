"""The simulated server's life: listen, start the ranks, load, warm up, serve, stop (or fail).

The HTTP port is bound first, so ``/health`` answers 503 while the model loads. Faults on
request come from timers started once the server is ready.

On several nodes this is node 0 (the other nodes run ``follower``): its ranks are the first
``tp_size / nnodes``; it listens on the ``--dist-init-addr`` port during the distributed init and
waits there for every node (``spectui.sim.dist``), is ready only once all have loaded, sends them
its ranks' utilization while serving, and dies as SGLang's TP0 does when a node is lost: the
request broadcast fails (``Connection closed by peer``), ``Received sigquit from a child
process``, and ``kill_process_tree`` takes the whole process tree. A graceful stop tells the
other nodes to stop too (0.5.23's ShutdownReq broadcast); in the older eras they just lose it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from http import HTTPStatus
from typing import Optional

from spectui.sim import faults
from spectui.sim.dist import Rendezvous, peer_closed
from spectui.sim.engine.request import Request, SamplingParams
from spectui.sim.engine.scheduler import Scheduler, SchedulerConfig
from spectui.sim.hardware import cost_model
from spectui.sim.logfmt import LogFormat, SimLogger
from spectui.sim.metrics import ServerMetrics, device_timer_on
from spectui.sim.model.markov import get_model
from spectui.sim.ranks import RankGroup, rank_group
from spectui.sim.server.api import Api
from spectui.sim.server.config import ConfigError, ServerConfig, resolve, state_dir_of
from spectui.sim.server.http import HttpServer
from spectui.sim.server.node import host_gpus, node_logger, scheduler_died, server_args_line
from spectui.sim.server.startup import MemoryPlan, Startup

PUBLISH_S = 0.25
DRAIN_POLL_S = 5.0  # the SIGTERM watchdog's poll (tokenizer_manager.py:3509, 3539)


def prefill_graph_max_tokens(args, chunked_prefill_size: int) -> int:
    """The most tokens a prefill batch replays as a CUDA graph, 0 when prefill graphs are off.

    On CUDA 0.5.23 captures breakable prefill graphs by default (sglang 0.5.23 wheel,
    sglang/srt/model_executor/cuda_graph_config.py:119-123) up to ``chunked_prefill_size`` tokens,
    capped at ``--max-total-tokens`` (sglang/srt/arg_groups/memory_hook.py:233-256);
    ``--disable-cuda-graph``, ``--disable-prefill-cuda-graph`` or a ``disabled`` prefill backend turn
    them off, an explicit prefill backend winning (cuda_graph_hook.py:54-71). Older releases wrote no graph field in a prefill line.
    """
    if not hasattr(args, "cuda_graph_backend_prefill"):
        return 0
    backend = args.cuda_graph_backend_prefill  # an explicit backend wins over the off-switches
    if backend == "disabled" or (backend is None and (args.disable_cuda_graph or args.disable_prefill_cuda_graph)):
        return 0
    limit = getattr(args, "cuda_graph_max_bs_prefill", None) or chunked_prefill_size
    if getattr(args, "max_total_tokens", None):
        limit = min(limit, args.max_total_tokens)
    return max(0, limit)
WARMUP_PROMPT = "The capital city of France is"


class SimServer:
    def __init__(self, cfg: ServerConfig):
        self.cfg = cfg
        self.args = cfg.args
        self.fmt = LogFormat(cfg.era)
        self.log = node_logger(cfg)
        self.metrics = ServerMetrics(cfg.served_model_name, era=cfg.era, dp_size=getattr(self.args, "dp_size", 1) or 1,
                                     device_timer=device_timer_on(os.environ)) if self.args.enable_metrics else None
        self.model = get_model()
        self.state_dir = state_dir_of(self.args)
        self.ready = False
        # the tokenizer manager's server_status (Starting, Up, UnHealthy) and gracefully_exit
        # (sglang 0.5.23 wheel, sglang/srt/managers/tokenizer_manager.py:718-734)
        self.status = "Starting"
        self.gracefully_exit = False
        self._sigterm = False
        self.startup_time = time.time()
        self.ready_time: Optional[float] = None
        self.load_weight_s = 0.0
        self.scheduler: Optional[Scheduler] = None
        self.plan: Optional[MemoryPlan] = None
        self.ranks: Optional[RankGroup] = None
        self.cost = cost_model(cfg.hardware, cfg.tp_size, cfg.weights_gb, cfg.nnodes)
        self.rendezvous: Optional[Rendezvous] = None
        self._stop = None

    # -- what the endpoints report ------------------------------------------------------------------
    def server_info(self) -> dict:
        """``/server_info`` as the release builds it.

        0.5.23 (sglang 0.5.23 wheel, sglang/srt/entrypoints/http_server.py:863-892 and
        sglang/srt/utils/common.py:3584-3593): the resolved args, ``launch_command`` (the flags as
        given, sglang/srt/server_args.py:710-719), the scheduler's init info (``status``,
        ``max_total_num_tokens``, ``max_req_input_len``: ``min(context_len - 1, kv tokens - 1) - 5``,
        sglang/srt/managers/tp_worker.py:568-572; its ``startup_time`` phases and
        ``hicache_object_layout``: sglang/srt/managers/scheduler.py:1937-1950), ``kv_events``,
        ``startup_time`` (the phases plus ``tokenizer_e2e``), then ``internal_states``, one per DP
        rank, each the resolved args plus what internal_state.py:65-125 adds: ``world_size`` =
        dp x tp x pp, the phases, ``memory_usage`` (every graph phase), the PD fields and, once a
        Decode line has been written, ``avg_spec_accept_length``.
        """
        cfg = self.cfg
        args = cfg.server_args()
        sched = self.scheduler
        plan = self.plan
        new = cfg.era == "0.5.23"
        a = cfg.args
        dp, pp = getattr(a, "dp_size", 1) or 1, getattr(a, "pp_size", 1) or 1
        graph_gb = round((plan.graph_mib if plan and cfg.cuda_graph_max_bs else 0.0) / 1024.0, 3)
        graph = {"decode": graph_gb}
        if new:
            graph = {"prefill": 0.0, "decode": graph_gb, "target_verify": 0.0, "draft_prefill": 0.0,
                     "draft_decode": 0.0, "draft_extend": 0.0}
        phases = self.startup_phases()
        state = dict(args)
        state.pop("custom_sigquit_handler", None)
        state.update(
            world_size=dp * cfg.tp_size * pp,
            startup_time=phases if new else self.startup_time,
            effective_max_running_requests_per_dp=cfg.max_running_requests,
            last_gen_throughput=sched.last_gen_throughput if sched else 0.0,
            memory_usage={
                "weight": round((plan.weights_mib if plan else 0.0) / 1024.0, 3),
                "kvcache": round((plan.kv_mib if plan else 0.0) / 1024.0, 3),
                "startup_available": round(((plan.total_mib - plan.other_mib - plan.weights_mib) if plan else 0.0) / 1024.0, 3),
                "token_capacity": plan.max_total_num_tokens if plan else 0,
                "token_capacity_swa": None,
                "graph": graph,
            },
        )
        if new:
            state.update(disaggregation_mode="null",
                         decode_cuda_graph_bs=self.decode_graph_batch_sizes(),
                         decode_cuda_graph_memory_gb=round(sum(graph[k] for k in ("decode", "target_verify",
                                                                                  "draft_decode", "draft_extend")), 3))
        avg = sched.avg_spec_accept_length() if sched else None
        if avg is not None:
            state["avg_spec_accept_length"] = avg
        out = dict(args)
        if new:
            tokens = plan.max_total_num_tokens if plan else 0
            out.update(
                launch_command=self.launch_command(),
                status="ready",
                max_total_num_tokens=tokens,
                max_req_input_len=min(cfg.context_len - 1, tokens - 1) - 5,
                hicache_object_layout={"enabled": False, "backend": None, "page_size": getattr(a, "page_size", None) or 1,
                                       "hicache_object_layout": {"pools": []},
                                       "reason": "Hierarchical cache is disabled"},
                kv_events=None,
            )
            out.setdefault("custom_sigquit_handler", None)
        out.update(startup_time=dict(phases, tokenizer_e2e=phases["scheduler_e2e"]) if new else self.startup_time,
                   internal_states=[state], version=self.fmt.version, frontend="python")
        return out

    def startup_phases(self) -> dict:
        """How long each start-up phase took, in seconds (sglang/srt/observability/startup_time.py:11-28)."""
        graph = {k: 0.0 for k in ("prefill", "decode", "target_verify", "draft_prefill", "draft_decode", "draft_extend")}
        end = self.ready_time or time.time()
        return {"load_weight": self.load_weight_s, "kv_cache_allocation": 0.0,
                "scheduler_e2e": max(0.0, end - self.startup_time), "cuda_graph": graph}

    def decode_graph_batch_sizes(self) -> list:
        """The decode CUDA graph batch sizes (empty when decode graphs are off)."""
        top = self.cfg.cuda_graph_max_bs
        if not top:
            return []
        given = getattr(self.args, "sim_cuda_graph_bs", None)
        if given:
            return sorted(b for b in given if b <= top)
        return sorted(set([1, 2, 4, 8, 12] + list(range(16, top + 1, 8))) & set(range(1, top + 1)))

    def launch_command(self) -> str:
        """The flags as given, without the simulator's own ``--sim-*`` knobs."""
        return " ".join(getattr(self.args, "sim_launch_argv", ()) or ())

    def sim_stats(self) -> dict:
        """The simulator's own ground truth (not an SGLang endpoint).

        ``ready``, ``era``, ``hardware`` (the cost model's terms), ``timing`` (modelled vs actual
        step times), ``utilization`` (busy share of the last second), ``slow_factor`` (1 until
        ``--sim-slow-after``), ``rank_pids`` (this node's); ``nodes``: ``nnodes``, ``node_rank``,
        ``tp_per_node``, ``dist_init`` and the other nodes that ``joined`` (each its ``node_rank``,
        ``pid``, ``host``, ``rank_pids`` and ``state`` folder);
        ``running``, ``waiting``, ``in_flight`` (those and the batch whose prefill runs now: every request
        the server holds, as SGLang counts one from its arrival to its end) and ``max_in_flight`` (the most
        at once);
        ``counters``: since start, counted as the scheduler ran (see engine.scheduler.Counters):
        ``generated_tokens`` (= ``prefill_tokens`` + ``decode_tokens``), ``verify_calls`` and
        ``correct_drafts`` (per request and decode step), ``accept_length`` (decode tokens per
        verify call: the log line's figure), ``decode_s`` (modelled decode time),
        ``decode_stream_s`` (the same times the batch size) and ``stream_decode_tok_s`` (decode
        tokens per second of decode time seen by one request), prefill step counts and time,
        ``requests_finished``, health checks run and skipped; ``recent``: the last finished
        requests (health checks excluded), each with its prompt size and hash, sampling knobs,
        completion tokens, verify steps, accept length, ``decode_s`` (first to last token, wall
        clock) and ``decode_tok_s``; ``ngram``: the trie's node count, evictions, resets.
        """
        sched = self.scheduler
        cache = getattr(sched.speculator, "cache", None) if sched else None
        return {
            "ready": self.ready,
            "era": self.cfg.era,
            "hardware": self.cost.describe(),
            "timing": sched.timing.as_dict() if sched else None,
            "utilization": sched.utilization() if sched else 0.0,
            "slow_factor": sched.slow_factor if sched else 1.0,
            "rank_pids": self.ranks.pids if self.ranks else [],
            "nodes": {
                "nnodes": self.cfg.nnodes, "node_rank": self.cfg.node_rank, "tp_per_node": self.cfg.tp_per_node,
                "dist_init": "%s:%s" % (self.cfg.dist_host, self.cfg.dist_port) if self.cfg.nnodes > 1 else None,
                "joined": self.rendezvous.describe() if self.rendezvous else [],
            },
            "running": len(sched.running) if sched else 0,
            "waiting": len(sched.waiting) if sched else 0,
            "in_flight": len(sched.in_flight()) if sched else 0,  # with the batch whose prefill runs now
            "max_in_flight": sched.max_in_flight if sched else 0,
            "counters": sched.counters.as_dict() if sched else None,
            "recent": list(sched.counters.recent) if sched else [],
            "ngram": None if cache is None else {
                "nodes": cache.nodes, "capacity": cache.capacity, "evicted": cache.evicted, "resets": cache.resets,
                "inserted_tokens": cache.inserted_tokens,
            },
            "ngram_trie_nodes": cache.nodes if cache is not None else None,
        }

    # -- logging helpers ---------------------------------------------------------------------------------
    def access_log(self, client: str, request_line: str, status: int) -> None:
        """uvicorn's access line: the status code and its phrase (``200 OK``)."""
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        self.log.info(('INFO:     %s - "%s" %d %s' % (client, request_line, status, phrase)).rstrip())

    def _server_args_line(self) -> str:
        return server_args_line(self.cfg)

    # -- life ----------------------------------------------------------------------------------------------
    async def _publish_loop(self) -> None:
        while True:
            util = self.scheduler.utilization(1.0) if self.scheduler is not None else 0.0
            self.ranks.publish(util)
            if self.rendezvous is not None and self.ready:
                self.rendezvous.send_all({"util": round(util, 4)})
            await asyncio.sleep(PUBLISH_S)

    async def _watch_nodes(self) -> None:
        """A node lost while serving: TP0's request broadcast fails and the tree is killed."""
        peer = await self.rendezvous.lost
        self._scheduler_died(peer_closed(peer.addr[0], peer.addr[1], source=True))

    async def _warmup(self) -> None:
        ids = self.model.vocab.encode(WARMUP_PROMPT)
        r = Request(ids, SamplingParams(max_new_tokens=8, temperature=0.0))
        self.scheduler.submit(r)
        await r.done.wait()
        self.access_log("127.0.0.1:%d" % (40000 + os.getpid() % 20000), "POST /generate HTTP/1.1", 200)

    def _fail(self, failure: faults.LoadFailure) -> int:
        tb = str(failure)
        self.log.info("Scheduler hit an exception: " + tb.splitlines()[0], rank=0)
        for line in tb.splitlines()[1:]:
            self.log.raw(line)
        self.log.raw("")
        faults.write_lines(sys.stderr, faults.launcher_init_failed_traceback())
        if self.ranks is not None:
            self.ranks.kill()
        return 1

    def _crash(self) -> None:
        self._scheduler_died(faults.crash_traceback())

    def _scheduler_died(self, tb: str) -> None:
        scheduler_died(self.log, tb, self.ranks)

    def _hang(self) -> None:
        faults.hang_forever(self.ranks)

    def _slow_down(self) -> None:
        faults.slow_down(self.scheduler, self.args.sim_slow_factor)

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        loop.add_signal_handler(signal.SIGINT, self._stop.set)
        loop.add_signal_handler(signal.SIGTERM, self._on_sigterm)
        args, cfg, log = self.args, self.cfg, self.log

        seats = host_gpus(self.state_dir, cfg, log)
        if seats is None:
            return 1
        gpus, total_mib, other_mib = seats

        api = Api(self)
        http = HttpServer(api.handle, self.access_log)
        try:
            await http.start(args.host, args.port)
        except OSError as exc:
            log.info("ERROR:    [Errno %s] error while attempting to bind on address (%r, %d): %s"
                     % (exc.errno, args.host, args.port, (exc.strerror or str(exc)).lower()))
            return 1

        log.info(self._server_args_line())
        for w in cfg.warnings:
            log.info(w)
        self.ranks = rank_group(self.state_dir, gpus, orphan_timeout=args.sim_orphan_timeout, tp_size=cfg.tp_size)
        self.ranks.start()
        publisher = asyncio.create_task(self._publish_loop())
        if cfg.nnodes > 1:
            self.rendezvous = Rendezvous(cfg.dist_host, cfg.dist_port, cfg.nnodes, cfg.tp_size, cfg.dist_timeout_s,
                                         total_mib, other_mib)
        rdv = self.rendezvous
        startup = Startup(cfg, log, self.ranks, total_mib, args.sim_load_time * args.sim_time_scale,
                          fail_oom=(args.sim_fail_load == "oom"), other_mib=other_mib,
                          rendezvous=rdv.meet if rdv else None, after_load=rdv.wait_loaded if rdv else None)
        self.plan = startup.plan
        load = asyncio.create_task(startup.run())
        load_started = time.time()
        stop_wait = asyncio.create_task(self._stop.wait())
        done, _ = await asyncio.wait({load, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
        if load not in done:
            load.cancel()
            return await self._shutdown(http, publisher, graceful=True)
        if load.exception() is not None:
            exc = load.exception()
            publisher.cancel()
            http.close()
            if self.rendezvous is not None:
                self.rendezvous.close()
            if isinstance(exc, faults.LoadFailure):
                return self._fail(exc)
            raise exc
        self.plan = startup.plan  # on several nodes: planned over all of them
        self.load_weight_s = time.time() - load_started

        await asyncio.get_running_loop().run_in_executor(None, self.ranks.wait_reported)
        sched_cfg = SchedulerConfig(
            max_running_requests=cfg.max_running_requests,
            max_prefill_tokens=max(args.max_prefill_tokens, cfg.chunked_prefill_size),
            max_total_num_tokens=self.plan.max_total_num_tokens,
            decode_log_interval=args.decode_log_interval,
            base_seed=args.random_seed if args.random_seed is not None else args.sim_seed,
            enable_prefix_cache=not args.disable_radix_cache,
        )
        self.scheduler = Scheduler(self.model, self.cost, cfg.spec, sched_cfg, log, self.fmt, self.metrics)
        self.scheduler.cuda_graph_max_bs = cfg.cuda_graph_max_bs
        self.scheduler.prefill_graph_max_tokens = prefill_graph_max_tokens(args, cfg.chunked_prefill_size)
        if self.metrics is not None:
            self.metrics.max_total_num_tokens.set(self.plan.max_total_num_tokens)
        sched_task = asyncio.create_task(self.scheduler.run())
        log.info("INFO:     Started server process [%d]" % os.getpid())
        log.info("INFO:     Waiting for application startup.")
        log.info("INFO:     Application startup complete.")
        log.info("INFO:     Uvicorn running on http://%s:%d (Press CTRL+C to quit)" % (args.host, args.port))
        if not args.skip_server_warmup:
            self.access_log("127.0.0.1:%d" % (40000 + os.getpid() % 20000), "GET /model_info HTTP/1.1", 200)
            await self._warmup()
        self.ready = True
        self.status = "Up"
        self.ready_time = time.time()
        log.info("The server is fired up and ready to roll!")
        watcher = asyncio.create_task(self._watch_nodes()) if self.rendezvous is not None else None
        if args.sim_crash_after is not None:
            loop.call_later(max(0.0, args.sim_crash_after), self._crash)
        if args.sim_hang_after is not None:
            loop.call_later(max(0.0, args.sim_hang_after), self._hang)
        if args.sim_slow_after is not None:
            loop.call_later(max(0.0, args.sim_slow_after), self._slow_down)
        await self._stop.wait()
        if self._sigterm and cfg.era != "0.4":
            await self._drain()
        sched_task.cancel()
        if watcher is not None:
            watcher.cancel()
        return await self._shutdown(http, publisher, graceful=True)

    def _on_sigterm(self) -> None:
        self._sigterm = True
        self._stop.set()

    async def _drain(self) -> None:
        """SGLang's graceful exit (sglang 0.5.23 wheel, sglang/srt/managers/tokenizer_manager.py:
        3508-3542 and 4066-4070): health checks answer 503 from the signal on, requests in flight
        are served to their end, polled every 5 s, then the server stops; after a failed health
        check it stops at once. SGLang's watchdog also first waits for its next 5 s tick; the
        simulator starts draining at the signal."""
        log = self.log
        log.info("SIGTERM received. signum=None frame=None. Draining requests and shutting down...")
        self.gracefully_exit = True
        sched = self.scheduler
        while True:
            if self.status == "UnHealthy":
                log.info("Signal SIGTERM received while health check failed. Force exiting.")
                return
            rids = [r.rid for r in sched.in_flight()] if sched is not None else []
            log.info("Gracefully exiting... Remaining number of requests %d. Remaining requests remaining_rids=%r."
                     % (len(rids), rids))
            if not rids:
                return
            await asyncio.sleep(DRAIN_POLL_S)

    async def _shutdown(self, http: HttpServer, publisher, graceful: bool) -> int:
        self.ready = False
        http.close()
        publisher.cancel()
        if self.rendezvous is not None:
            if self.cfg.era == "0.5.23":  # the ShutdownReq broadcast reaches every node's ranks
                self.rendezvous.send_all({"shutdown": True})
            await self.rendezvous.aclose()
        if self.ranks is not None:
            self.ranks.stop()
        return 0


def run_server(cfg: ServerConfig) -> int:
    server = SimServer(cfg)
    try:
        return asyncio.run(server.run())
    except KeyboardInterrupt:
        if server.ranks is not None:
            server.ranks.stop()
        return 0


def main(argv=None) -> int:
    from spectui.sim.server.cli import parse_args

    ns = parse_args(argv)
    try:
        cfg = resolve(ns)
    except ConfigError as exc:
        SimLogger(sys.stdout).info(str(exc))
        faults.write_lines(sys.stderr, "ValueError: %s" % exc)
        return 1
    if cfg.node_rank > 0:
        from spectui.sim.server.follower import run_follower

        return run_follower(cfg)
    return run_server(cfg)
