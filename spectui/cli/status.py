"""``spectui status``: one look at a host: facts, agent round trip, a GPU sample."""

from __future__ import annotations

import argparse
import json
import sys

from spectui.cli.hostopts import add_host_options, explain_connect_error, run_with_passphrase_prompt, target_from_args
from spectui.core.errors import HostKeyChanged, HostKeyError, SpectuiError
from spectui.core.session import HostTarget, open_session

SCHEMA = "spectui.status/1"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("status", help="show a host's facts and one GPU sample",
                       description="Connect to a host, run the agent, and show its facts and one GPU sample.")
    add_host_options(p)
    p.add_argument("--json", action="store_true", help=f"print one JSON object (schema {SCHEMA}, see docs/json.md)")
    p.set_defaults(func=run)


async def gather(target: HostTarget) -> dict:
    session = await open_session(target)
    try:
        rtt = await session.client.rtt()
        facts = await session.client.call("host.facts")
        frame = await session.client.call("gpu.sample")
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


def _error_json(exc: SpectuiError) -> dict:
    kind = type(exc).__name__
    d = {"schema": SCHEMA, "error": {"kind": kind, "message": str(exc)}}
    if isinstance(exc, HostKeyError):
        d["error"].update(fingerprint=exc.fingerprint, key_type=exc.key_type, host=exc.host, port=exc.port,
                          changed=isinstance(exc, HostKeyChanged))
    return d


def run(args: argparse.Namespace) -> int:
    try:
        target = target_from_args(args)
        report = run_with_passphrase_prompt(target, gather)
    except SpectuiError as exc:
        if args.json:
            print(json.dumps(_error_json(exc), indent=2))
        print("spectui: " + explain_connect_error(exc, args.argv),
              file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render_text(report))
    return 0


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
