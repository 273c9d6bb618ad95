"""How the nodes of a multi-node server meet and lose each other, as torch.distributed does it.

In SGLang every node runs the same ``launch_server`` with its own ``--node-rank``; each of its TP
schedulers calls ``torch.distributed.init_process_group(init_method="tcp://<--dist-init-addr>")``
(sglang 0.5.23 wheel, sglang/srt/distributed/bootstrap.py:233-246 and parallel_state.py:2517).
Global TP0, on node rank 0, hosts the TCPStore on that port, and every rank waits there until all
``tp_size`` ranks have joined (torch/distributed/rendezvous.py:199, ``TCPStore(...)`` with its
workers' count). Once running, rank 0 broadcasts the new requests to every TP rank over gloo each
scheduler iteration (sglang/srt/managers/scheduler_components/request_receiver.py:206,
``broadcast_pyobj``), so a node that dies is noticed at once by the other side's ranks.

Here node 0's server process stands for TP0's TCPStore: it listens on the dist-init port
(:class:`Rendezvous`), and each other node's server process connects (:class:`NodeLink`) and
speaks JSON lines, the simulator's own stand-in for the store, NCCL and gloo traffic:

``node k -> 0``
    ``{"hello": {node_rank, nnodes, tp_size, pid, host, total_mib, other_mib, rank_pids}}``, then
    ``{"loaded": {}}`` when its ranks have loaded.
``0 -> node k``
    ``{"joined": J}`` (ranks joined so far), ``{"welcome": {total_mib, other_mib}}`` once all have
    (the smallest GPU and the most memory held by others over all nodes, for one memory plan, as
    SGLang takes the minimum free memory over all ranks), ``{"util": u}`` while serving, and
    ``{"shutdown": true}`` on a graceful stop (0.5.23: the ShutdownReq broadcast).

A connection that closes is a dead peer. The failures are torch's, as torch 2.13.0 prints them
(run locally with gloo; the NCCL timeouts public logs show are the same text at 600000ms):

* a client that reaches nobody: ``[E... socket.cpp:1028] [c10d] The client socket has timed out
  after 3000ms while trying to connect to (127.0.0.1, 29813).``, ``[W... TCPStore.cpp:340] [c10d]
  TCP client failed to connect/validate to host 127.0.0.1:29813 - retrying (try=0, timeout=3000ms,
  delay=1057ms): ...``, once more, ``[E... TCPStore.cpp:328] ... - timed out (try=1, ...)``, then
  ``torch.distributed.DistNetworkError: The client socket has timed out after 3000ms while trying to
  connect to (127.0.0.1, 29813).``;
* a store whose nodes do not all come: ``torch.distributed.DistStoreError: Timed out after 3
  seconds waiting for clients. 1/2 clients joined.``;
* a store port already taken: ``torch.distributed.DistNetworkError: The server socket has failed
  to listen on any local network address. port: 29851, useIpv6: false, code: -98, name:
  EADDRINUSE, message: address already in use``;
* a peer gone while serving: ``RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/
  pair.cc:553] Connection closed by peer [127.0.0.1]:32670. This is typically caused by a remote
  worker crashing. ...`` (the same shape in sgl-project/sglang#3685, from ``broadcast_pyobj``).

The wait is ``--dist-timeout`` (SGLang's flag, seconds), else ``--sim-dist-timeout`` (default 600 s,
torch's default for NCCL process groups).
"""

from __future__ import annotations

import asyncio
import errno
import json
import random
import time
from typing import Callable, Dict, List, Optional, Tuple

from spectui.sim.faults import SITE, LoadFailure

TORCH = "/usr/local/lib/python3.12/dist-packages/torch"
GLOO_PAIR = "/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553"
CONNECT_RETRY_S = 0.1
MAX_LINE = 1 << 20


class DistAddrError(ValueError):
    """A ``--dist-init-addr`` that SGLang's ``NetworkAddress.parse`` refuses."""


def parse_dist_init_addr(addr: str) -> Tuple[str, int]:
    """``host:port`` or ``[v6]:port``, with the errors of sglang 0.5.23's ``NetworkAddress.parse``
    (sglang/srt/utils/network.py:600-645)."""
    if not addr:
        raise DistAddrError("Empty address string")
    if addr.startswith("["):
        close = addr.find("]")
        if close == -1:
            raise DistAddrError("Missing closing bracket in IPv6 address: %r" % addr)
        host, rest = addr[1:close], addr[close + 1:]
        if not rest.startswith(":") or len(rest) < 2:
            raise DistAddrError("Expected ':port' after closing bracket, got: %r" % rest)
        return host, _port(rest[1:])
    if ":" not in addr:
        raise DistAddrError("Missing port in address (expected host:port): %r" % addr)
    host, port = addr.rsplit(":", 1)
    if not host:
        raise DistAddrError("Empty host in address: %r" % addr)
    if ":" in host:
        raise DistAddrError("Bare IPv6 address without brackets is ambiguous: %r. Use [%s]:%s instead." % (addr, host, port))
    return host, _port(port)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise DistAddrError("Invalid port number: %r" % text)
    if not 0 <= port <= 65535:
        raise DistAddrError("Port out of range (0-65535): %d" % port)
    return port


# -- torch's text ------------------------------------------------------------------------------------
def glog(level: str, where: str, msg: str, now: Optional[float] = None) -> str:
    """A c10d line as torch's C++ logging writes it to stderr: ``[E1203 14:01:50.587033396 socket.cpp:1028] ...``."""
    now = time.time() if now is None else now
    stamp = time.strftime("%m%d %H:%M:%S", time.localtime(now))
    return "[%s%s.%09d %s] [c10d] %s" % (level, stamp, int((now % 1.0) * 1e9), where, msg)


def _frames(frames) -> List[str]:
    out = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out.append('  File "%s", line %d, in %s' % (path, line, func))
        out.append("    " + code)
    return out


# sglang 0.5.23 wheel: a scheduler's way into init_process_group ...
_INIT_FRAMES = [
    (SITE + "/managers/scheduler.py", 6362, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args)"),
    (SITE + "/managers/scheduler.py", 536, "__init__", "bootstrap.init_parallel_runtime("),
    (SITE + "/distributed/bootstrap.py", 152, "init_parallel_runtime", "_init_parallel_groups("),
    (SITE + "/distributed/bootstrap.py", 322, "_init_parallel_groups", "init_distributed_environment("),
    (SITE + "/distributed/parallel_state.py", 2517, "init_distributed_environment", "torch.distributed.init_process_group("),
    # ... and torch 2.13.0's from there to the store
    (TORCH + "/distributed/c10d_logger.py", 83, "wrapper", "return func(*args, **kwargs)"),
    (TORCH + "/distributed/c10d_logger.py", 97, "wrapper", "func_return = func(*args, **kwargs)"),
    (TORCH + "/distributed/distributed_c10d.py", 1892, "init_process_group",
     "store, rank, world_size = next(rendezvous_iterator)"),
    (TORCH + "/distributed/rendezvous.py", 232, "_tcp_rendezvous_handler", "store = _create_c10d_store("),
    (TORCH + "/distributed/rendezvous.py", 199, "_create_c10d_store", "return TCPStore("),
]

# ... and a running scheduler's way into the per-iteration request broadcast.
_SERVING_FRAMES = [
    (SITE + "/managers/scheduler.py", 6368, "run_scheduler_process", "scheduler.run_event_loop()"),
    (SITE + "/managers/scheduler.py", 2010, "run_event_loop", "dispatch_event_loop(self)"),
    (SITE + "/managers/scheduler.py", 6215, "dispatch_event_loop", "return _dispatch_event_loop_once(scheduler)"),
    (SITE + "/managers/scheduler.py", 6231, "_dispatch_event_loop_once", "scheduler.event_loop_overlap()"),
    (SITE + "/managers/scheduler.py", 2078, "event_loop_overlap", "self.ingest_requests()"),
    (SITE + "/managers/scheduler.py", 2205, "ingest_requests", "self.request_receiver.recv_requests(local_reqs=local_reqs)"),
    (SITE + "/managers/scheduler_components/request_receiver.py", 101, "recv_requests",
     "recv_reqs = self._broadcast_reqs_across_ranks(recv_reqs, local_reqs)"),
    (SITE + "/managers/scheduler_components/request_receiver.py", 206, "_broadcast_reqs_across_ranks",
     "recv_reqs = broadcast_pyobj("),
]


def connect_timeout_message(host: str, port: int, timeout_ms: int) -> str:
    return "The client socket has timed out after %dms while trying to connect to (%s, %d)." % (timeout_ms, host, port)


def dist_network_error(host: str, port: int, timeout_ms: int) -> str:
    """The scheduler's traceback when the store's address answers nothing."""
    return "\n".join(_frames(_INIT_FRAMES) + [
        "torch.distributed.DistNetworkError: " + connect_timeout_message(host, port, timeout_ms)])


def dist_store_timeout(elapsed_s: float, joined: int, world: int) -> str:
    """The scheduler's traceback when not every rank joined the store in time."""
    return "\n".join(_frames(_INIT_FRAMES) + [
        "torch.distributed.DistStoreError: Timed out after %d seconds waiting for clients. %d/%d clients joined."
        % (int(elapsed_s), joined, world)])


def listen_failed(port: int, err: int) -> str:
    """The scheduler's traceback when TP0 cannot listen on the store's port."""
    name = errno.errorcode.get(err, "EADDRINUSE")
    message = {errno.EADDRINUSE: "address already in use", errno.EACCES: "permission denied",
               errno.EADDRNOTAVAIL: "address not available"}.get(err, "address already in use")
    return "\n".join(_frames(_INIT_FRAMES) + [
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. "
        "port: %d, useIpv6: false, code: -%d, name: %s, message: %s" % (port, err, name, message)])


def peer_closed(host: str, port: int, source: bool) -> str:
    """A scheduler's traceback when a peer of the request broadcast is gone (``source``: the
    broadcasting rank, TP0; else a receiving rank)."""
    line = 2715 if source else 2730
    frames = _SERVING_FRAMES + [
        (SITE + "/utils/common.py", line, "broadcast_pyobj", "dist.broadcast(tensor_size, src=src, group=dist_group)"),
        (TORCH + "/distributed/c10d_logger.py", 83, "wrapper", "return func(*args, **kwargs)"),
        (TORCH + "/distributed/distributed_c10d.py", 3151, "broadcast", "work.wait()"),
    ]
    return "\n".join(_frames(frames) + [
        "RuntimeError: [%s] Connection closed by peer [%s]:%d. This is typically caused by a remote worker crashing. "
        "Check the logs of the remote worker before reporting an error. GLHF! \U0001f3d6\ufe0f" % (GLOO_PAIR, host, port)])


def retry_delay_ms(timeout_ms: int) -> int:
    """The client's back-off before its second try: torch's jittered exponential back-off, capped
    at a minute (1057 and 3540 ms seen at a 3 s timeout, 33924 and 48742 ms at 600 s)."""
    return int(min(timeout_ms, 60000) * random.uniform(0.3, 1.2))


# -- the wire ------------------------------------------------------------------------------------------
def _encode(msg: dict) -> bytes:
    return (json.dumps(msg) + "\n").encode("utf-8")


async def _read(reader: asyncio.StreamReader) -> Optional[dict]:
    """The next message, or None when the peer is gone."""
    try:
        line = await reader.readline()
    except (ConnectionError, asyncio.LimitOverrunError, ValueError):
        return None
    if not line:
        return None
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    return msg if isinstance(msg, dict) else None


class Peer:
    """One joined node, as node 0 sees it."""

    def __init__(self, info: dict, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.info = info
        self.node_rank = int(info["node_rank"])
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.addr = (peer[0], peer[1]) if isinstance(peer, tuple) and len(peer) >= 2 else ("unknown", 0)
        self.loaded = asyncio.Event()
        self.closed = False

    def send(self, msg: dict) -> None:
        if self.closed:
            return
        try:
            self.writer.write(_encode(msg))
        except (ConnectionError, RuntimeError):
            self.closed = True

    def describe(self) -> dict:
        keys = ("node_rank", "pid", "host", "rank_pids", "state")
        return {k: self.info.get(k) for k in keys}


class Rendezvous:
    """Node 0's end: listen on the dist-init port, wait for every node, then watch them."""

    def __init__(self, host: str, port: int, nnodes: int, tp_size: int, timeout_s: float,
                 total_mib: float, other_mib: float):
        self.host, self.port = host, port
        self.nnodes, self.tp_size = nnodes, tp_size
        self.per_node = tp_size // nnodes
        self.timeout_s = timeout_s
        self.total_mib, self.other_mib = total_mib, other_mib
        self.peers: Dict[int, Peer] = {}
        self.server: Optional[asyncio.base_events.Server] = None
        self._all = asyncio.Event()
        self._welcomed = False
        self.lost: "asyncio.Future[Peer]" = asyncio.get_running_loop().create_future()

    @property
    def joined_ranks(self) -> int:
        return self.per_node * (1 + len(self.peers))

    async def listen(self) -> None:
        """Open the store's port (all interfaces, as the TCPStore server does)."""
        try:
            self.server = await asyncio.start_server(self._serve, None, self.port, limit=MAX_LINE)
        except OSError as exc:
            raise LoadFailure(listen_failed(self.port, exc.errno or errno.EADDRINUSE))

    async def meet(self) -> Tuple[float, float]:
        """Listen, then wait for every node: the joint ``(total_mib, other_mib)``."""
        await self.listen()
        return await self.wait_all()

    async def wait_all(self) -> Tuple[float, float]:
        """Wait for every node (the joint ``(total_mib, other_mib)``), or fail as the store does."""
        t0 = time.monotonic()
        if self.nnodes > 1:
            try:
                await asyncio.wait_for(self._all.wait(), self.timeout_s)
            except asyncio.TimeoutError:
                raise LoadFailure(dist_store_timeout(max(self.timeout_s, time.monotonic() - t0),
                                                     self.joined_ranks, self.tp_size))
        total = min([self.total_mib] + [float(p.info.get("total_mib", self.total_mib)) for p in self.peers.values()])
        other = max([self.other_mib] + [float(p.info.get("other_mib", 0.0)) for p in self.peers.values()])
        self._welcomed = True
        self.send_all({"welcome": {"total_mib": total, "other_mib": other}})
        return total, other

    async def wait_loaded(self) -> None:
        """Wait until every node's ranks have loaded; a node lost meanwhile fails the start."""
        loaded = asyncio.ensure_future(asyncio.gather(*(p.loaded.wait() for p in self.peers.values())))
        done, _ = await asyncio.wait({loaded, self.lost}, return_when=asyncio.FIRST_COMPLETED)
        if loaded not in done:
            loaded.cancel()
            peer = self.lost.result()
            raise LoadFailure(peer_closed(peer.addr[0], peer.addr[1], source=True))

    def send_all(self, msg: dict) -> None:
        for p in list(self.peers.values()):
            p.send(msg)

    def describe(self) -> List[dict]:
        return [self.peers[k].describe() for k in sorted(self.peers)]

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for p in self.peers.values():
            p.closed = True
            try:
                p.writer.close()
            except (OSError, RuntimeError):
                pass

    async def aclose(self, timeout: float = 1.0) -> None:
        """Send what is queued (a shutdown), then close."""
        for p in list(self.peers.values()):
            if not p.closed:
                try:
                    await asyncio.wait_for(p.writer.drain(), timeout)
                except (ConnectionError, RuntimeError, asyncio.TimeoutError):
                    pass
        if not self.lost.done():
            self.lost.cancel()
        self.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        msg = await _read(reader)
        info = msg.get("hello") if msg else None
        if not isinstance(info, dict) or not self._acceptable(info):
            writer.close()
            return
        peer = Peer(info, reader, writer)
        self.peers[peer.node_rank] = peer
        self.send_all({"joined": self.joined_ranks})
        if len(self.peers) == self.nnodes - 1:
            self._all.set()
        while True:
            msg = await _read(reader)
            if msg is None:
                break
            if "loaded" in msg:
                peer.loaded.set()
        peer.closed = True
        if self._welcomed and not self.lost.done():
            self.lost.set_result(peer)
        elif not self._welcomed:
            self.peers.pop(peer.node_rank, None)  # left before everyone met: not counted
            self._all.clear()

    def _acceptable(self, info: dict) -> bool:
        try:
            rank = int(info["node_rank"])
        except (KeyError, TypeError, ValueError):
            return False
        return (not self._welcomed and 0 < rank < self.nnodes and rank not in self.peers
                and int(info.get("nnodes", -1)) == self.nnodes and int(info.get("tp_size", -1)) == self.tp_size)


class NodeLink:
    """Another node's end: reach node 0's store, say who it is, wait for everyone."""

    def __init__(self, host: str, port: int, timeout_s: float, err: Callable[[str], None]):
        self.host, self.port = host, port
        self.timeout_s = timeout_s
        self.err = err  # writes a c10d line (stderr)
        self.reader: Optional[asyncio.StreamReader] = None
        self.writer: Optional[asyncio.StreamWriter] = None
        self.joined = 0

    async def _try_connect(self, window_s: float) -> bool:
        deadline = time.monotonic() + window_s
        while True:
            try:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port, limit=MAX_LINE)
                return True
            except OSError:
                if time.monotonic() >= deadline:
                    return False
                await asyncio.sleep(min(CONNECT_RETRY_S, max(0.0, deadline - time.monotonic())))

    async def connect(self) -> None:
        """Two tries of ``timeout`` each with torch's back-off between them, then DistNetworkError."""
        timeout_ms = int(round(self.timeout_s * 1000))
        target = "%s:%d" % (self.host, self.port)
        msg = connect_timeout_message(self.host, self.port, timeout_ms)
        for attempt in (0, 1):
            if await self._try_connect(self.timeout_s):
                return
            self.err(glog("E", "socket.cpp:1028", msg))
            if attempt == 0:
                delay = retry_delay_ms(timeout_ms)
                self.err(glog("W", "TCPStore.cpp:340", "TCP client failed to connect/validate to host %s - retrying "
                                                       "(try=0, timeout=%dms, delay=%dms): %s"
                              % (target, timeout_ms, delay, msg)))
                await asyncio.sleep(delay / 1000.0)
            else:
                self.err(glog("E", "TCPStore.cpp:328", "TCP client failed to connect/validate to host %s - timed out "
                                                       "(try=1, timeout=%dms): %s" % (target, timeout_ms, msg)))
        raise LoadFailure(dist_network_error(self.host, self.port, timeout_ms))

    def send(self, msg: dict) -> None:
        if self.writer is None:
            return
        try:
            self.writer.write(_encode(msg))
        except (ConnectionError, RuntimeError):
            pass

    async def join(self, hello: dict, world: int) -> Tuple[float, float]:
        """Say hello and wait for the welcome: the joint ``(total_mib, other_mib)``."""
        self.send({"hello": hello})
        t0 = time.monotonic()
        deadline = t0 + self.timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LoadFailure(dist_store_timeout(max(self.timeout_s, time.monotonic() - t0), self.joined, world))
            try:
                msg = await asyncio.wait_for(self.next(), left)
            except asyncio.TimeoutError:
                continue
            if msg is None:
                raise LoadFailure(peer_closed(self.host, self.port, source=False))
            if "joined" in msg:
                self.joined = int(msg["joined"])
            if "welcome" in msg:
                w = msg["welcome"]
                return float(w["total_mib"]), float(w["other_mib"])

    async def next(self) -> Optional[dict]:
        if self.reader is None:
            return None
        return await _read(self.reader)

    def close(self) -> None:
        if self.writer is not None:
            try:
                self.writer.close()
            except (OSError, RuntimeError):
                pass
