"""The leader's side of the TP ranks: one real child process per rank, each on a virtual GPU.

The children stay in the leader's process group (stopping the group stops them) and learn
their memory and utilization from the leader over a pipe. Killing only the leader leaves them
behind, holding their memory, until their orphan timeout.

``SPECTUI_SIM_RANKS=inline`` keeps the ranks in the leader instead (:class:`InlineRanks`): the same
memory and utilization on the same virtual GPUs, each GPU's claim in the leader's name, and no
child process per rank (nor orphans: a killed leader's memory goes after the host's release delay).
For runs that look at GPU usage, not at the processes that hold it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import List, Optional, Sequence

from spectui.sim.vgpu import GpuClaim

#: ``processes`` (the default): one child per rank; ``inline``: the ranks' claims kept by the leader.
RANKS_ENV = "SPECTUI_SIM_RANKS"

# A rank needs the standard library and this package only: it starts without site (``-S``: no .pth
# files, no site-packages scan), with this package's folder on its path, on less CPU
# (bench/sim_start_cost.py). Eight ranks start with every simulated TP-8 server.
RANK_PYTHON_FLAGS = ("-S",)
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rank_env() -> dict:
    path = [_PACKAGE_PARENT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path))


def rank_argv(state_dir: str, gpu: int, rank: int, name: str, orphan_timeout: float) -> List[str]:
    """The command line of one rank process."""
    return [sys.executable, *RANK_PYTHON_FLAGS, "-m", "spectui.sim.rank_worker", "--state", str(state_dir),
            "--gpu", str(gpu), "--tp-rank", str(rank), "--name", name, "--orphan-timeout", str(orphan_timeout)]


def gpus_for_ranks(tp_size: int, visible: Optional[str], gpu_count: int) -> List[int]:
    """Virtual GPU index of each TP rank: CUDA_VISIBLE_DEVICES maps ranks to GPUs."""
    if visible is not None and visible.strip() != "":
        try:
            ids = [int(x) for x in visible.split(",") if x.strip() != ""]
        except ValueError:
            raise ValueError("CUDA_VISIBLE_DEVICES=%r is not a list of GPU indices" % visible)
    else:
        ids = list(range(gpu_count))
    if len(ids) < tp_size:
        raise ValueError(
            "tp_size=%d needs %d GPUs but only %d are visible (CUDA_VISIBLE_DEVICES=%s)"
            % (tp_size, tp_size, len(ids), visible if visible is not None else "unset")
        )
    for i in ids[:tp_size]:
        if not 0 <= i < gpu_count:
            raise ValueError("CUDA error: invalid device ordinal (GPU %d; this host has %d)" % (i, gpu_count))
    return ids[:tp_size]


class RankGroup:
    def __init__(self, state_dir: str, gpus: Sequence[int], orphan_timeout: float = 60.0, first_rank: int = 0,
                 tp_size: Optional[int] = None):
        self.state_dir = state_dir
        self.gpus = list(gpus)
        self.orphan_timeout = orphan_timeout
        self.first_rank = first_rank  # the global TP rank of this node's first rank (multi-node)
        self.tp_size = len(self.gpus) if tp_size is None else tp_size
        self.procs: List[subprocess.Popen] = []
        self.mem = [0.0] * len(self.gpus)
        self.util = 0.0

    @property
    def pids(self) -> List[int]:
        return [p.pid for p in self.procs]

    def scheduler_name(self, rank: int) -> str:
        """The process name SGLang gives the scheduler of TP rank ``rank``."""
        return "sglang::scheduler_TP%d" % rank if self.tp_size > 1 else "sglang::scheduler"

    def start(self) -> None:
        for local, gpu in enumerate(self.gpus):
            rank = self.first_rank + local
            argv = rank_argv(self.state_dir, gpu, rank, self.scheduler_name(rank), self.orphan_timeout)
            self.procs.append(subprocess.Popen(argv, stdin=subprocess.PIPE, close_fds=True, env=rank_env()))

    def set_memory(self, mib: float, rank: Optional[int] = None) -> None:
        if rank is None:
            self.mem = [float(mib)] * len(self.gpus)
        else:
            self.mem[rank] = float(mib)

    def publish(self, util: Optional[float] = None) -> None:
        if util is not None:
            self.util = util
        for rank, p in enumerate(self.procs):
            if p.poll() is not None or p.stdin is None:
                continue
            try:
                p.stdin.write((json.dumps({"mem": round(self.mem[rank], 1), "util": round(self.util, 4)}) + "\n").encode())
                p.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass

    def wait_reported(self, timeout: float = 3.0) -> bool:
        """Wait until every rank's claim shows the memory last sent to it."""
        deadline = time.monotonic() + timeout
        while True:
            ok = True
            for rank, p in enumerate(self.procs):
                path = os.path.join(os.path.expanduser(str(self.state_dir)), "sim", "procs", "%d.json" % p.pid)
                try:
                    with open(path) as fh:
                        shown = float(json.load(fh).get("memory_mib", -1))
                except (OSError, ValueError):
                    shown = -1.0
                if abs(shown - round(self.mem[rank], 1)) > 0.5:
                    ok = False
                    break
            if ok or time.monotonic() >= deadline:
                return ok
            time.sleep(0.02)

    def alive(self) -> List[int]:
        return [p.pid for p in self.procs if p.poll() is None]

    def stop(self, timeout: float = 3.0) -> None:
        """Ask every rank to exit (freeing its memory), then make sure they did."""
        for p in self.procs:
            if p.poll() is None and p.stdin is not None:
                try:
                    p.stdin.write(b'{"exit": true}\n')
                    p.stdin.flush()
                except (BrokenPipeError, OSError, ValueError):
                    pass
        deadline = time.monotonic() + timeout
        for p in self.procs:
            try:
                p.wait(max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(1.0)
        self._close_pipes()

    def kill(self) -> None:
        """Kill every rank at once (a crash): their memory goes a moment later."""
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except OSError:
                    pass
        for p in self.procs:
            try:
                p.wait(2.0)
            except subprocess.TimeoutExpired:
                pass
        self._close_pipes()

    def _close_pipes(self) -> None:
        for p in self.procs:
            if p.stdin is not None:
                try:
                    p.stdin.close()
                except OSError:
                    pass


class InlineRanks(RankGroup):
    """:class:`RankGroup` with no rank processes: the leader writes each rank's claim on its virtual GPU
    (``procs/<leader pid>-rank<R>.json``), in its own name, whenever it publishes."""

    def __init__(self, state_dir: str, gpus: Sequence[int], orphan_timeout: float = 60.0, first_rank: int = 0,
                 tp_size: Optional[int] = None):
        super().__init__(state_dir, gpus, orphan_timeout, first_rank, tp_size)
        self.claims: List[GpuClaim] = []
        self._live = False

    @property
    def pids(self) -> List[int]:
        return []

    def start(self) -> None:
        for local, gpu in enumerate(self.gpus):
            rank = self.first_rank + local
            self.claims.append(GpuClaim(os.path.expanduser(str(self.state_dir)), gpu, self.scheduler_name(rank),
                                        key="%d-rank%d" % (os.getpid(), rank)))
        self._live = True
        self.publish()

    def publish(self, util: Optional[float] = None) -> None:
        if util is not None:
            self.util = util
        if not self._live:
            return
        for rank, claim in enumerate(self.claims):
            try:
                claim.update(memory_mib=round(self.mem[rank], 1), util=round(self.util, 4))
            except OSError:
                pass

    def wait_reported(self, timeout: float = 3.0) -> bool:
        return True  # written as they are published

    def alive(self) -> List[int]:
        return []

    def stop(self, timeout: float = 3.0) -> None:
        """The ranks exit: their memory is free at once."""
        self._live = False
        for claim in self.claims:
            claim.release()

    def kill(self) -> None:
        """A crash: the claims are no longer kept, and go with the leader after the host's release delay."""
        self._live = False


def rank_group(state_dir: str, gpus: Sequence[int], **kwargs):
    """The ranks as ``SPECTUI_SIM_RANKS`` says: :class:`InlineRanks` for ``inline``, else :class:`RankGroup`."""
    kind = os.environ.get(RANKS_ENV, "processes").strip().lower()
    return InlineRanks(state_dir, gpus, **kwargs) if kind == "inline" else RankGroup(state_dir, gpus, **kwargs)
