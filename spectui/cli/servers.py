"""``spectui servers list | start | stop | switch | logs``: the server lifecycle, headless."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from spectui.cli.hostopts import (add_host_options, explain_connect_error, refuse_on_problems,
                                  run_with_passphrase_prompt, target_from_args)
from spectui.core.errors import AgentCallError, SpectuiError
from spectui.core.flagcheck import check_on_host
from spectui.core.profiles import ProfileError, load_profiles
from spectui.core.profiles.secret_flags import redact_server_records
from spectui.core.servers import SERVER_BENCHMARKED, ServerControl
from spectui.core.session import HostTarget, open_session
from spectui.core.textsafe import for_stream, visible


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("servers", help="list, start, stop and switch SGLang servers on a host",
                       description="Start, stop and switch SGLang servers from profiles, on a host or the demo.")
    ssub = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    def action(name: str, help: str, *, profile: str | None = None, json_flag: bool = True):
        a = ssub.add_parser(name, help=help, description=help)
        if profile == "required":
            a.add_argument("profile", metavar="PROFILE")
        elif profile == "optional":
            a.add_argument("profile", metavar="PROFILE", nargs="?")
        add_host_options(a)
        if json_flag:
            a.add_argument("--json", action="store_true", help="print JSON")
        a.add_argument("--profiles", metavar="PATH", action="append",
                       help="extra profile file or folder (repeatable)")
        a.set_defaults(func=run, action=name)
        return a

    action("list", "list the servers spectui knows on the host")
    st = action("start", "start a profile's server and wait until it is ready", profile="required")
    sw = action("switch", "stop what holds the profile's GPUs or port, then start it and wait until ready",
                profile="required")
    for a in (st, sw):
        a.add_argument("--force", action="store_true", help="start even if GPUs are used by processes spectui did not start")
        a.add_argument("--no-wait", action="store_true", help="return once started, without waiting for ready")
        a.add_argument("--timeout", type=float, default=1800.0, metavar="S", help="how long to wait for ready")
    stop = action("stop", "stop a server (all servers spectui started, without PROFILE)", profile="optional")
    for a in (stop, sw):
        a.add_argument("--grace", type=float, default=20.0, metavar="S", help="SIGTERM grace period before SIGKILL")
        a.add_argument("--stop-benchmark", action="store_true",
                       help="stop a server even while a benchmark run measures it (the run is cancelled and ends "
                            "interrupted)")
    lg = action("logs", "print a server's log", profile="required", json_flag=False)
    lg.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    lg.add_argument("--lines", type=int, default=40, metavar="N")


class Progress:
    """Progress of long waits: one updating line on a terminal, plain lines otherwise."""

    def __init__(self, stream=None):
        self.stream = stream = stream or sys.stderr
        self.tty = stream.isatty()
        self.last = None
        self.t0 = time.monotonic()

    def show(self, text: str) -> None:
        if text == self.last:
            return
        self.last = text
        stamp = f"[{time.monotonic() - self.t0:6.1f}s] "
        if self.tty:
            self.stream.write("\r\033[K" + stamp + text)
        else:
            self.stream.write(stamp + text + "\n")
        self.stream.flush()

    def done(self) -> None:
        if self.tty and self.last is not None:
            self.stream.write("\n")
            self.stream.flush()

    def on_event(self, ev) -> None:
        d = ev.data
        if ev.name == "switch":
            detail = d.get("detail")
            if d["stage"] == "loading" and isinstance(detail, dict):
                self.show(f"{d['target']}: loading {_progress(detail)}")
            else:
                self.show(f"{d['target']}: {d['stage']}" + (f" {detail}" if isinstance(detail, str) and detail else ""))
        elif ev.name == "server":
            if d["state"] == "loading" and d.get("progress"):
                self.show(f"{d['name']}: loading {_progress(d['progress'])}")
            else:
                self.show(f"{d['name']}: {d['state']}")


def _progress(p: dict) -> str:
    pct = p.get("percent")
    shards = f" ({p['done']}/{p['total']} shards)" if p.get("total") else ""
    return (f"{pct:.0f}%" if pct is not None else "?") + shards


def _uptime(s: dict) -> str:
    if s["state"] in ("stopped", "failed", "crashed") or not s.get("started_at"):
        return "-"
    sec = int(time.time() - s["started_at"])
    return f"{sec // 3600}h{sec % 3600 // 60:02d}m" if sec >= 3600 else f"{sec // 60}m{sec % 60:02d}s"


def render_list(servers: list[dict]) -> str:
    if not servers:
        return "no servers started by spectui on this host"
    rows = [f"{'NAME':<20} {'STATE':<13} {'PID':>8} {'PORT':>6} {'GPUS':<16} {'UPTIME':>8}  REASON"]
    for s in servers:
        state = s["state"] + (f" {s['progress']['percent']:.0f}%" if s["state"] == "loading" and s.get("progress")
                              and s["progress"].get("percent") is not None else "")
        gpus = ",".join(map(str, s.get("gpus") or [])) or "-"
        rows.append(f"{s['name']:<20} {state:<13} {s['pid'] or '-':>8} {s['port']:>6} {gpus:<16} {_uptime(s):>8}  "
                    f"{s.get('reason') or ''}")
    return "\n".join(rows)


def _cancelled(result: dict) -> str:
    """``; benchmark run R cancelled (interrupted)`` when a stop with --stop-benchmark cut runs short."""
    runs = result.get("benchmarks_cancelled") or []
    if not runs:
        return ""
    return f"; benchmark run{'s' if len(runs) > 1 else ''} {', '.join(runs)} cancelled (interrupted)"


def _ended_badly(server: dict) -> str | None:
    if server["state"] in ("failed", "crashed", "unresponsive"):
        tail = "\n".join("  " + l for l in (server.get("log_tail") or [])[-15:])
        return f"{server['name']} {server['state']}: {server.get('reason')}" + (f"\nlast log lines:\n{tail}" if tail else "")
    if server.get("timed_out"):
        return f"{server['name']} is still {server['state']} after the timeout"
    return None


async def _run(args: argparse.Namespace, target: HostTarget) -> int:
    library = None
    if getattr(args, "profile", None) and args.action in ("start", "switch"):
        library = load_profiles(args.profiles)
        profile = library.get(args.profile)  # ProfileError: no such profile, with close names
        broken = [e for e in library.errors if e.profile == profile.name or e.path == profile.source]
        if broken:
            raise broken[0]
    session = await open_session(target)
    try:
        ctl = ServerControl(session)
        progress = Progress()
        if not getattr(args, "json", False):
            ctl.on_events(progress.on_event)
        if args.action == "list":
            servers = await ctl.list()
            print(json.dumps({"servers": redact_server_records(servers)}, indent=2) if args.json
                  else for_stream(render_list(servers), sys.stdout))
            return 0
        if args.action == "logs":
            return await _logs(ctl, args)
        if args.action == "stop":
            servers = await ctl.list()
            names = [args.profile] if args.profile else [s["name"] for s in servers if s["state"] not in ("stopped",)]
            results = []
            refused: list[AgentCallError] = []  # servers a live benchmark run measures: the others still stop
            for name in names:
                progress.show(f"{name}: stopping")
                try:
                    results.append(await ctl.stop(name, grace_s=args.grace, stop_benchmark=args.stop_benchmark))
                except AgentCallError as exc:
                    if exc.code != SERVER_BENCHMARKED or args.profile:
                        progress.done()  # the error's sentence on a line of its own
                        raise
                    refused.append(exc)
            progress.done()
            if args.json:
                print(json.dumps({"stopped": redact_server_records(results), "refused": [str(e) for e in refused]},
                                 indent=2))
            else:
                for r in results:
                    st = r.get("stop") or {}
                    if r.get("already_stopped"):
                        print(f"{r['name']}: was not running" + (f" ({r['not_signalled']})" if r.get("not_signalled")
                                                                 else ""))
                    else:
                        rel = ("GPU memory released in %.1f s" % st["release_s"]) if st.get("gpu_released") else \
                            (st.get("release_check") or "GPU release unknown")
                        print(f"{r['name']}: stopped in {st.get('exit_s', 0):.1f} s"
                              f"{' (SIGKILL after the grace period)' if st.get('killed') else ''}; {rel}"
                              + _cancelled(r))
            for r in results:
                if r.get("record_error"):
                    print(f"spectui: {r['name']} was stopped, but {r['record_error']}", file=sys.stderr)
            for exc in refused:
                print(f"spectui: {exc}", file=sys.stderr)
            return 1 if refused else 0
        # start / switch: the profile's flags are checked against the host's SGLang first
        if refuse_on_problems(await check_on_host(session, profile),
                              f"{profile.name} was not launched: fix the profile first."):
            return 1
        if args.action == "start":
            server = await ctl.start(profile, force=args.force)
            if not args.no_wait and not server.get("already_running"):
                server = await ctl.wait(profile.name, timeout_s=args.timeout)
            result = {"server": server}
        else:
            result = await ctl.switch(profile, force=args.force, grace_s=args.grace, timeout_s=args.timeout,
                                      stop_benchmark=args.stop_benchmark)
            server = result["server"]
        progress.done()
        if args.json:
            print(json.dumps(redact_server_records(result), indent=2))
        for problem in result.get("record_errors") or []:
            print(f"spectui: {problem}", file=sys.stderr)
        bad = _ended_badly(server)
        if bad:
            print(for_stream("spectui: " + bad, sys.stderr), file=sys.stderr)
            return 1
        if not args.json:
            took = ""
            if server.get("ready_at") and server.get("started_at"):
                took = f" in {server['ready_at'] - server['started_at']:.1f} s"
            state = "already running" if server.get("already_running") or result.get("already_running") else server["state"]
            print(f"{server['name']}: {state}{took} (pid {server['pid']}, port {server['port']})" + _cancelled(result))
            for s in result.get("stages", []):
                print(f"  {s['stage']:<24} {s.get('detail') or '' if isinstance(s.get('detail'), str) else '':<20} "
                      f"{s['seconds']:.2f} s")
        return 0
    finally:
        await session.close()


async def _logs(ctl: ServerControl, args: argparse.Namespace) -> int:
    # on a terminal, control characters in the log are shown, not obeyed; a pipe gets the lines as they are
    shown = visible if sys.stdout.isatty() else str
    r = await ctl.logs(args.profile, lines=args.lines)
    for line in r["lines"]:
        print(shown(line))
    sys.stdout.flush()
    offset = r["offset"]
    while args.follow:
        await asyncio.sleep(0.5)
        r = await ctl.logs(args.profile, offset=offset)
        if r["reset"]:
            print(f"--- {args.profile}: log restarted ---")
        for line in r["lines"]:
            print(shown(line))
        sys.stdout.flush()
        offset = r["offset"]
    return 0


def run(args: argparse.Namespace) -> int:
    try:
        target = target_from_args(args)
        return run_with_passphrase_prompt(target, lambda t: _run(args, t))
    except ProfileError as exc:
        print(f"spectui: {exc}", file=sys.stderr)
        return 1
    except SpectuiError as exc:
        print("spectui: " + explain_connect_error(exc, args.argv),
              file=sys.stderr)
        return 1
