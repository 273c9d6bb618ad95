"""``spectui status``: one look at a host: facts, agent round trip, a GPU sample; with several hosts, one
line each (:mod:`spectui.cli.fleet`)."""

from __future__ import annotations

import argparse
import json
import sys

from collections import Counter

from spectui.agent.protocol import Method
from spectui.cli.fleet import HostAnswer, ask_hosts, error_json, host_limit_s, print_answers, table
from spectui.cli.hostopts import (add_host_options, destinations_of, explain_connect_error, run_with_passphrase_prompt,
                                  target_from_args, targets_from_args)
from spectui.core.errors import SpectuiError
from spectui.core.session import HostTarget, open_session

SCHEMA = "spectui.status/1"
HOSTS_SCHEMA = "spectui.status.hosts/1"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="show a host's facts and one GPU sample, or one line for each of several hosts",
                       description="Connect to a host, run the agent, and show its facts and one GPU sample. With "
                                   "-H given several times, every host is asked at once and each gets one line of "
                                   "one table: its GPUs, SGLang version, agent round trip and GPU telemetry "
                                   "source, or the sentence saying why it failed. The exit status is 0 when every "
                                   "host answered, 1 when any failed.")
    add_host_options(p, multi=True)
    p.add_argument("--json", action="store_true", help=f"print one JSON object (schema {SCHEMA}; with several hosts "
                                                       f"{HOSTS_SCHEMA}; see docs/json.md)")
    p.set_defaults(func=run)


async def gather(target: HostTarget) -> dict:
    session = await open_session(target)
    try:
        rtt = await session.client.rtt()
        facts = await session.client.call(Method.HOST_FACTS)
        frame = await session.client.call(Method.GPU_SAMPLE)
    finally:
        await session.close()
    hello = session.hello
    return {
        "schema": SCHEMA,
        "target": {"kind": target.kind, "destination": session.transport.destination, "simulated": target.simulated},
        "agent": {k: hello.get(k) for k in ("protocol", "agent_hash", "pid", "python", "python_version")},
        "rtt_ms": round(rtt * 1000, 2),
        "host": facts,
        "gpu_telemetry": {
            "available": frame.get("source") != "none",
            "source": frame.get("source"),
            "message": frame.get("message"),
            "missing": frame.get("missing", []),
            "gpus": frame.get("gpus", []),
        },
    }


def run(args: argparse.Namespace) -> int:
    if len(destinations_of(args)) > 1:
        return run_hosts(args)
    try:
        target = target_from_args(args)
        report = run_with_passphrase_prompt(target, gather)
    except SpectuiError as exc:
        if args.json:
            print(json.dumps(error_json(exc, SCHEMA), indent=2))
        print("spectui: " + explain_connect_error(exc, args.argv),
              file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render_text(report))
    return 0


def run_hosts(args: argparse.Namespace) -> int:
    """``status`` of several hosts: one table, or one JSON object; 1 when any host failed."""
    answers = ask_hosts(destinations_of(args), targets_from_args(args), gather, host_limit_s(args))
    return print_answers(args, answers, schema=SCHEMA, hosts_schema=HOSTS_SCHEMA, render=render_hosts,
                         command=["status"])


def render_hosts(answers: list[HostAnswer]) -> str:
    """One line per host: HOST, STATE (ok or error), GPUS, SGLANG, RTT MS, TELEMETRY; a failed host's line
    has its sentence after STATE."""
    rows = []
    for a in answers:
        if a.error is not None:
            rows.append([a.dest, "error", str(a.error)])
            continue
        r = a.result
        gt, sg = r["gpu_telemetry"], r["host"]["sglang"]
        names = Counter(str(g.get("name") or "?") for g in (gt["gpus"] or r["host"].get("gpus") or []))
        gpus = ", ".join(f"{n}x {name}" for name, n in names.items()) or "-"
        version = str(sg["version"] or "unknown") if sg["installed"] else "-"
        rows.append([a.dest, "ok", gpus, version, f"{r['rtt_ms']:.1f}", str(gt["source"])])
    return table(["HOST", "STATE", "GPUS", "SGLANG", "RTT MS", "TELEMETRY"], rows, right=(4,))


def _fmt(v, unit="", digits=0):
    return "-" if v is None else f"{v:.{digits}f}{unit}"


def render_text(r: dict) -> str:
    h = r["host"]
    sg = h["sglang"]
    gt = r["gpu_telemetry"]
    gpus = gt["gpus"]
    lines = [
        f"host     {h['hostname']} ({r['target']['destination']}){'  [simulated]' if h.get('simulated') else ''}",
        f"os       {h['os']}, kernel {h['kernel']}, {h['arch']}, {h['cpu_count']} CPUs",
        f"python   {h['python']['path']} ({h['python']['version']})",
        "sglang   " + (f"{sg['version'] or 'unknown version'} at {sg['path']}" if sg["installed"] else sg["message"]),
        f"driver   {h['nvidia_driver'] or '-'}",
        f"agent    pid {r['agent']['pid']}, round trip {r['rtt_ms']:.1f} ms",
    ]
    if not gt["available"]:
        lines.append(f"gpus     {gt['message']}")
        return "\n".join(lines)
    names = sorted({g["name"] or "?" for g in gpus})
    lines.append(f"gpus     {len(gpus)}x {', '.join(names)} (source: {gt['source']})")
    if gt["missing"]:
        lines.append(f"missing  {', '.join(gt['missing'])}")
    lines.append("")
    lines.append(f"{'GPU':>3}  {'UTIL':>5}  {'MEMORY (GiB)':>14}  {'POWER (W)':>11}  {'TEMP':>5}  {'SM MHz':>6}  PROCESSES")
    for g in gpus:
        mem = "-" if g["mem_used_mib"] is None else f"{g['mem_used_mib'] / 1024:.1f} / {_fmt(g['mem_total_mib'] and g['mem_total_mib'] / 1024, '', 0)}"
        power = f"{_fmt(g['power_w'])} / {_fmt(g['power_limit_w'])}"
        procs = g["processes"]
        ptxt = "n/a" if procs is None else (", ".join(str(p["pid"]) for p in procs) or "-")
        lines.append(f"{g['index']:>3}  {_fmt(g['util_pct'], '%'):>5}  {mem:>14}  {power:>11}  {_fmt(g['temp_c'], 'C'):>5}  "
                     f"{_fmt(g['sm_clock_mhz']):>6}  {ptxt}")
    return "\n".join(lines)
