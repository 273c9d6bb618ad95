"""One rank of the probe: time ``torch.distributed.all_reduce`` at each message size.

Started by ``probe.worker`` as its own process (the agent payload again, entry ``probe.rank``)
with ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT`` in its environment and the
job as JSON in ``argv[0]``. torch is imported here, in the profile's interpreter, never by the
agent. Writes JSON lines on stdout: progress (rank 0 only) and, last, its times.

Each size: ``warmup`` untimed rounds, then ``n`` timed rounds, where every rank computes the
same ``n`` (``iters`` at most, fewer when the warmup says ``max_seconds`` would be exceeded,
never under ``MIN_ITERS``). A round is a one-element all-reduce to line the ranks up, then
the timed all-reduce of the message (followed by a device synchronize on CUDA).

Across nodes (``slowest_of_all`` in the job) each size's times are all-reduced (MAX) afterwards, so
every rank also holds the slowest rank's time per iteration over all nodes (``slowest_ms``), and any
node's worker can report the whole group's figure.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time

from ..bootstrap import exit_now

log = logging.getLogger(__name__)

MIN_ITERS = 10


def _emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _dtype(torch, dtype_bytes, device):
    if dtype_bytes == 4:
        return torch.float32
    if dtype_bytes == 2:
        return torch.bfloat16
    if dtype_bytes == 1:
        return torch.uint8
    raise ValueError("no dtype of %d bytes" % dtype_bytes)


def measure(job, rank, world):
    import datetime

    import torch
    import torch.distributed as dist

    backend, device_kind = job["backend"], job["device"]
    if device_kind == "cuda":
        local = int(os.environ.get("LOCAL_RANK", rank))
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)

        def sync():
            torch.cuda.synchronize(device)
    else:
        device = torch.device("cpu")

        def sync():
            pass

    dist.init_process_group(backend, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=float(job.get("init_timeout_s", 120))))
    try:
        dtype = _dtype(torch, int(job["dtype_bytes"]), device)
        elem = torch.tensor([], dtype=dtype).element_size()
        # the sum of ones over the ranks proves the collective really ran
        check = torch.ones(8, dtype=dtype, device=device)
        dist.all_reduce(check)
        sync()
        checked = float(check[0].item()) == float(world)
        line_up = torch.zeros(1, dtype=torch.float32, device=device)

        def round_trip(buf):
            dist.all_reduce(line_up)
            sync()
            t0 = time.perf_counter()
            dist.all_reduce(buf)
            sync()
            return time.perf_counter() - t0

        sizes = []
        for k, size in enumerate(job["sizes"]):
            numel = max(1, int(size["bytes"]) // elem)
            buf = torch.zeros(numel, dtype=dtype, device=device)
            warmup = max(1, int(job["warmup"]))
            t0 = time.perf_counter()
            for _ in range(warmup):
                round_trip(buf)
            per_round = torch.tensor([(time.perf_counter() - t0) / warmup], dtype=torch.float32, device=device)
            dist.all_reduce(per_round, op=dist.ReduceOp.MAX)
            sync()
            est = max(float(per_round.item()), 1e-7)
            iters = int(job["iters"])
            n = min(iters, max(min(MIN_ITERS, iters), int(float(job["max_seconds"]) / est)))
            times = [round_trip(buf) * 1000.0 for _ in range(n)]
            entry = {"tokens": size["tokens"], "bytes": numel * elem, "times_ms": times}
            if job.get("slowest_of_all"):
                slowest = torch.tensor(times, dtype=torch.float64, device=device)
                dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
                sync()
                entry["slowest_ms"] = [float(t) for t in slowest.tolist()]
            sizes.append(entry)
            if int(os.environ.get("LOCAL_RANK", rank)) == 0:
                _emit({"type": "progress", "stage": "measuring", "done": k + 1, "total": len(job["sizes"]),
                       "tokens": size["tokens"], "iters": n})
        info = {"type": "rank", "rank": rank, "world_size": world, "backend": dist.get_backend(),
                "device": str(device), "dtype": str(dtype).replace("torch.", ""), "torch": torch.__version__,
                "checked": checked, "sizes": sizes}
        if device_kind == "cuda":
            info["gpu_name"] = torch.cuda.get_device_name(device)
            try:
                v = torch.cuda.nccl.version()
                info["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
            except Exception:
                info["nccl"] = None
        return info
    finally:
        try:
            dist.destroy_process_group()
        except Exception:
            log.debug("the probe's process group could not be destroyed", exc_info=True)


def run_and_exit(argv=None):
    code = 1
    try:
        job = json.loads((argv or sys.argv[1:])[0])
        rank = int(os.environ["RANK"])
        world = int(os.environ["WORLD_SIZE"])
        _emit(measure(job, rank, world))
        code = 0
    except Exception as exc:
        sys.stderr.write("rank %s: %s: %s\n" % (os.environ.get("RANK"), type(exc).__name__, exc))
    finally:
        exit_now(code)
