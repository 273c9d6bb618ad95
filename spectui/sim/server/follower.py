"""A node of rank 1 or above of a multi-node server: its own host's ranks, no API.

In SGLang a node with ``--node-rank`` 1 or above starts its share of the TP schedulers (global ranks
``node_rank * tp_size / nnodes`` on) and no tokenizer or HTTP API: it waits for its schedulers to
be ready, then serves only a dummy health check on its ``--host``/``--port`` and blocks until they
exit (sglang 0.5.23 wheel, sglang/srt/entrypoints/engine.py:1234-1290; 0.5.6 engine.py:868-891;
0.4.6.post5 engine.py:617-636). The dummy answers ``/health`` and ``/health_generate`` with an
empty 200, ``/ping`` too and ``/metrics`` with ``--enable-metrics`` since 0.5.6, and nothing else
(sglang/srt/utils/common.py:3624-3670 in 0.5.23, 2430-2475 in 0.5.6, utils.py:1861-1890 in
0.4.6.post5); it logs no access lines (uvicorn at ``log_level="warning"``).

Here one process stands for the node: its ranks claim this host's virtual GPUs (its
``--sim-state``), it reaches node 0 at ``--dist-init-addr`` during the distributed init
(``spectui.sim.dist``; an address where nobody listens fails with torch's ``DistNetworkError``
after two tries), loads with the other nodes, tells node 0 it has loaded, then opens the dummy
health check and shows node 0's utilization on its ranks. It ends as SGLang's does:

* node 0's graceful stop (0.5.23's ShutdownReq broadcast): every scheduler exits, the launcher logs
  ``Scheduler or DataParallelController <pid> terminated with 0`` for each and exits 0;
* node 0 gone (killed, crashed, or stopped in an older era): the ranks' request broadcast fails with
  ``Connection closed by peer``, the first rank logs ``Scheduler hit an exception``, the launcher
  ``Received sigquit from a child process`` and ``kill_process_tree`` kills the node (SIGKILL);
* SIGTERM: 0.5.23 only logs ``SIGTERM received on node_rank N; waiting for the rank-0 ShutdownReq
  broadcast to stop the schedulers.`` and keeps running (engine.py:1265-1272; the orchestrator's
  kill is the backstop); the older eras stop.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from typing import Optional

from spectui.sim import faults
from spectui.sim.dist import NodeLink, peer_closed
from spectui.sim.ranks import RankGroup, rank_group
from spectui.sim.server.config import ServerConfig, state_dir_of
from spectui.sim.server.http import HttpRequest, HttpResponse, HttpServer
from spectui.sim.server.node import host_gpus, node_logger, scheduler_died, server_args_line
from spectui.sim.server.startup import Startup

NOT_FOUND = {"detail": "Not Found"}


class DummyHealth:
    """The dummy health check server's routes, per era."""

    def __init__(self, era: str, metrics: bool):
        self.paths = {"/health", "/health_generate"}
        if era != "0.4":
            self.paths.add("/ping")
            if metrics:
                self.paths.add("/metrics")

    async def handle(self, req: HttpRequest) -> HttpResponse:
        path = req.path.rstrip("/") or "/"
        if path not in self.paths:
            return HttpResponse.json(NOT_FOUND, 404)
        if req.method not in ("GET", "HEAD"):
            return HttpResponse.json({"detail": "Method Not Allowed"}, 405)
        if path == "/metrics":
            return HttpResponse(200, b"", "text/plain; version=0.0.4; charset=utf-8")
        return HttpResponse(200, b"", None)


class FollowerNode:
    def __init__(self, cfg: ServerConfig):
        self.cfg = cfg
        self.args = cfg.args
        self.log = node_logger(cfg)
        self.state_dir = state_dir_of(self.args)
        self.ranks: Optional[RankGroup] = None
        self.link: Optional[NodeLink] = None
        self.http: Optional[HttpServer] = None
        self._stop = asyncio.Event()
        self._leader_gone = asyncio.Event()
        self._shutdown = asyncio.Event()
        self._pump_task: Optional[asyncio.Future] = None

    # -- signals --------------------------------------------------------------------------------
    def _on_sigterm(self) -> None:
        if self.cfg.era == "0.5.23":
            self.log.info("SIGTERM received on node_rank %d; waiting for the rank-0 ShutdownReq broadcast to stop "
                          "the schedulers." % self.cfg.node_rank)
        else:
            self._stop.set()

    # -- node 0 ---------------------------------------------------------------------------------
    async def _meet(self, total_mib: float, other_mib: float):
        cfg = self.cfg
        self.link = link = NodeLink(cfg.dist_host, cfg.dist_port, cfg.dist_timeout_s,
                                    err=lambda line: faults.write_lines(sys.stderr, line))
        await link.connect()
        hello = {"node_rank": cfg.node_rank, "nnodes": cfg.nnodes, "tp_size": cfg.tp_size, "pid": os.getpid(),
                 "host": socket.gethostname(), "state": self.state_dir, "total_mib": total_mib,
                 "other_mib": other_mib, "rank_pids": self.ranks.pids}
        joint = await link.join(hello, cfg.tp_size)
        self._pump_task = asyncio.ensure_future(self._pump())
        return joint

    async def _loaded(self) -> None:
        self.link.send({"loaded": {}})

    async def _pump(self) -> None:
        """Node 0's messages: its utilization, its shutdown; the end of the connection is its loss."""
        while True:
            msg = await self.link.next()
            if msg is None:
                self._leader_gone.set()
                return
            if "util" in msg and self.ranks is not None:
                self.ranks.publish(float(msg["util"]))
            if msg.get("shutdown"):
                self._shutdown.set()
                return

    # -- ends -----------------------------------------------------------------------------------------
    def _die(self, tb: str) -> None:
        scheduler_died(self.log, tb, self.ranks)

    def _leader_lost(self) -> None:
        host, port = self.cfg.dist_host, self.cfg.dist_port
        peer = self.link.writer.get_extra_info("peername") if self.link and self.link.writer else None
        if isinstance(peer, tuple) and len(peer) >= 2:
            host, port = peer[0], peer[1]
        self._die(peer_closed(host, port, source=False))

    def _close(self) -> int:
        if self.http is not None:
            self.http.close()
        if self.link is not None:
            self.link.close()
        if self.ranks is not None:
            self.ranks.stop()
        return 0

    def _scheduler_exits(self) -> int:
        """Every scheduler exited on the ShutdownReq: the launcher reports each and returns."""
        pids = list(self.ranks.pids) if self.ranks is not None else []
        self._close()
        for pid in pids:
            self.log.info("Scheduler or DataParallelController %d terminated with 0" % pid)
        return 0

    async def _until(self, *events: asyncio.Event) -> asyncio.Event:
        waits = {asyncio.ensure_future(e.wait()): e for e in events}
        done, pending = await asyncio.wait(set(waits), return_when=asyncio.FIRST_COMPLETED)
        for t in pending:
            t.cancel()
        return waits[next(iter(done))]

    # -- life -------------------------------------------------------------------------------------------
    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, self._on_sigterm)
        loop.add_signal_handler(signal.SIGINT, self._stop.set)
        cfg, args, log = self.cfg, self.args, self.log

        seats = host_gpus(self.state_dir, cfg, log)
        if seats is None:
            return 1
        gpus, total_mib, other_mib = seats
        log.info(server_args_line(cfg))
        for w in cfg.warnings:
            log.info(w)
        self.ranks = rank_group(self.state_dir, gpus, orphan_timeout=args.sim_orphan_timeout,
                               first_rank=cfg.first_rank, tp_size=cfg.tp_size)
        self.ranks.start()
        startup = Startup(cfg, log, self.ranks, total_mib, args.sim_load_time * args.sim_time_scale,
                          fail_oom=(args.sim_fail_load == "oom"), other_mib=other_mib,
                          rendezvous=lambda: self._meet(total_mib, other_mib), after_load=self._loaded)
        load = asyncio.ensure_future(startup.run())
        load_done = asyncio.Event()
        load.add_done_callback(lambda _: load_done.set())
        ended = await self._until(load_done, self._stop, self._leader_gone, self._shutdown)
        if ended is not load_done:
            load.cancel()
            if ended is self._leader_gone:
                self._leader_lost()
            return self._scheduler_exits() if ended is self._shutdown else self._close()
        exc = load.exception()
        if isinstance(exc, faults.LoadFailure):
            self._die(str(exc))
        if exc is not None:
            raise exc

        self.http = HttpServer(DummyHealth(cfg.era, bool(args.enable_metrics)).handle)
        try:
            await self.http.start(args.host, args.port)
        except OSError as exc:  # SGLang logs it and keeps serving the schedulers
            log.info("Dummy health check server failed to start: [Errno %s] error while attempting to bind on "
                     "address (%r, %d): %s" % (exc.errno, args.host, args.port, (exc.strerror or str(exc)).lower()))
        ended = await self._until(self._stop, self._leader_gone, self._shutdown)
        if ended is self._leader_gone:
            self._leader_lost()
        if ended is self._shutdown:
            return self._scheduler_exits()
        return self._close()


def run_follower(cfg: ServerConfig) -> int:
    node = None

    async def main() -> int:
        nonlocal node
        node = FollowerNode(cfg)
        return await node.run()

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        if node is not None and node.ranks is not None:
            node.ranks.stop()
        return 0
