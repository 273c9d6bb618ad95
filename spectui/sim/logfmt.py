"""SGLang's log lines, written the way each release era wrote them.

Every line starts with ``[%Y-%m-%d %H:%M:%S] `` (``.mmm`` milliseconds when SGLANG_LOG_MS is
set), with the rank inside the brackets for a scheduler of a multi-rank server
(``[2026-11-30 10:00:00 TP0] ``). On a multi-node server each node writes its own schedulers' lines
under their global TP rank (node 1 of TP16 over two nodes: ``TP8`` to ``TP15``), as SGLang's
``configure_logger(server_args, prefix=f" TP{tp_rank}")`` does. Eras (``--sim-log-format``):

``0.4`` (sglang 0.4.6.post5 wheel, sglang/srt/managers/scheduler.py:1145-1161 and 1201-1225)
    ``Prefill batch. ... #queue-req: N`` / ``Decode batch. ... [accept len: X, ]cuda graph: B,
    gen throughput (token/s): G, #queue-req: N``: no trailing comma, ``cuda graph`` with or
    without speculation, ``accept len`` only.
``2025`` (sglang 0.5.6 wheel, sglang/srt/managers/scheduler_metrics_mixin.py:139-147 and 270-309)
    ``Prefill batch, ... #queue-req: N, `` / ``Decode batch, ... accept len: X, accept rate: Y,
    cuda graph: B, gen throughput (token/s): G, #queue-req: N, `` with the old rate: accepted
    tokens including the bonus token / (steps x draft tokens).
``0.5.23`` (sglang 0.5.23 wheel, sglang/srt/managers/scheduler_components/metrics_reporter.py:753-783
and 963-1043)
    ``Prefill batch, ... #pending-token: 0, cuda graph: B, input throughput (token/s): I`` (no
    ``#token:``) / ``Decode batch, ... accept len: X, accept rate: Y, cuda graph: B, gen
    throughput (token/s): G, #queue-req: N`` (no trailing comma) with the new rate: correct
    drafts / (steps x (draft tokens - 1)).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Optional, TextIO

ERAS = ("0.4", "2025", "0.5.23")
DEFAULT_ERA = "0.5.23"
VERSIONS = {"0.4": "0.4.6.post5", "2025": "0.5.6", "0.5.23": "0.5.23"}


class SimLogger:
    """Writes SGLang-style lines to a stream, one flushed write per line."""

    def __init__(self, stream: Optional[TextIO] = None, tp_size: int = 1, millis: Optional[bool] = None,
                 first_rank: int = 0, local_ranks: Optional[int] = None, dp_size: int = 1, pp_size: int = 1,
                 attn_cp_size: int = 1, moe_dp_size: int = 1, ep_size: int = 1):
        self.stream = stream or sys.stdout
        self.tp_size = tp_size
        # the parallel sizes the prefix shows (each once above 1); the simulator's scheduler is the
        # first of each group: DP0, PP0, ATTN_CP0, MOE_DP0
        self.dp_size, self.pp_size, self.attn_cp_size = dp_size, pp_size, attn_cp_size
        self.moe_dp_size, self.ep_size = max(1, moe_dp_size), max(1, ep_size)
        # the TP ranks of this node: all of them on one node; ``tp_size / nnodes`` from
        # ``node_rank * tp_size / nnodes`` on, the global rank in each prefix, on several
        self.first_rank = first_rank
        self.local_ranks = tp_size if local_ranks is None else local_ranks
        if millis is None:
            millis = os.environ.get("SGLANG_LOG_MS", "").lower() in ("1", "true", "yes")
        self.millis = millis
        self._lock = threading.Lock()

    def prefix(self, rank: Optional[int] = None, now: Optional[float] = None) -> str:
        now = time.time() if now is None else now
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
        if self.millis:
            stamp += ".%03d" % int((now % 1.0) * 1000)
        if rank is not None:
            stamp += self.rank_tag(rank)
        return "[%s] " % stamp

    def rank_tag(self, tp_rank: int) -> str:
        """The scheduler's ranks as its logger prefix writes them (sglang 0.5.23 wheel,
        sglang/srt/managers/scheduler.py:6271-6291): `` DP`` once there are DP replicas (its DP
        rank is set only then), `` PP``, `` ATTN_CP``, `` MOE_DP``, `` TP`` and `` EP`` when that
        size is above 1, the EP rank derived from the TP rank as
        sglang/srt/managers/data_parallel_controller.py:754-762 does."""
        tag = ""
        if self.dp_size > 1:
            tag += " DP0"
        if self.pp_size > 1:
            tag += " PP0"
        if self.attn_cp_size > 1:
            tag += " ATTN_CP0"
        if self.moe_dp_size > 1:
            tag += " MOE_DP0"
        if self.tp_size > 1:
            tag += " TP%d" % tp_rank
        if self.ep_size > 1:
            per_moe_dp = max(1, self.tp_size // self.moe_dp_size)
            tag += " EP%d" % (tp_rank % per_moe_dp // max(1, per_moe_dp // self.ep_size))
        return tag

    def raw(self, line: str) -> None:
        with self._lock:
            try:
                self.stream.write(line if line.endswith("\n") else line + "\n")
                self.stream.flush()
            except (OSError, ValueError):
                pass

    def info(self, msg: str, rank: Optional[int] = None) -> None:
        self.raw(self.prefix(rank) + msg)

    def rank0(self, msg: str) -> None:
        """A scheduler line: ``TP0`` in the prefix when the server has several ranks (the node's
        first rank on another node)."""
        self.info(msg, rank=self.first_rank)

    def all_ranks(self, msg: str) -> None:
        for r in range(self.first_rank, self.first_rank + self.local_ranks):
            self.info(msg, rank=r)


class LogFormat:
    """The wording of one era."""

    def __init__(self, era: str = DEFAULT_ERA):
        if era not in ERAS:
            raise ValueError("unknown log format %r (choose from %s)" % (era, ", ".join(ERAS)))
        self.era = era
        self.version = VERSIONS[era]

    # -- accept rate ---------------------------------------------------------------------------
    def accept_rate(self, accept_tokens: int, correct_drafts: int, forward_ct: int, num_draft_tokens: int) -> float:
        """The era's accept rate over a window (0 when undefined)."""
        if forward_ct <= 0:
            return 0.0
        if self.era == "0.5.23":
            per_round = max(0, num_draft_tokens - 1)
            return correct_drafts / (forward_ct * per_round) if per_round else 0.0
        return accept_tokens / (forward_ct * num_draft_tokens) if num_draft_tokens else 0.0

    # -- lines ---------------------------------------------------------------------------------
    def prefill(self, new_seq: int, new_token: int, cached_token: int, num_token: int, token_usage: float,
                running: int, queue: int, input_throughput: float, pending_tokens: int = 0,
                cuda_graph: bool = False) -> str:
        # ``num_token`` is taken for symmetry with ``decode`` but no era writes it in a prefill line.
        if self.era == "0.4":
            # sglang 0.4.6.post5 wheel, sglang/srt/managers/scheduler.py:1145-1161 (no disaggregation)
            return (
                "Prefill batch. #new-seq: %d, #new-token: %d, #cached-token: %d, token usage: %.2f, "
                "#running-req: %d, #queue-req: %d" % (new_seq, new_token, cached_token, token_usage, running, queue)
            )
        if self.era == "2025":
            # sglang 0.5.6 wheel, sglang/srt/managers/scheduler_metrics_mixin.py:139-147
            return (
                "Prefill batch, #new-seq: %d, #new-token: %d, #cached-token: %d, token usage: %.2f, "
                "#running-req: %d, #queue-req: %d, " % (new_seq, new_token, cached_token, token_usage, running, queue)
            )
        # sglang 0.5.23 wheel, sglang/srt/managers/scheduler_components/metrics_reporter.py:753-783
        # (the usage part from pool_stats_observer.py:104-117: no "#token:" in a prefill line;
        # #pending-token: the prompt tokens still waiting, load_inquirer.py:62-80)
        return (
            "Prefill batch, #new-seq: %d, #new-token: %d, #cached-token: %d, token usage: %.2f, "
            "#running-req: %d, #queue-req: %d, #pending-token: %d, cuda graph: %s, "
            "input throughput (token/s): %.2f"
            % (new_seq, new_token, cached_token, token_usage, running, queue, pending_tokens, cuda_graph,
               input_throughput)
        )

    def decode(self, running: int, num_token: int, token_usage: float, spec: bool, accept_len: float,
               accept_rate: float, cuda_graph: bool, gen_throughput: float, queue: int) -> str:
        head = "#running-req: %d, #token: %d, token usage: %.2f, " % (running, num_token, token_usage)
        tail = "cuda graph: %s, gen throughput (token/s): %.2f, #queue-req: %d" % (cuda_graph, gen_throughput, queue)
        if self.era == "0.4":
            # sglang 0.4.6.post5 wheel, sglang/srt/managers/scheduler.py:1201-1225
            if spec:
                head += "accept len: %.2f, " % accept_len
            return "Decode batch. " + head + tail
        body = head
        if spec:
            body += "accept len: %.2f, accept rate: %.2f, " % (accept_len, accept_rate)
        if self.era == "2025":
            # sglang 0.5.6 wheel, sglang/srt/managers/scheduler_metrics_mixin.py:270-309
            return "Decode batch, " + body + tail + ", "
        # sglang 0.5.23 wheel, sglang/srt/managers/scheduler_components/metrics_reporter.py:963-1043
        return "Decode batch, " + body + tail

    # -- /generate meta_info keys ----------------------------------------------------------------
    def spec_meta(self, verify_ct: int, completion_tokens: int, correct: int, num_draft_tokens: int, histogram) -> dict:
        proposed = verify_ct * max(0, num_draft_tokens - 1)
        if verify_ct <= 0 or proposed <= 0:
            return {}
        meta = {
            "spec_accept_rate": correct / proposed,
            "spec_accept_length": completion_tokens / verify_ct,
        }
        if self.era == "0.5.23":
            meta["spec_num_correct_drafts"] = correct
            meta["spec_num_proposed_drafts"] = proposed
            meta["spec_verify_ct"] = verify_ct
            if histogram:
                meta["spec_correct_drafts_histogram"] = list(histogram)
        else:
            meta["spec_accepted_drafts"] = correct
            meta["spec_proposed_drafts"] = proposed
            meta["spec_verify_ct"] = verify_ct
            if histogram:
                meta["spec_accept_histogram"] = list(histogram)
        return meta
