"""What every node of a server does alike, node 0 (``app``) and the others (``follower``): its
logger and launch line, claiming its host's virtual GPUs for its ranks, and dying of a
scheduler's exception."""

from __future__ import annotations

import os
import sys
from typing import List, Optional, Tuple

from spectui.sim import faults
from spectui.sim.logfmt import SimLogger
from spectui.sim.ranks import gpus_for_ranks
from spectui.sim.server.config import ServerConfig
from spectui.sim.vgpu import init_host, load_host, memory_in_use, remove_stale_claims, sim_dir


def node_logger(cfg: ServerConfig) -> SimLogger:
    """Log lines of this node's ranks, under their global TP ranks."""
    a = cfg.args
    return SimLogger(sys.stdout, tp_size=cfg.tp_size, first_rank=cfg.first_rank, local_ranks=cfg.tp_per_node,
                     dp_size=getattr(a, "dp_size", 1) or 1, pp_size=getattr(a, "pp_size", 1) or 1,
                     attn_cp_size=getattr(a, "attn_cp_size", 1) or 1, moe_dp_size=getattr(a, "moe_dp_size", 1) or 1,
                     ep_size=getattr(a, "ep_size", 1) or 1)


def scheduler_died(log: SimLogger, tb: str, ranks) -> None:
    """A scheduler's exception (its traceback under the node's first rank), the launcher's SIGQUIT
    handler, then ``kill_process_tree``: the ranks and this process die of SIGKILL."""
    log.info("Scheduler hit an exception: " + tb.splitlines()[0], rank=log.first_rank)
    for line in tb.splitlines()[1:]:
        log.raw(line)
    log.raw("")
    log.info("Received sigquit from a child process. It usually means the child failed.")
    log.info("kill_process_tree called: parent_pid=%d, include_parent=True, pid=%d" % (os.getpid(), os.getpid()))
    faults.die_like_kill_process_tree(ranks)


def server_args_line(cfg: ServerConfig) -> str:
    """The launch's ``server_args=ServerArgs(...)`` line (every node writes it)."""
    keys = ("model_path", "tokenizer_path", "host", "port", "tp_size", "mem_fraction_static", "max_running_requests",
            "chunked_prefill_size", "context_length", "speculative_algorithm", "speculative_draft_model_path",
            "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens", "enable_metrics",
            "decode_log_interval", "random_seed")
    if cfg.nnodes > 1:
        keys += ("dist_init_addr", "nnodes", "node_rank")
    args = cfg.server_args()
    return "server_args=ServerArgs(%s)" % ", ".join("%s=%r" % (k, args.get(k)) for k in keys)


def host_gpus(state_dir: str, cfg: ServerConfig, log: SimLogger) -> Optional[Tuple[List[int], float, float]]:
    """This node's virtual GPUs for its ``tp_size / nnodes`` ranks (created if the host has none
    yet), the smallest one's memory and the most that other processes hold on them, in MiB; None,
    after SGLang's error line, when the host cannot seat the ranks."""
    if not (sim_dir(state_dir) / "host.json").exists():
        init_host(state_dir)
    remove_stale_claims(state_dir)
    host = load_host(state_dir)
    try:
        gpus = gpus_for_ranks(cfg.tp_per_node, os.environ.get("CUDA_VISIBLE_DEVICES"), len(host["gpus"]))
    except ValueError as exc:
        log.info(str(exc))
        faults.write_lines(sys.stderr, "RuntimeError: %s" % exc)
        return None
    total_mib = float(min(host["gpus"][g]["memory_total_mib"] for g in gpus))
    other_mib = max(memory_in_use(state_dir, g) for g in gpus)
    return gpus, total_mib, other_mib
