"""``spectui connect [DEST]`` and ``spectui demo``: the console (a Textual app).

The settings file supplies what the command line leaves out: the host (``default_host``), the SSH
options, the telemetry rate, the theme and the keymap (:mod:`spectui.core.settings`).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from spectui.cli.hostopts import (add_host_options, command_line, demo_ports, destinations_of, host_option_words,
                                  host_settings, host_words, target_from_args, targets_from_args)
from spectui.core.paths import demo_state_dir
from spectui.core.settings import TELEMETRY_HZ_MAX, Settings
from spectui.core.textsafe import shortened_lines

if TYPE_CHECKING:
    from spectui.core.demo_ports import DemoPorts
    from spectui.core.session import HostTarget

# The profiles, the demo's ports and the session load in run(), after this host's agent has started (a demo's
# starts first of all): registering the commands' options loads none of them.

TELEMETRY_HZ_DEFAULT = 1.0
MAX_DEMO_HOSTS = 8
HOST_PORT_STRIDE = 1000   # demo host i's servers listen 1000 * (i - 1) above the first host's
SCENARIOS = ("steady", "shift")   # the demo traffic's (spectui.agent.bench.traffic)
SHIFT_AFTER_DEFAULT_S = 120.0
SHIFT_AFTER_RANGE = (5.0, 3600.0)


def _writable_here(path: str) -> bool:
    """--record FILE: a folder that exists, and a FILE that is not a folder; else one sentence."""
    p = Path(path).expanduser()
    if p.is_dir():
        print(f"spectui: --record {path} is a folder; give a file name, such as {p / 'session.spectui.gz'}.",
              file=sys.stderr)
        return False
    if os.path.lexists(p):   # a link too, even one that points nowhere: a recording never writes through one
        print(f"spectui: --record {path} exists; give another file name (a recording is never overwritten).",
              file=sys.stderr)
        return False
    if not p.parent.is_dir():
        print(f"spectui: --record {path}: the folder {p.parent} does not exist.", file=sys.stderr)
        return False
    return True


def _console_options(p: argparse.ArgumentParser) -> None:
    c = p.add_argument_group("console")
    c.add_argument("--profiles", metavar="PATH", action="append",
                   help="extra profile file or folder (repeatable)")
    c.add_argument("--telemetry-hz", metavar="HZ", type=float,
                   help=f"GPU telemetry rate (default {TELEMETRY_HZ_DEFAULT:g} or telemetry_hz from the settings "
                        f"file, at most {TELEMETRY_HZ_MAX:g}; 0 turns telemetry off)")
    c.add_argument("--record", metavar="FILE",
                   help="record the session to FILE from the start (ctrl+r starts and stops recording in the "
                        "console); spectui replay FILE plays it")


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("connect", help="open the console on GPU hosts over SSH",
                       description="Open the console on a host: live GPU, accept-length and throughput panels, "
                                   "and keyboard-driven switching between server profiles. With several DESTs, "
                                   "one console over all of them: the hosts overview first (H), each host its own "
                                   "connection, < and > between dashboards. Without DEST it connects to hosts, "
                                   "else default_host, from the settings file.")
    add_host_options(c, positional=True, multi=True)
    _console_options(c)
    c.set_defaults(func=run, console="connect")

    d = sub.add_parser("demo", help="open the console on the built-in simulated 8-GPU host",
                       description="Open the console on a simulated 8-GPU host (no GPU needed). Quitting stops "
                                   "the simulated servers unless --keep is given.")
    d.add_argument("--keep", action="store_true", help="leave the simulated servers running when quitting")
    d.add_argument("--state-dir", metavar="DIR", help="the simulated host's state folder")
    d.add_argument("--no-traffic", action="store_true", help="start without the demo's light background load")
    d.add_argument("--hosts", metavar="N", type=int, default=1,
                   help=f"simulate N hosts (1 to {MAX_DEMO_HOSTS}), each with its own 8 GPUs, state folder and ports; "
                        "the console opens on the overview of all of them")
    d.add_argument("--scenario", choices=SCENARIOS, default="steady",
                   help="the demo traffic's workload: steady (varied chat), or shift (a recurring job n-gram "
                        "speculation thrives on, turning into varied chat after --shift-after seconds, so its "
                        "acceptance collapses and the alerts fire)")
    d.add_argument("--shift-after", metavar="S", type=float, default=SHIFT_AFTER_DEFAULT_S,
                   help=f"seconds of the recurring job before the shift scenario's change (default "
                        f"{SHIFT_AFTER_DEFAULT_S:g})")
    d.add_argument("--port-base", metavar="N", type=int,
                   help="the simulated servers listen on N, N+1, ... (default: demo.port_base from the settings "
                        "file, else the profiles' own ports, a taken one moved to a free one)")
    _console_options(d)
    d.set_defaults(func=run, console="demo")

    r = sub.add_parser("replay", help="play a recorded session in the console (read-only)",
                       description="Open the console on a recording (spectui connect|demo --record FILE, or "
                                   "ctrl+r in the console): every panel and screen as it was, read-only. Keys: "
                                   "space plays or pauses, left/right seek 10 s (shift: a minute), [ and ] change "
                                   "the speed, home/end go to the start or the end.")
    r.add_argument("file", metavar="FILE")
    r.add_argument("--speed", metavar="X", type=float, default=1.0, help="play at X times (1 to 60; default 1)")
    r.add_argument("--from", dest="start", metavar="S", type=float,
                   help="start S seconds into the recording (default: where its first session opened)")
    r.set_defaults(func=run_replay)


def demo_hosts(args: argparse.Namespace, settings: Settings, library, first: DemoPorts):
    """``spectui demo --hosts N``: N simulated hosts, each with its own state folder (the first the demo's, then
    ``DIR-2``, ``DIR-3``, ...) and its servers on ports of its own, (target, profiles) each."""
    from spectui.core.demo_ports import plan_demo_ports
    from spectui.core.session import HostTarget

    state = args.state_dir or demo_state_dir()
    base = args.port_base if args.port_base is not None else settings.demo_port_base
    if base is None:
        base = min((p.port for p in library), default=30000)
    hosts = [(HostTarget.demo(state, ports=first, name="demo-1"), first.apply(library))]
    for i in range(2, args.hosts + 1):
        host_state = f"{state}-{i}"
        ports = plan_demo_ports(library, base=base + HOST_PORT_STRIDE * (i - 1),
                                base_from=f"demo host {i}'s ports", state_dir=host_state)
        hosts.append((HostTarget.demo(host_state, ports=ports, name=f"demo-{i}"), ports.apply(library)))
    return hosts


def telemetry_hz(args: argparse.Namespace, settings: Settings) -> float:
    """--telemetry-hz, else the settings' telemetry_hz, else the default."""
    if args.telemetry_hz is not None:
        return args.telemetry_hz
    return settings.telemetry_hz if settings.telemetry_hz is not None else TELEMETRY_HZ_DEFAULT


def missing_host(args: argparse.Namespace, settings: Settings) -> str | None:
    """The sentence for ``spectui connect`` with neither DEST nor a default_host; None when there is a host."""
    if args.console != "connect" or args.destination or settings.default_host or settings.hosts:
        return None
    return (f"spectui connect needs DEST ([user@]host[:port] or an SSH config alias), or default_host or hosts in "
            f"{settings.path}.")


def connect_destinations(args: argparse.Namespace, settings: Settings) -> list[str]:
    """The hosts of ``spectui connect``: those given, else the settings' hosts, else its default_host."""
    given = destinations_of(args)
    if given:
        return given
    return list(settings.hosts) or ([settings.default_host] if settings.default_host else [])


def build_target(args: argparse.Namespace, settings: Settings | None = None,
                 ports: DemoPorts | None = None) -> HostTarget:
    from spectui.core.session import HostTarget

    if args.console == "demo":
        return HostTarget.demo(args.state_dir, ports=ports)
    if not args.destination and settings is not None:
        args.destination = (connect_destinations(args, settings) or [None])[0]
    return target_from_args(args)


def again_commands(args: argparse.Namespace):
    """The commands the console's quit note suggests (``spectui.ui.again.AgainCommands``), each repeating every
    option given on this command line: the host, SSH and console options, and the demo's own."""
    from spectui.ui.again import AgainCommands

    if args.console == "demo":
        words = ["spectui", "demo"]
        words += ["--keep"] if args.keep else []
        words += ["--state-dir", args.state_dir] if args.state_dir else []
        words += ["--no-traffic"] if args.no_traffic else []
        words += ["--port-base", str(args.port_base)] if args.port_base is not None else []
        words += ["--hosts", str(args.hosts)] if args.hosts != 1 else []
        if args.scenario != "steady":
            words += ["--scenario", args.scenario, "--shift-after", f"{args.shift_after:g}"]
    else:
        words = ["spectui", "connect", *destinations_of(args), *host_option_words(args)]
    for path in args.profiles or []:
        words += ["--profiles", path]
    if args.telemetry_hz is not None:
        words += ["--telemetry-hz", f"{args.telemetry_hz:g}"]
    return AgainCommands(command_line(words), command_line(host_words(args)))


def run(args: argparse.Namespace) -> int:
    # the start allocates much and frees little: the collector waits until the first frame (SpectuiApp.on_ready)
    gc.disable()
    settings = host_settings(args, report=False)  # the console shows the settings' problems itself
    hz = telemetry_hz(args, settings)
    if not 0 <= hz <= TELEMETRY_HZ_MAX:
        print(f"spectui: --telemetry-hz must be between 0 and {TELEMETRY_HZ_MAX:g}, not {hz:g}.", file=sys.stderr)
        return 2
    scenario = None
    if args.console == "demo" and args.scenario != "steady":
        if not SHIFT_AFTER_RANGE[0] <= args.shift_after <= SHIFT_AFTER_RANGE[1]:
            print(f"spectui demo: --shift-after must be between {SHIFT_AFTER_RANGE[0]:g} and "
                  f"{SHIFT_AFTER_RANGE[1]:g} seconds, not {args.shift_after:g}.", file=sys.stderr)
            return 2
        scenario = {"scenario": args.scenario, "shift_after_s": args.shift_after}
    if args.record and not _writable_here(args.record):
        return 2
    no_host = missing_host(args, settings)
    if no_host:
        print(f"spectui: {no_host}", file=sys.stderr)
        return 2
    if args.console == "demo" and not 1 <= args.hosts <= MAX_DEMO_HOSTS:
        print(f"spectui demo: --hosts must be from 1 to {MAX_DEMO_HOSTS}, not {args.hosts}.", file=sys.stderr)
        return 2
    terminal = sys.stdout.isatty() and sys.stdin.isatty()
    from spectui.core.session import start_agent_early

    if terminal and args.console == "demo" and args.hosts == 1:
        # the demo host's agent starts first of all, while the console loads its profiles and its code (the first
        # frame waits for whichever is later); one that goes unused (a refusal below) is stopped at exit
        start_agent_early(build_target(args))
    from spectui.core.demo_ports import DemoPortError
    from spectui.core.profiles import load_profiles

    library = load_profiles(args.profiles)
    ports = None
    hosts = None
    if args.console == "demo":
        try:
            ports = demo_ports(args, settings, library)
            if args.hosts > 1:
                hosts = demo_hosts(args, settings, library, ports)
        except DemoPortError as exc:
            print(f"spectui demo: {exc}", file=sys.stderr)
            return 2
        library = ports.apply(library)
    if not terminal:
        print("spectui: the console needs a terminal; for scripts use `spectui status` and `spectui servers`.",
              file=sys.stderr)
        return 2
    target = build_target(args, settings, ports)
    if args.console == "connect" and len(connect_destinations(args, settings)) > 1:
        hosts = [(t, library) for t in targets_from_args(args, connect_destinations(args, settings))]
    for host_target in [t for t, _ in hosts] if hosts else [target]:
        start_agent_early(host_target)  # this machine's agents start while the console loads
    from spectui.ui.app import SpectuiApp  # Textual loads only for the console

    app = SpectuiApp(target, library=library, keep=getattr(args, "keep", False), telemetry_hz=hz,
                     traffic=not getattr(args, "no_traffic", False), settings=settings, again=again_commands(args),
                     record=args.record, traffic_scenario=scenario, hosts=hosts)
    app.run()
    if app.exit_note:  # it may quote what the host said: each line cut to a readable length
        print(shortened_lines(app.exit_note), file=sys.stderr)
    return app.return_code or 0


def run_replay(args: argparse.Namespace) -> int:
    from spectui.core.recording import RecordingError, read_recording
    from spectui.core.replay import ReplayLink

    try:
        recording = read_recording(args.file)
        replay = ReplayLink(recording, speed=args.speed)
        replay.check_playable()
    except RecordingError as exc:
        print(f"spectui: {exc}.", file=sys.stderr)  # shown, not obeyed, on a terminal (spectui.cli.output)
        return 1
    except ValueError as exc:
        print(f"spectui: {exc}.", file=sys.stderr)
        return 2
    if args.start is not None and not 0 <= args.start <= recording.duration_s:
        print(f"spectui: --from {args.start:g} is outside the recording (0 to {recording.duration_s:.0f} s).",
              file=sys.stderr)
        return 2
    if recording.truncated:
        print(f"spectui: {args.file} ends mid-write (the recording was cut off); it plays up to its last flush.",
              file=sys.stderr)
    if not sys.stdout.isatty() or not sys.stdin.isatty():
        print("spectui: the console needs a terminal; `spectui recording info|export` reads a recording in "
              "scripts.", file=sys.stderr)
        return 2
    from spectui.ui.app import SpectuiApp

    settings = host_settings(args, report=False)  # the theme, the keymap (the console shows the problems)
    app = SpectuiApp(replay.target, replay=replay, replay_from_s=args.start, settings=settings, traffic=False)
    app.run()
    return app.return_code or 0
