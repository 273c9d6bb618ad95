"""The probe on a real host, run by the profile's interpreter (the SGLang venv, which has torch).

The agent starts this module from memory (entry ``probe.worker``) with the job as JSON in
``argv[0]``. It checks torch and the GPUs, reads the topology and the model's sizes, starts one
process per rank (the same payload, entry ``probe.rank``, so the ranks need nothing on disk
either), and combines their times. It writes JSON lines on stdout: ``progress`` lines, then one
``result`` or one ``error`` line whose message is a single sentence.

Across nodes (``nnodes`` above 1): every node's worker gets the same job plus its ``node_rank`` and
``dist_init_addr`` (``HOST0:PORT``, IPv6 bracketed, as SGLang's ``--dist-init-addr``), and starts its
``world_size / nnodes`` ranks as global ranks ``node_rank x local + i``, which meet over
``torch.distributed``'s TCP rendezvous at that address (node 0's rank 0 listens there). Each rank
all-reduces its times (MAX) after each size, so every node's result holds the slowest rank of all
nodes per iteration; ``rank_median_ms`` lists this node's ranks only.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time

from ..bootstrap import bootstrap_code, exit_now, make_payload, own_sources
from .model import ModelConfigError, model_sizes
from .stats import combine_ranks, summarize
from .topology import host_topology

log = logging.getLogger(__name__)

SCHEMA = "spectui.probe/1"
DEFAULT_TOKENS = [1, 2, 4, 8, 16]


class ProbeFailed(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


_out_lock = threading.Lock()


def emit(obj):
    with _out_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def progress(stage, **detail):
    d = {"type": "progress", "stage": stage}
    d.update(detail)
    emit(d)


def import_torch():
    """torch and torch.distributed, or one sentence about what is missing."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:
        raise ProbeFailed("no_torch", "%s cannot import torch (%s): run the probe with the SGLang venv's "
                          "Python (the profile's python: or --probe-python)" % (sys.executable, exc))
    if not dist.is_available():
        raise ProbeFailed("no_torch", "torch %s at %s was built without torch.distributed, which the probe "
                          "needs" % (torch.__version__, sys.executable))
    return torch, dist


def choose_backend(torch, dist, backend, device, world, gpus):
    """Resolve ``auto`` and check that the backend and device can run ``world`` ranks here."""
    cuda = bool(torch.cuda.is_available())
    count = torch.cuda.device_count() if cuda else 0
    if device == "auto":
        device = "cuda" if backend != "gloo" else "cpu"
    if backend == "auto":
        backend = "nccl" if device == "cuda" else "gloo"
    if backend == "nccl" and device != "cuda":
        raise ProbeFailed("bad_params", "NCCL all-reduces CUDA tensors only: use --device cuda with "
                          "--backend nccl, or --backend gloo with --device cpu")
    if device == "cuda":
        if not cuda:
            raise ProbeFailed("no_gpu", "torch %s at %s sees no CUDA GPU, so the NCCL probe cannot run here "
                              "(on a host without GPUs, --backend gloo --device cpu rehearses it on CPU "
                              "ranks)" % (torch.__version__, sys.executable))
        needed = max(gpus) + 1 if gpus else world
        if count < needed or (gpus and len(gpus) < world):
            raise ProbeFailed("no_gpu", "torch sees %d CUDA GPU(s) but the probe needs %d ranks on GPUs %s"
                              % (count, world, ",".join(str(g) for g in (gpus or range(world)))))
        if backend == "nccl" and not dist.is_nccl_available():
            raise ProbeFailed("no_nccl", "torch %s at %s was built without NCCL" % (torch.__version__,
                                                                                     sys.executable))
    elif backend == "gloo" and not dist.is_gloo_available():
        raise ProbeFailed("no_gloo", "torch %s at %s was built without Gloo" % (torch.__version__, sys.executable))
    return backend, device


def parse_addr(addr):
    """``(host, port)`` of ``HOST:PORT`` or ``[V6]:PORT``, or one sentence about what is wrong."""
    text = (addr or "").strip()
    host, sep, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        host = ""  # an IPv6 address must be bracketed to tell its port apart
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ProbeFailed("bad_params", "dist_init_addr must be HOST:PORT (an IPv6 host as [ADDR]:PORT), "
                          "not %r" % (addr,))
    return host, int(port)


def node_layout(config, world):
    """``(nnodes, node_rank, local_ranks, (host, port) or None)`` of a job, checked."""
    try:
        nnodes = int(config.get("nnodes") or 1)
        node_rank = int(config.get("node_rank") or 0)
    except (TypeError, ValueError):
        raise ProbeFailed("bad_params", "nnodes and node_rank must be whole numbers")
    if nnodes <= 1:
        return 1, 0, world, None
    if world % nnodes:
        raise ProbeFailed("bad_params", "%d ranks do not split evenly over %d nodes" % (world, nnodes))
    if not 0 <= node_rank < nnodes:
        raise ProbeFailed("bad_params", "node_rank must be in [0, %d), not %d" % (nnodes, node_rank))
    if not config.get("dist_init_addr"):
        raise ProbeFailed("bad_params", "a probe across %d nodes needs dist_init_addr, where node 0's first "
                          "rank listens (HOST0:PORT)" % nnodes)
    return nnodes, node_rank, world // nnodes, parse_addr(config["dist_init_addr"])


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


class Rank(object):
    """One rank's process and what it printed."""

    def __init__(self, rank, proc):
        self.rank = rank
        self.proc = proc
        self.result = None
        self.stderr = collections.deque(maxlen=40)
        self.threads = [threading.Thread(target=self._read_out, daemon=True),
                        threading.Thread(target=self._read_err, daemon=True)]
        for t in self.threads:
            t.start()

    def _read_out(self):
        for raw in iter(self.proc.stdout.readline, b""):
            try:
                msg = json.loads(raw.decode("utf-8", "replace"))
            except ValueError:
                continue
            if msg.get("type") == "rank":
                self.result = msg
            elif msg.get("type") == "progress" and self.rank == 0:
                emit(msg)

    def _read_err(self):
        for raw in iter(self.proc.stderr.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                self.stderr.append(line)

    def last_error(self):
        for line in reversed(self.stderr):
            if line.startswith("rank ") or "Error" in line:
                return line
        return self.stderr[-1] if self.stderr else "exit status %s" % self.proc.returncode

    def finish(self, timeout=5.0):
        for t in self.threads:
            t.join(timeout)


def run_ranks(job, world, backend, device, gpus, deadline, node_rank=0, local=None, meet=None):
    """Start this node's rank processes (all ``world`` of them on one node; ``local`` of them, global ranks
    from ``node_rank x local``, meeting at ``meet`` = (host, port) across nodes), wait for all of them,
    return their results."""
    payload = make_payload(own_sources(), "probe.rank")
    argv = [sys.executable, "-u", "-c", bootstrap_code(len(payload)), json.dumps(job)]
    local = world if local is None else local
    host, port = meet if meet is not None else ("127.0.0.1", free_port())
    ranks = []
    try:
        for r in range(local):
            env = dict(os.environ, RANK=str(node_rank * local + r), LOCAL_RANK=str(r), WORLD_SIZE=str(world),
                       LOCAL_WORLD_SIZE=str(local), MASTER_ADDR=host, MASTER_PORT=str(port))
            if device == "cuda":
                env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # the indices nvidia-smi and NVML use
                if gpus:
                    env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in gpus[:local])
            else:
                if meet is None:
                    env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # ranks talk over loopback only
                env.setdefault("OMP_NUM_THREADS", "1")
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=env, close_fds=True)
            proc.stdin.write(payload)
            proc.stdin.close()
            ranks.append(Rank(r, proc))
        while True:
            codes = [rk.proc.poll() for rk in ranks]
            failed = [rk for rk, c in zip(ranks, codes) if c not in (None, 0)]
            if failed:
                rk = failed[0]
                rk.finish(1.0)
                raise ProbeFailed("rank_failed", "rank %d of %d failed: %s" % (node_rank * local + rk.rank, world,
                                                                                 rk.last_error()))
            if all(c == 0 for c in codes):
                break
            if time.monotonic() > deadline:
                raise ProbeFailed("timeout", "the %d ranks did not finish in time (raise --timeout, or lower "
                                  "--iters / --max-seconds)" % world)
            time.sleep(0.05)
        for rk in ranks:
            rk.finish()
            if rk.result is None:
                raise ProbeFailed("rank_failed", "rank %d of %d ended without a result: %s"
                                  % (node_rank * local + rk.rank, world, rk.last_error()))
        return [rk.result for rk in ranks]
    finally:
        for rk in ranks:
            if rk.proc.poll() is None:
                try:
                    rk.proc.kill()
                    rk.proc.wait(5)
                except Exception:
                    log.debug('a probe rank could not be killed (it may have ended)', exc_info=True)


def run(config):
    started = time.time()
    deadline = time.monotonic() + float(config.get("timeout_s") or 900) - 5.0
    world = int(config.get("world_size") or 1)
    gpus = [int(g) for g in (config.get("gpus") or [])]
    tokens = sorted(set(int(t) for t in (config.get("tokens") or DEFAULT_TOKENS)))
    if world < 1 or not tokens or tokens[0] < 1:
        raise ProbeFailed("bad_params", "the probe needs at least one rank and token counts of 1 or more")
    nnodes, node_rank, local, meet = node_layout(config, world)
    for key, value in (config.get("env") or {}).items():
        if key in ("HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE") and value:
            os.environ[key] = os.path.expanduser(os.path.expandvars(value))

    progress("torch")
    torch, dist = import_torch()
    backend, device = choose_backend(torch, dist, config.get("backend") or "auto", config.get("device") or "auto",
                                     local, gpus)
    progress("topology")
    topo = host_topology(selected=gpus[:local] if gpus else None)
    try:
        model = model_sizes(config.get("model"), config.get("hidden_size"), config.get("layers"),
                            config.get("dtype_bytes"))
    except ModelConfigError as exc:
        raise ProbeFailed("no_model_config", str(exc))
    sizes = [{"tokens": t, "bytes": model["hidden_size"] * t * model["dtype_bytes"]} for t in tokens]
    job = {"backend": backend, "device": device, "dtype_bytes": model["dtype_bytes"], "sizes": sizes,
           "iters": int(config.get("iters") or 200), "warmup": int(config.get("warmup") or 20),
           "max_seconds": float(config.get("max_seconds") or 10.0),
           "init_timeout_s": max(30.0, min(300.0, deadline - time.monotonic())),
           "slowest_of_all": nnodes > 1}
    provenance = {"kind": "measured", "method": "torch.distributed.all_reduce (sum), timed per call",
                  "backend": backend, "device": device, "world_size": world, "gpus": gpus[:local] or None,
                  "python": sys.executable, "torch": torch.__version__, "hostname": socket.gethostname(),
                  "iters": job["iters"], "warmup": job["warmup"], "max_seconds": job["max_seconds"],
                  "started_at": started}
    allreduce = {"backend": backend, "device": device, "world_size": world, "dtype": model["dtype"],
                 "combine": "slowest rank per iteration", "decode_path": None, "sizes": []}
    if nnodes > 1:
        provenance.update(nnodes=nnodes, node_rank=node_rank, ranks_per_node=local,
                          dist_init_addr=config.get("dist_init_addr"))
        allreduce.update(nnodes=nnodes, ranks_per_node=local, combine="slowest rank of all nodes per iteration")
    message = None
    if world == 1:
        message = "tensor parallel 1: a forward step has no all-reduce, nothing to measure"
        for s in sizes:
            allreduce["sizes"].append(dict(s, n=0, median_ms=0.0, p99_ms=0.0, min_ms=0.0, mean_ms=0.0,
                                           halves_median_ms=None, stable=None, rank_median_ms=[]))
    else:
        if nnodes > 1:
            progress("ranks", world_size=world, backend=backend, device=device, nnodes=nnodes, node_rank=node_rank,
                     local_ranks=local, dist_init_addr=config.get("dist_init_addr"))
        else:
            progress("ranks", world_size=world, backend=backend, device=device)
        results = sorted(run_ranks(job, world, backend, device, gpus, deadline, node_rank, local, meet),
                         key=lambda r: r["rank"])
        provenance["checked"] = all(r.get("checked") for r in results)
        provenance["dtype"] = results[0].get("dtype")
        provenance["nccl"] = results[0].get("nccl")
        provenance["gpu_name"] = results[0].get("gpu_name")
        if not provenance["checked"]:
            raise ProbeFailed("bad_result", "the all-reduce returned a wrong sum on some rank: the "
                              "measurement would be meaningless")
        for k, s in enumerate(sizes):
            per_rank = [r["sizes"][k]["times_ms"] for r in results]
            entry = dict(tokens=s["tokens"], bytes=results[0]["sizes"][k]["bytes"])
            # across nodes every rank holds the slowest of all ranks per iteration; here only this node's
            slowest = [r["sizes"][k]["slowest_ms"] for r in results] if nnodes > 1 else per_rank
            entry.update(summarize(combine_ranks(slowest)))
            entry["rank_median_ms"] = [summarize(t)["median_ms"] for t in per_rank]
            allreduce["sizes"].append(entry)
    provenance["finished_at"] = time.time()
    provenance["duration_s"] = round(provenance["finished_at"] - started, 3)
    return {"schema": SCHEMA, "provenance": provenance, "topology": topo, "model": model,
            "allreduce": allreduce, "modelled": None, "message": message}


def run_and_exit(argv=None):
    code = 0
    try:
        config = json.loads((argv if argv is not None else sys.argv[1:])[0])
        emit({"type": "result", "result": run(config)})
    except ProbeFailed as exc:
        emit({"type": "error", "code": exc.code, "message": exc.message})
    except Exception as exc:
        emit({"type": "error", "code": "internal", "message": "the probe failed: %s: %s" % (type(exc).__name__, exc)})
        code = 1
    finally:
        exit_now(code)
