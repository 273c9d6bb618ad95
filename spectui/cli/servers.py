"""``spectui servers list | describe | start | stop | adopt | switch | logs``: the server lifecycle, headless.

Servers spectui did not start (origin ``external``) are listed and described like its own; stopping
or adopting one, or a switch that would stop one, first prints every process it will signal and asks
(``--yes`` confirms; without a terminal and without ``--yes`` the command refuses).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from spectui.agent.logs.follow import TAIL_MAX_LINES as MAX_LOG_LINES
from spectui.agent.protocol import DOWN_STATES, FINAL_STATES, STOP_GRACE_S, Method, ServerState
from spectui.cli.fleet import HostAnswer, ask_hosts, host_limit_s, print_answers
from spectui.cli.hostopts import (NodeHostError, add_host_options, demo_profiles, destinations_of,
                                  explain_connect_error, node_targets, refuse_on_problems, run_on_nodes,
                                  run_with_passphrase_prompt, target_from_args, targets_from_args)
from spectui.cli.servers_nodes import start_nodes, stop_nodes
from spectui.core.errors import AgentCallError, SpectuiError
from spectui.core.flagcheck import check_on_host
from spectui.core.profiles import Profile, ProfileError, load_profiles
from spectui.core.profiles.secret_flags import redact_server_records
from spectui.cli.confirm import CONFIRMED, DECLINED, ask, count
from spectui.core.server_describe import describe, holder_lines, plan_lines, started_by_text
from spectui.core.servers import SERVER_BENCHMARKED, ServerControl, confirmed_processes, is_external, origin
from spectui.core.session import HostTarget, open_session
from spectui.core.textsafe import for_stream, visible

LIST_SCHEMA = "spectui.servers/1"
HOSTS_LIST_SCHEMA = "spectui.servers.hosts/1"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("servers", help="list, describe, start, stop, adopt and switch SGLang servers on a host",
                       description="Start, stop and switch SGLang servers from profiles, on a host or the demo; "
                                   "servers spectui did not start are listed too, and stopped or adopted only "
                                   "after a confirmation that shows every process it will signal.")
    ssub = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    def action(name: str, help: str, *, profile: str | None = None, json_flag: bool = True, metavar="PROFILE",
               description: str | None = None, multi: bool = False):
        a = ssub.add_parser(name, help=help, description=description or help)
        if profile == "required":
            a.add_argument("profile", metavar=metavar)
        elif profile == "optional":
            a.add_argument("profile", metavar=metavar, nargs="?")
        add_host_options(a, multi=multi)
        if json_flag:
            a.add_argument("--json", action="store_true", help="print JSON")
        a.add_argument("--profiles", metavar="PATH", action="append",
                       help="extra profile file or folder (repeatable)")
        a.set_defaults(func=run, action=name)
        return a

    action("list", "list the servers on the host: spectui's own, adopted ones, and those found running",
           multi=True, description="List the servers on the host: spectui's own, adopted ones, and those found "
                                   "running. With -H given several times, every host is asked at once and their "
                                   "servers make one table with a HOST column; a host that failed is a line with "
                                   "the sentence saying why. The exit status is 0 when every host answered, 1 when "
                                   "any failed.")
    action("describe", "show everything known about one server: command, user, processes, log, GPUs",
           profile="required", metavar="NAME")
    st = action("start", "start a profile's server and wait until it is ready", profile="required")
    sw = action("switch", "stop what holds the profile's GPUs or port, then start it and wait until ready",
                profile="required")
    for a in (st, sw):
        a.add_argument("--force", action="store_true", help="start even if GPUs are used by processes spectui did not start")
        a.add_argument("--no-wait", action="store_true", help="return once started, without waiting for ready")
        a.add_argument("--timeout", type=float, default=1800.0, metavar="S", help="how long to wait for ready")
    sw.add_argument("--yes", "--stop-external", dest="yes", action="store_true",
                    help="stop the servers spectui did not start that hold the port or GPUs, without asking")
    stop = action("stop", "stop a server (without NAME: every server spectui started or adopted, never one it "
                          "did not start)", profile="optional", metavar="NAME")
    stop.add_argument("--yes", action="store_true",
                      help="confirm stopping a server spectui did not start (otherwise asked on a terminal)")
    for a in (stop, sw):
        a.add_argument("--grace", type=float, default=STOP_GRACE_S, metavar="S", help="SIGTERM grace period before SIGKILL")
        a.add_argument("--stop-benchmark", action="store_true",
                       help="stop a server even while a benchmark run measures it (the run is cancelled and ends "
                            "interrupted)")
    adopt = action("adopt", "treat a server spectui did not start as its own from now on (stop, switch, restart)",
                   profile="required", metavar="NAME")
    adopt.add_argument("--as", dest="as_name", metavar="NAME", help="the name to give it (default: its ext- name)")
    adopt.add_argument("--yes", action="store_true", help="confirm without asking")
    lg = action("logs", "print a server's log", profile="required", json_flag=False, metavar="NAME")
    lg.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    lg.add_argument("--lines", type=int, default=40, metavar="N",
                    help=f"how many of the last lines to print (at most {MAX_LOG_LINES})")


class Progress:
    """Progress of long waits: one updating line on a terminal, plain lines otherwise."""

    def __init__(self, stream=None):
        self.stream = stream = stream or sys.stderr
        self.tty = stream.isatty()
        self.last = None
        self.t0 = time.monotonic()
        #: when a set: only the events of these servers are shown (others' come from the same host)
        self.only: set[str] | None = None

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
        if ev.name == "switch" and (self.only is None or d.get("target") in self.only):
            detail = d.get("detail")
            if d["stage"] == "loading" and isinstance(detail, dict):
                self.show(f"{d['target']}: loading {_progress(detail)}")
            else:
                self.show(f"{d['target']}: {d['stage']}" + (f" {detail}" if isinstance(detail, str) and detail else ""))
        elif ev.name == "server" and (self.only is None or d.get("name") in self.only):
            if d["state"] == ServerState.LOADING and d.get("progress"):
                self.show(f"{d['name']}: loading {_progress(d['progress'])}")
            else:
                self.show(f"{d['name']}: {d['state']}")


def _progress(p: dict) -> str:
    pct = p.get("percent")
    shards = f" ({p['done']}/{p['total']} shards)" if p.get("total") else ""
    return (f"{pct:.0f}%" if pct is not None else "?") + shards


def _uptime(s: dict) -> str:
    if s["state"] in FINAL_STATES or not s.get("started_at"):
        return "-"
    sec = int(time.time() - s["started_at"])
    return f"{sec // 3600}h{sec % 3600 // 60:02d}m" if sec >= 3600 else f"{sec // 60}m{sec % 60:02d}s"


NO_SERVERS = "no SGLang servers on this host (none started by spectui, none found running)"
LIST_HEADER = (f"{'NAME':<20} {'STATE':<13} {'ORIGIN':<8} {'PID':>8} {'PORT':>6} {'GPUS':<16} {'UPTIME':>8}  "
               "REASON / STARTED BY")


def render_list(servers: list[dict]) -> str:
    """The ``servers list`` table: an ORIGIN column, and for a server spectui did not start, how it was
    started (its host text made visible)."""
    if not servers:
        return NO_SERVERS
    return "\n".join([LIST_HEADER, *map(_list_row, servers)])


def _list_row(s: dict) -> str:
    state = s["state"] + (f" {s['progress']['percent']:.0f}%" if s["state"] == ServerState.LOADING and s.get("progress")
                          and s["progress"].get("percent") is not None else "")
    gpus = ",".join(map(str, s.get("gpus") or [])) or "-"
    detail = s.get("reason") or ""
    if origin(s) != "spectui" and not detail:
        detail = started_by_text(s)
    if s.get("stale"):  # the state shown could not be confirmed just now: say why
        detail = (f"{detail}; " if detail else "") + f"unconfirmed: {s['stale']}"
    return (f"{visible(str(s['name'])):<20} {state:<13} {origin(s):<8} {s['pid'] or '-':>8} "
            f"{s['port'] or '-':>6} {gpus:<16} {_uptime(s):>8}  {visible(str(detail))}")


def render_hosts_list(answers: list[HostAnswer]) -> str:
    """The ``servers list`` table of several hosts: HOST first, then the columns of :func:`render_list`; a host
    with no servers, or one that failed, is one line with its sentence."""
    width = max(len("HOST"), *(len(a.dest) for a in answers))
    rows = [f"{'HOST':<{width}} {LIST_HEADER}"]
    for a in answers:
        servers = a.result["servers"] if a.error is None else []
        if a.error is not None or not servers:
            state, text = ("error", str(a.error)) if a.error is not None else ("-", NO_SERVERS)
            rows.append(f"{a.dest:<{width}} {'-':<20} {state:<13} {text}")
        rows += [f"{a.dest:<{width}} {_list_row(s)}" for s in servers]
    return "\n".join(rows)


async def list_servers(target: HostTarget) -> dict:
    """The ``servers list --json`` object of one host."""
    session = await open_session(target)
    try:
        return {"schema": LIST_SCHEMA, "servers": redact_server_records(await ServerControl(session).list())}
    finally:
        await session.close()


def _cancelled(result: dict) -> str:
    """``; benchmark run R cancelled (interrupted)`` when a stop with --stop-benchmark cut runs short."""
    runs = result.get("benchmarks_cancelled") or []
    if not runs:
        return ""
    return f"; benchmark run{'s' if len(runs) > 1 else ''} {', '.join(runs)} cancelled (interrupted)"


def _ended_badly(server: dict) -> str | None:
    if server["state"] in DOWN_STATES:
        tail = "\n".join("  " + l for l in (server.get("log_tail") or [])[-15:])
        return f"{server['name']} {server['state']}: {server.get('reason')}" + (f"\nlast log lines:\n{tail}" if tail else "")
    if server.get("timed_out"):
        return f"{server['name']} is still {server['state']} after the timeout"
    if server["state"] == ServerState.STOPPED:  # another console stopped (or switched away from) it meanwhile
        return f"{server['name']} was stopped before it was ready" + (f": {server['reason']}" if server.get("reason")
                                                                      else "")
    return None


def _print_stop_results(results: list[dict], refused: list[AgentCallError], as_json: bool) -> None:
    if as_json:
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


def _show(lines: list[str], as_json: bool) -> None:
    """A plan for the operator: on stdout, or on stderr when stdout carries JSON."""
    stream = sys.stderr if as_json else sys.stdout
    print(for_stream("\n".join(lines), stream), file=stream)
    stream.flush()


def _unconfirmed(name: str, answer: str, what: str, how: str) -> int:
    """The refusal when the operator did not confirm signalling a server spectui did not start."""
    if answer == DECLINED:
        print(f"spectui: {visible(name)} was not {what}: not confirmed", file=sys.stderr)
    else:
        print(f"spectui: {visible(name)} was not {what}: spectui did not start it, so this needs a confirmation; "
              f"run the command on a terminal and answer the question, or add {how} once the processes above "
              "are the ones to signal", file=sys.stderr)
    return 1


async def _confirmed_plan(ctl: ServerControl, name: str, args: argparse.Namespace, *, verb: str,
                          what: str) -> list[list[int]] | None:
    """Show the stop plan of ``name``, ask, and return the confirmed ``[[pid, start_ticks], ...]``
    (None: refused or declined, the sentence already printed)."""
    plan = await ctl.plan_stop(name)
    _show(plan_lines(plan, grace_s=getattr(args, "grace", STOP_GRACE_S), verb=verb), args.json)
    if not plan.get("allowed", True):
        print(f"spectui: {visible(name)} was not {what}: {visible(str(plan.get('why_not')))}", file=sys.stderr)
        return None
    confirmed = confirmed_processes(plan)
    question = f"{'Stop' if verb == 'Stopping' else 'Adopt'} these {count(len(confirmed), 'process')}? [y/N]"
    answer = ask(question, yes=args.yes)
    if answer != CONFIRMED:
        _unconfirmed(name, answer, what, "--yes")
        return None
    return confirmed


async def _listing(ctl: ServerControl) -> list[dict]:
    """``servers.list``'s servers; the sentences of the records the agent ignored (another user's) go to stderr."""
    answer = await ctl.session.client.call(Method.SERVERS_LIST, timeout=30)
    for sentence in answer.get("ignored") or []:
        print(for_stream(f"spectui: {sentence}", sys.stderr), file=sys.stderr)
    return answer["servers"]


async def _stop(ctl: ServerControl, args: argparse.Namespace, progress: Progress) -> int:
    servers = await _listing(ctl)
    by_name = {s["name"]: s for s in servers}
    if args.profile:
        names = [args.profile]
    else:  # spectui's own and adopted servers; one it did not start is stopped only by name
        names = [s["name"] for s in servers if s["state"] != ServerState.STOPPED and not is_external(s)]
        for s in servers:
            if is_external(s) and s["state"] not in FINAL_STATES:
                print(f"note: {visible(s['name'])} was left running: spectui did not start it (stop it by name: "
                      f"spectui servers stop {visible(s['name'])})", file=sys.stderr)
    results = []
    refused: list[AgentCallError] = []  # servers a live benchmark run measures: the others still stop
    for name in names:
        confirmed = None
        if name in by_name and is_external(by_name[name]):
            confirmed = await _confirmed_plan(ctl, name, args, verb="Stopping", what="stopped")
            if confirmed is None:
                return 1
        progress.only.add(name)
        progress.show(f"{name}: stopping")
        try:
            results.append(await ctl.stop(name, grace_s=args.grace, stop_benchmark=args.stop_benchmark,
                                          confirmed=confirmed))
        except AgentCallError as exc:
            if exc.code != SERVER_BENCHMARKED or args.profile:
                progress.done()  # the error's sentence on a line of its own
                raise
            refused.append(exc)
    progress.done()
    _print_stop_results(results, refused, args.json)
    return 1 if refused else 0


async def _adopt(ctl: ServerControl, args: argparse.Namespace) -> int:
    view = {s["name"]: s for s in await ctl.list()}.get(args.profile)
    if view is not None and not is_external(view):
        print(f"spectui: {visible(args.profile)} is already spectui's own ({origin(view)}); nothing to adopt",
              file=sys.stderr)
        return 1
    confirmed = await _confirmed_plan(ctl, args.profile, args, verb="Adopting", what="adopted")
    if confirmed is None:
        return 1
    result = await ctl.adopt(args.profile, confirmed=confirmed, as_name=args.as_name)
    if args.json:
        print(json.dumps(redact_server_records(result), indent=2))
    else:
        print(f"{visible(args.profile)}: adopted as {visible(result['name'])}; spectui now stops, switches and "
              "watches it like a server it started")
    return 0


async def _external_holders(ctl: ServerControl, profile, args: argparse.Namespace) -> list[list[int]] | None:
    """Before a switch: the servers spectui did not start that hold the profile's port or GPUs, shown and
    confirmed. ``[]`` when there are none; the confirmed processes; None when refused (sentence printed)."""
    plan = await ctl.plan_switch(profile, force=args.force, grace_s=args.grace, timeout_s=args.timeout,
                                 stop_benchmark=args.stop_benchmark)
    external = [s for s in plan.get("stops") or [] if is_external(s)]
    if not external:
        return []
    _show(["spectui did not start " + ("this server" if len(external) == 1 else "these servers")
           + f", which hold what {profile.name} needs:"] + holder_lines(external), args.json)
    blocked = [s for s in external if not s.get("allowed", True)]
    if blocked:
        for s in blocked:
            print(f"spectui: {profile.name} was not started: {visible(str(s['name']))} holds "
                  f"{visible(str(s.get('holds')))} and {visible(str(s.get('why_not')))}", file=sys.stderr)
        return None
    confirmed = [p for s in external for p in confirmed_processes(s)]
    question = (f"Stop {count(len(external), 'server')} ({count(len(confirmed), 'process')}) to start "
                f"{profile.name}? [y/N]")
    answer = ask(question, yes=args.yes)
    if answer == CONFIRMED:
        return confirmed
    names = ", ".join(visible(str(s["name"])) for s in external)
    if answer == DECLINED:
        print(f"spectui: {profile.name} was not started: stopping {names} was not confirmed", file=sys.stderr)
    else:
        print(f"spectui: {profile.name} was not started: {names} hold{'s' if len(external) == 1 else ''} its port "
              "or GPUs and spectui did not start "
              + ("it" if len(external) == 1 else "them") + "; run the command on a terminal to confirm stopping "
              + ("it" if len(external) == 1 else "them")
              + ", add --stop-external (or --yes), or use another port", file=sys.stderr)
    return None


async def _run(args: argparse.Namespace, target: HostTarget) -> int:
    library = None
    if getattr(args, "profile", None) and args.action in ("start", "switch"):
        library = demo_profiles(args, load_profiles(args.profiles))
        profile = library.get(args.profile)  # ProfileError: no such profile, with close names
        broken = [e for e in library.errors if e.profile == profile.name or e.path == profile.source]
        if broken:
            raise broken[0]
    session = await open_session(target)
    try:
        ctl = ServerControl(session)
        progress = Progress()
        # progress of what this command does, never of other servers on the host: a start's or switch's
        # stages, a stop's servers once stopping
        if args.action == "stop":
            progress.only = set()
        elif args.action in ("start", "switch"):
            progress.only = {profile.name}
        if not getattr(args, "json", False) and args.action in ("start", "switch", "stop"):
            ctl.on_events(progress.on_event)
        if args.action == "list":
            servers = await _listing(ctl)
            print(json.dumps({"schema": LIST_SCHEMA, "servers": redact_server_records(servers)}, indent=2)
                  if args.json
                  else for_stream(render_list(servers), sys.stdout))
            return 0
        if args.action == "describe":
            view = {s["name"]: s for s in await ctl.list()}.get(args.profile)
            if view is None:
                print(f"spectui: no server named {visible(args.profile)} on this host; 'spectui servers list' "
                      "shows the names", file=sys.stderr)
                return 1
            print(json.dumps({"schema": "spectui.server/1", "server": redact_server_records(view)}, indent=2)
                  if args.json
                  else for_stream("\n".join(describe(view)), sys.stdout))
            return 0
        if args.action == "logs":
            return await _logs(ctl, args)
        if args.action == "stop":
            return await _stop(ctl, args, progress)
        if args.action == "adopt":
            return await _adopt(ctl, args)
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
            stop_external = await _external_holders(ctl, profile, args)
            if stop_external is None:
                return 1
            result = await ctl.switch(profile, force=args.force, grace_s=args.grace, timeout_s=args.timeout,
                                      stop_benchmark=args.stop_benchmark, stop_external=stop_external)
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
    lines = args.lines
    if lines > MAX_LOG_LINES:
        print(f"spectui: --lines is at most {MAX_LOG_LINES}; showing the last {MAX_LOG_LINES} at most",
              file=sys.stderr)
        lines = MAX_LOG_LINES
    r = await ctl.logs(args.profile, lines=lines)
    for line in r["lines"]:
        print(shown(line))
    sys.stdout.flush()
    if r.get("capped"):
        print(for_stream(f"spectui: {r['capped']}", sys.stderr), file=sys.stderr)
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


def _nodes_profile(args: argparse.Namespace) -> Profile | None:
    """The multi-node profile a start or stop names, on hosts reached over SSH (the one demo host has no nodes)."""
    if args.action not in ("start", "stop") or not getattr(args, "profile", None) or getattr(args, "demo", False):
        return None
    library = load_profiles(args.profiles)
    profile = library.profiles.get(args.profile)
    if profile is None or not profile.nodes:
        return None
    broken = [e for e in library.errors if e.profile == profile.name or e.path == profile.source]
    if broken:
        raise broken[0]
    return profile


def run(args: argparse.Namespace) -> int:
    if args.action == "list" and len(destinations_of(args)) > 1:
        answers = ask_hosts(destinations_of(args), targets_from_args(args), list_servers, host_limit_s(args))
        return print_answers(args, answers, schema=LIST_SCHEMA, hosts_schema=HOSTS_LIST_SCHEMA,
                             render=render_hosts_list, command=["servers", "list"])
    try:
        profile = _nodes_profile(args)
        if profile is not None:   # every node's host at once
            fn = start_nodes if args.action == "start" else stop_nodes
            return run_on_nodes(node_targets(args, profile), lambda targets: fn(args, profile, targets))
        target = target_from_args(args)
        return run_with_passphrase_prompt(target, lambda t: _run(args, t))
    except NodeHostError as exc:
        print(f"spectui: {exc}", file=sys.stderr)
        return 1
    except ProfileError as exc:
        print(f"spectui: {exc}", file=sys.stderr)
        return 1
    except SpectuiError as exc:
        print("spectui: " + explain_connect_error(exc, args.argv),
              file=sys.stderr)
        return 1
