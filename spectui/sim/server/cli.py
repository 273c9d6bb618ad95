"""The launch flags: every flag of the imitated SGLang release, plus the ``--sim-*`` knobs.

The release is the one the era of ``--sim-log-format`` names (``logfmt.VERSIONS``); its flags
come from its recorded action table (``flag_table``), so unknown flags, bad choices and
ambiguous prefixes are refused as that release's argparse refuses them (usage on stderr, exit 2).
After parsing, the namespace is turned into the release's server args as its
``ServerArgs.from_cli_args`` does (sglang 0.4.6.post5 wheel, sglang/srt/server_args.py:1420-1426:
``tensor_parallel_size`` becomes ``tp_size``, ...), and the values the simulator needs that the
release has no flag for are filled in (listed in ``sim_filled``, never reported as server args).
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Dict, List, Optional, Sequence

from spectui.sim.hardware import DEFAULT_MULTINODE_PRESET, DEFAULT_PRESET, PRESETS
from spectui.sim.logfmt import DEFAULT_ERA, ERAS, VERSIONS
from spectui.sim.server.flag_table import add_release_flags
from spectui.sim.timescale import TimeScaleError, time_scale

PROG = "launch_server.py"

SUPPORTED_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "UNO")

# ServerArgs.from_cli_args of the releases with the long names as dests (sglang 0.4.6.post5 wheel,
# sglang/srt/server_args.py:1420-1426; sglang 0.5.6 wheel, sglang/srt/server_args.py:3917-3924).
CLI_DEST_TO_FIELD = {"tensor_parallel_size": "tp_size", "pipeline_parallel_size": "pp_size",
                     "data_parallel_size": "dp_size", "expert_parallel_size": "ep_size"}

# What the simulator reads and a release may lack a flag for: the value that release behaves with.
SIM_FILL: Dict[str, Any] = {
    "incremental_streaming_output": False,  # cumulative /generate chunks
    "skip_server_warmup": False,
    "speculative_draft_model_revision": None,
    "speculative_ngram_min_bfs_breadth": 1,
    "speculative_ngram_max_bfs_breadth": 10,
    "speculative_ngram_match_type": "BFS",
    "speculative_ngram_max_trie_depth": 18,
    "speculative_ngram_capacity": 10_000_000,
    "speculative_ngram_min_match_window_size": 1,
    "speculative_ngram_max_match_window_size": 0,
    "cuda_graph_max_bs": None,
    "cuda_graph_bs": None,
    "disable_cuda_graph": False,
    "pp_size": 1,
    "dp_size": 1,
    "ep_size": 1,
}


def default_state_dir() -> str:
    return os.environ.get("SPECTUI_STATE_DIR") or "~/.cache/spectui"


def _era_of(argv: Sequence[str]) -> str:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--sim-log-format", default=DEFAULT_ERA)
    ns, _ = pre.parse_known_args(list(argv))
    return ns.sim_log_format if ns.sim_log_format in ERAS else DEFAULT_ERA


def _slow_factor(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("invalid float value: %r" % text)
    if not value >= 1.0:
        raise argparse.ArgumentTypeError("must be at least 1, not %s" % text)
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("invalid float value: %r" % text)
    if not value > 0:
        raise argparse.ArgumentTypeError("must be above 0, not %s" % text)
    return value


def build_parser(era: str = DEFAULT_ERA) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Launch an SGLang server (spectui's simulated GPU host: the flags of SGLang %s, "
        "its HTTP API, logs and metrics; model and GPUs are simulated)." % VERSIONS[era],
    )
    add_release_flags(p, VERSIONS[era])

    # The simulator's own knobs
    s = p.add_argument_group("simulator", "Knobs of spectui's simulated host (not SGLang flags).")
    s.add_argument("--sim-state", default=None, metavar="DIR",
                   help="Host state folder holding the virtual GPUs (default: $SPECTUI_STATE_DIR, else ~/.cache/spectui).")
    s.add_argument("--sim-load-time", type=float, default=4.0, metavar="S", help="Seconds from launch to ready (default 4), times $SPECTUI_SIM_TIME_SCALE if set.")
    s.add_argument("--sim-hardware", default=None, choices=sorted(PRESETS),
                   help="Hardware cost model preset (default %s; %s with --nnodes above 1)."
                   % (DEFAULT_PRESET, DEFAULT_MULTINODE_PRESET))
    s.add_argument("--sim-dist-timeout", type=_positive_seconds, default=600.0, metavar="S",
                   help="Seconds the nodes of a multi-node server wait for each other when --dist-timeout is "
                   "not given (default 600, torch's default for NCCL).")
    s.add_argument("--sim-log-format", default=DEFAULT_ERA, choices=list(ERAS),
                   help="Which SGLang release's log lines and field names to write (default %s)." % DEFAULT_ERA)
    s.add_argument("--sim-draft-agreement", type=float, metavar="P",
                   help="Probability that the drafter's first token is the target's (default: from the draft model path).")
    s.add_argument("--sim-draft-decay", type=float, default=0.85, metavar="R",
                   help="Per-depth decay of the drafter's agreement (default 0.85).")
    s.add_argument("--sim-weights-gb", type=float, metavar="GB", help="Total model weight size (default: from the model path).")
    s.add_argument("--sim-seed", type=int, default=0,
                   help="Base seed of greedy requests (a sampled request without sampling_seed draws a fresh seed; default 0).")
    s.add_argument("--sim-fail-load", choices=["oom"], help="Fail during weight loading: 'oom' = CUDA out of memory, then exit 1.")
    s.add_argument("--sim-crash-after", type=float, metavar="S", help="Crash with a traceback S seconds after becoming ready.")
    s.add_argument("--sim-hang-after", type=float, metavar="S", help="Stop answering (even /health) S seconds after becoming ready.")
    s.add_argument("--sim-slow-after", type=float, metavar="S",
                   help="Make every forward pass --sim-slow-factor times slower S seconds after becoming ready "
                   "(a GPU throttling its clocks, or a straggling rank).")
    s.add_argument("--sim-slow-factor", type=_slow_factor, default=6.0, metavar="F",
                   help="How many times slower each forward pass gets after --sim-slow-after (default 6).")
    s.add_argument("--sim-orphan-timeout", type=float, default=60.0, metavar="S",
                   help="Seconds TP ranks outlive a killed leader, holding their memory (default 60).")
    return p


def as_server_args(ns: argparse.Namespace) -> argparse.Namespace:
    """The parsed flags as the release's server args, plus what the simulator needs (``sim_filled``)."""
    for dest, name in CLI_DEST_TO_FIELD.items():
        if hasattr(ns, dest):
            setattr(ns, name, getattr(ns, dest))
            delattr(ns, dest)
    era = ns.sim_log_format
    filled: List[str] = []
    # 0.5.23 splits the cuda graph flags by phase (--cuda-graph-max-bs-decode, ...): the decode ones
    # are the simulator's cuda graph (sglang 0.5.23 wheel, sglang/srt/arg_groups/fields/).
    if not hasattr(ns, "cuda_graph_max_bs") and hasattr(ns, "cuda_graph_max_bs_decode"):
        ns.sim_cuda_graph_max_bs = ns.cuda_graph_max_bs_decode
        ns.sim_cuda_graph_bs = ns.cuda_graph_bs_decode
        ns.sim_cuda_graph_disabled = bool(ns.disable_cuda_graph) or ns.cuda_graph_backend_decode == "disabled"
    else:
        ns.sim_cuda_graph_max_bs = getattr(ns, "cuda_graph_max_bs", None)
        ns.sim_cuda_graph_bs = getattr(ns, "cuda_graph_bs", None)
        ns.sim_cuda_graph_disabled = bool(getattr(ns, "disable_cuda_graph", False))
    if era == "2025" and hasattr(ns, "speculative_ngram_branch_length"):  # the older name of the trie depth
        ns.speculative_ngram_max_trie_depth = ns.speculative_ngram_branch_length
        filled.append("speculative_ngram_max_trie_depth")
    for name, value in SIM_FILL.items():
        if not hasattr(ns, name):
            setattr(ns, name, value)
            filled.append(name)
    ns.sim_filled = tuple(filled)
    return ns


def launch_argv(parser: argparse.ArgumentParser, argv: Sequence[str]) -> List[str]:
    """``argv`` without the simulator's own ``--sim-*`` knobs (and their values): the launch command
    a real server would report."""
    sim_opts = {o: a for a in parser._actions for o in a.option_strings if o.startswith("--sim-")}
    out: List[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
            continue
        name = token.split("=", 1)[0]
        if name.startswith("--sim-"):
            matches = [o for o in sim_opts if o == name] or [o for o in sim_opts if o.startswith(name)]
            if matches:
                skip = "=" not in token and sim_opts[matches[0]].nargs != 0
                continue
        out.append(token)
    return out


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    era = _era_of(argv)
    parser = build_parser(era)
    ns = parser.parse_args(argv)
    ns.sim_log_format = era
    ns.sim_launch_argv = tuple(launch_argv(parser, argv))
    try:
        ns.sim_time_scale = time_scale()
    except TimeScaleError as exc:
        parser.error(str(exc))
    if ns.sim_state is None:
        ns.sim_state = default_state_dir()
    return as_server_args(ns)
