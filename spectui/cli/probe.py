"""``spectui probe``: what a verify step costs in all-reduce on a host, and the L* it implies."""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import sys

from spectui.cli.hostopts import (
    NodeHostError,
    add_host_options,
    explain_connect_error,
    node_targets,
    open_sessions,
    run_on_nodes,
    run_with_passphrase_prompt,
    target_from_args,
)
from spectui.core.errors import SpectuiError
from spectui.core.history import HistoryStore
from spectui.core.probe import (
    ProbeOptions,
    StepCosts,
    history_record,
    interconnect_header,
    predict,
    predict_for_settings,
    probe_params,
    run_probe,
)
from spectui.core.probe.nodes import ProbeNode, run_probe_nodes
from spectui.core.probe.predict import DEFAULT_TOKENS, PredictionError
from spectui.core.probe.run import progress_text
from spectui.core.probe.request import DEFAULT_ITERS, DEFAULT_MAX_SECONDS, DEFAULT_WARMUP
from spectui.core.profiles import ProfileError, load_profiles
from spectui.core.session import HostTarget, open_session

SCHEMA = "spectui.probe-report/1"
DEMO_PROFILE = "kimi-eagle3"


class UsageError(Exception):
    """A command line that does not say what to probe."""


def _tokens(text: str) -> list[int]:
    try:
        out = sorted({int(t) for t in text.split(",") if t.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"token counts are whole numbers separated by commas, not {text!r}")
    if not out or out[0] < 1:
        raise argparse.ArgumentTypeError("token counts must be 1 or more")
    return out


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "probe", help="measure the all-reduce cost of decode and verify steps, and predict the break-even L*",
        description="Measure all-reduce latency across a profile's tensor-parallel GPUs at the message sizes of "
                    "decode and verify steps, read the GPU topology, and predict the accept length speculative "
                    "decoding needs to break even. Runs with the profile's Python (the SGLang venv, with torch). "
                    "A profile with nodes is probed on all of them together: --host names any one of them, and "
                    "the others are reached with the same SSH options.")
    add_host_options(p)
    p.add_argument("--profile", metavar="P", help=f"the profile whose model, GPUs and tensor-parallel size to probe "
                                                  f"(default on --demo: {DEMO_PROFILE})")
    p.add_argument("--profiles", metavar="PATH", action="append", help="extra profile file or folder (repeatable)")
    p.add_argument("--json", action="store_true", help=f"print one JSON object (schema {SCHEMA})")
    p.add_argument("--no-save", action="store_true",
                   help="do not keep the result in the history (spectui history list shows kept probes)")
    m = p.add_argument_group("measurement")
    m.add_argument("--backend", choices=("auto", "nccl", "gloo"), default="auto",
                   help="torch.distributed backend (auto: nccl on GPUs)")
    m.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                   help="where the ranks' tensors live (cpu with gloo rehearses the probe without GPUs)")
    m.add_argument("--ranks", type=int, metavar="N", help="ranks (default: the profile's tensor-parallel size)")
    m.add_argument("--probe-python", metavar="PY", help="the host interpreter with torch (default: the profile's "
                                                        "python, else the agent's)")
    m.add_argument("--model", metavar="PATH", help="model folder or Hugging Face id (default: the profile's)")
    m.add_argument("--hidden-size", type=int, metavar="H", help="instead of the model's config.json")
    m.add_argument("--layers", type=int, metavar="L", help="instead of the model's config.json")
    m.add_argument("--dtype-bytes", type=int, choices=(1, 2, 4), help="activation bytes (default: from the config, "
                                                                       "else 2)")
    m.add_argument("--tokens", type=_tokens, default=list(DEFAULT_TOKENS), metavar="1,2,4,8,16",
                   help="token counts to measure (the profile's verify width is added)")
    m.add_argument("--iters", type=int, default=DEFAULT_ITERS, metavar="N", help="timed all-reduces per size, at most")
    m.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, metavar="N", help="untimed all-reduces per size")
    m.add_argument("--max-seconds", type=float, default=DEFAULT_MAX_SECONDS, metavar="S",
                   help="time cap per size (fewer iterations when exceeded)")
    m.add_argument("--timeout", type=float, metavar="S", help="give up after this long (default: from the caps)")
    m.add_argument("--sim-hardware", metavar="PRESET", help="the simulated host's hardware model (default: the "
                                                            "profile's sim.hardware, else pcie-8gpu)")
    pr = p.add_argument_group("prediction")
    pr.add_argument("--decode-step-ms", type=float, metavar="MS",
                    help="a measured plain decode step (e.g. a plain server's median ITL at concurrency 1)")
    pr.add_argument("--draft-step-ms", type=float, metavar="MS", help="one forward of the draft model")
    pr.add_argument("--tree-draft-ms", type=float, metavar="MS", help="building an NGRAM draft tree, per step")
    pr.add_argument("--token-ms", type=float, metavar="MS", help="compute per extra verified token")
    p.set_defaults(func=run)


def options_from_args(args: argparse.Namespace) -> ProbeOptions:
    return ProbeOptions(backend=args.backend, device=args.device, ranks=args.ranks, model=args.model,
                        hidden_size=args.hidden_size, layers=args.layers, dtype_bytes=args.dtype_bytes,
                        tokens=args.tokens, iters=args.iters, warmup=args.warmup, max_seconds=args.max_seconds,
                        python=args.probe_python, sim_hardware=args.sim_hardware, timeout_s=args.timeout)


def _profile(args: argparse.Namespace):
    name = args.profile or (DEMO_PROFILE if args.demo else None)
    if name is None:
        if not (args.ranks and (args.model or (args.hidden_size and args.layers))):
            raise UsageError("give --profile P, or --ranks N with --model PATH (or --hidden-size and --layers)")
        return None
    library = load_profiles(args.profiles)
    return library.get(name)  # ProfileError: no such profile, with close names


class _Progress:
    def __init__(self, stream=None):
        self.stream = stream or sys.stderr

    def __call__(self, d: dict) -> None:
        self.stream.write(f"probe: {progress_text(d)}\n")
        self.stream.flush()


async def gather_nodes(targets: list[HostTarget], profile, opts: ProbeOptions) -> tuple[dict, str]:
    """The probe across a multi-node profile's hosts: every node's ranks together, node 0's result."""
    sessions = await open_sessions(targets)
    try:
        nodes = [ProbeNode(label=t.destination, session=s,
                           params=probe_params(profile, opts, agent_python=s.hello.get("python")))
                 for t, s in zip(targets, sessions)]
        result = await run_probe_nodes(nodes, profile.nodes[0].dist_address, on_progress=_Progress())
    finally:
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)
    return result, targets[0].destination


async def gather(target: HostTarget, profile, opts: ProbeOptions) -> tuple[dict, str]:
    session = await open_session(target)
    try:
        params = probe_params(profile, opts, agent_python=session.hello.get("python"))
        # progress goes to stderr, so --json output on stdout stays one object
        result = await run_probe(session, params, on_progress=_Progress())
    finally:
        await session.close()
    return result, session.transport.destination if target.kind == "ssh" else target.label


def build_report(result: dict, profile, args: argparse.Namespace, host: str) -> dict:
    costs = StepCosts.from_result(result, decode_step_ms=args.decode_step_ms, token_ms=args.token_ms,
                                  draft_step_ms=args.draft_step_ms, tree_draft_ms=args.tree_draft_ms)
    prediction = predict(result, costs)
    row = predict_for_settings(result, profile.speculative_settings(), costs) if profile is not None else None
    return {
        "schema": SCHEMA,
        "host": host,
        "profile": profile.name if profile is not None else None,
        "interconnect": interconnect_header(result.get("topology")),
        "result": result,
        "prediction": prediction.to_dict(),
        "profile_l_star": row.to_dict() if row is not None else None,
        "history_record": history_record(result, host=host, profile=profile, costs=costs, prediction=prediction),
    }


def run(args: argparse.Namespace) -> int:
    try:
        profile = _profile(args)
        nodes = node_targets(args, profile) if not (args.demo or args.sim) else None
        if nodes is not None:
            result, host = run_on_nodes(nodes, lambda targets: gather_nodes(targets, profile, options_from_args(args)))
        else:
            target = target_from_args(args)
            result, host = run_with_passphrase_prompt(
                target, lambda t: gather(t, profile, options_from_args(args)))
        report = build_report(result, profile, args, host)
        if not args.no_save:
            save_to_history(report["history_record"])
    except (SpectuiError, ProfileError, PredictionError, UsageError, NodeHostError) as exc:
        if args.json:
            print(json.dumps({"schema": SCHEMA, "error": {"kind": type(exc).__name__,
                                                          "code": getattr(exc, "code", None),
                                                          "message": str(exc)}}, indent=2))
        text = explain_connect_error(exc, args.argv)
        print("spectui: " + text, file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2) if args.json else render_text(report))
    return 0


def save_to_history(record: dict) -> str | None:
    """Keep the probe's record in the history; says where on stderr (stdout stays the report)."""
    try:
        store = HistoryStore()
        pid = store.save_probe(record)
    except (OSError, sqlite3.Error, SpectuiError) as exc:
        print(f"spectui: the probe result was not saved to the history: {exc}", file=sys.stderr)
        return None
    print(f"probe: saved as {pid} in the history ({store.path}); --no-save skips this", file=sys.stderr)
    return pid


# --- text ------------------------------------------------------------------------------------
def _bytes(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / 1024 / 1024:.1f} MiB"
    if n >= 1024:
        return f"{n / 1024:.0f} KiB" if n % 1024 == 0 else f"{n / 1024:.1f} KiB"
    return f"{n} B"


def _ms(v, digits=3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _lstar(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def render_text(report: dict) -> str:
    r = report["result"]
    prov = r["provenance"]
    model = r["model"]
    ar = r["allreduce"]
    pred = report["prediction"]
    lines = []
    if prov["kind"] == "sim-hardware-model":
        lines.append(f"probe      {report['host']}: {prov['message']}")
    else:
        lines.append(f"probe      {report['host']}: measured with torch {prov.get('torch')}, {prov['backend']} on "
                     f"{prov['device']}, {prov['world_size']} ranks"
                     + (f" over {len(prov['hosts'])} nodes ({', '.join(prov['hosts'])})" if prov.get("hosts") else "")
                     + (f", NCCL {prov['nccl']}" if prov.get("nccl") else "")
                     + f" ({prov.get('duration_s', 0):.1f} s, {prov.get('python')})")
    topo = r.get("topology") or {}
    header = report.get("interconnect")
    lines.append(f"gpus       {header or topo.get('message') or 'no GPU topology'}")
    if header and topo.get("message") and prov["kind"] != "sim-hardware-model":
        lines.append(f"           ({topo['message']})")
    ic = topo.get("interconnect") or {}
    if ic.get("p2p"):
        lines.append(f"p2p        {ic['p2p']} GPU pairs can read each other's memory directly")
    lines.append(f"model      {model.get('model') or '(no model named)'}: hidden {model['hidden_size']}, {model['layers']} layers, "
                 f"{model['dtype']} ({model['dtype_bytes']} bytes{', assumed' if model.get('dtype_assumed') else ''})")
    lines.append(f"           sizes from {model.get('source')}")
    n_ar = pred["allreduces_per_forward"]
    lines.append(f"step       {n_ar} all-reduces per forward step (2 per layer + 1 for the embedding), "
                 f"tensor parallel {ar['world_size']}")
    if r.get("message"):
        lines.append(f"note       {r['message']}")
    lines.append("")
    lines.append("all-reduce, one call" + (f" ({ar['combine']})" if ar.get("combine") else ""))
    lines.append(f"{'TOKENS':>6}  {'BYTES':>9}  {'MEDIAN ms':>9}  {'P99 ms':>8}  {'N':>4}  {'STABLE':>6}  "
                 f"{'PER STEP ms':>11}")
    for s in ar["sizes"]:
        n = "-" if s.get("n") is None else str(s["n"])
        stable = {True: "yes", False: "no"}.get(s.get("stable"), "-")
        lines.append(f"{s['tokens']:>6}  {_bytes(s['bytes']):>9}  {_ms(s['median_ms'], 4):>9}  "
                     f"{_ms(s['p99_ms'], 4):>8}  {n:>4}  {stable:>6}  {s['median_ms'] * n_ar:>11.2f}")
    if any(s.get("stable") is False for s in ar["sizes"]):
        lines.append("  (STABLE no: the medians of the first and second half differ by more than 10%; "
                     "raise --iters or quiet the host)")
    if ar.get("decode_path"):
        dp = ar["decode_path"]
        lines.append(f"decode     {_ms(dp['median_ms'], 4)} ms per call, {pred['decode_comm_ms']:.2f} ms per step "
                     f"({dp.get('note')})")
    lines.append("")
    costs = pred["costs"]
    if pred["decode_step_ms"]:
        lines.append(f"break-even accept length L* (plain decode step {pred['decode_step_ms']:.2f} ms; costs: "
                     f"{costs.get('source') or 'given'})")
    else:
        lines.append("break-even accept length L*: needs the plain decode step time")
    lines.append(f"{'DRAFT TOKENS':>12}  {'+ALL-REDUCE ms':>14}  {'L* COMM-ONLY':>12}  {'L* CHAIN':>8}  "
                 f"{'L* NGRAM TREE':>13}")
    widths = sorted({row["draft_tokens"] for row in pred["rows"]})
    for n in widths:
        chain = next(x for x in pred["rows"] if x["shape"] == "chain" and x["draft_tokens"] == n)
        tree = next(x for x in pred["rows"] if x["shape"] == "tree" and x["draft_tokens"] == n)
        mark = "*" if chain["interpolated"] else " "
        lines.append(f"{n:>11}{mark}  {chain['extra_comm_ms']:>14.2f}  {_lstar(chain['comm_only']):>12}  "
                     f"{_lstar(chain['predicted']):>8}  {_lstar(tree['predicted']):>13}")
    lines.append("  (a chain of k draft steps verifies k+1 tokens; L* COMM-ONLY is a lower bound: drafting and "
                 "extra compute left out)")
    row = report.get("profile_l_star")
    if report.get("profile"):
        if row is None:
            lines.append(f"profile    {report['profile']}: no speculative decoding, nothing to break even")
        else:
            reach = "" if row["reachable"] in (None, True) else f", above the longest accept length ({row['max_accept']})"
            lines.append(f"profile    {report['profile']}: {row['draft_tokens']} tokens verified per step ({row['shape']}): "
                         f"L* {_lstar(row['predicted'])} (communication-only lower bound {_lstar(row['comm_only'])})"
                         f"{reach}")
    for note in pred["notes"]:
        lines.append(f"note       {note}")
    return "\n".join(lines)
