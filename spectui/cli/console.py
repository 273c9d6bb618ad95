"""``spectui connect DEST`` and ``spectui demo``: the console (a Textual app)."""

from __future__ import annotations

import argparse
import sys

from spectui.cli.hostopts import add_host_options, target_from_args
from spectui.core.profiles import load_profiles
from spectui.core.session import HostTarget


def _console_options(p: argparse.ArgumentParser) -> None:
    c = p.add_argument_group("console")
    c.add_argument("--profiles", metavar="PATH", action="append",
                   help="extra profile file or folder (repeatable)")
    c.add_argument("--telemetry-hz", metavar="HZ", type=float, default=1.0,
                   help="GPU telemetry rate (default 1, at most 10; 0 turns telemetry off)")


def register(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("connect", help="open the console on a GPU host over SSH",
                       description="Open the console on a host: live GPU, accept-length and throughput panels, "
                                   "and keyboard-driven switching between server profiles.")
    add_host_options(c, positional=True)
    _console_options(c)
    c.set_defaults(func=run, console="connect")

    d = sub.add_parser("demo", help="open the console on the built-in simulated 8-GPU host",
                       description="Open the console on a simulated 8-GPU host (no GPU needed). Quitting stops "
                                   "the simulated servers unless --keep is given.")
    d.add_argument("--keep", action="store_true", help="leave the simulated servers running when quitting")
    d.add_argument("--state-dir", metavar="DIR", help="the simulated host's state folder")
    d.add_argument("--no-traffic", action="store_true", help="start without the demo's light background load")
    _console_options(d)
    d.set_defaults(func=run, console="demo")


def build_target(args: argparse.Namespace) -> HostTarget:
    if args.console == "demo":
        return HostTarget.demo(args.state_dir)
    return target_from_args(args)


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.telemetry_hz <= 10:
        print(f"spectui: --telemetry-hz must be between 0 and 10, not {args.telemetry_hz:g}.", file=sys.stderr)
        return 2
    if not sys.stdout.isatty() or not sys.stdin.isatty():
        print("spectui: the console needs a terminal; for scripts use `spectui status` and `spectui servers`.",
              file=sys.stderr)
        return 2
    from spectui.ui.app import SpectuiApp  # Textual loads only for the console

    library = load_profiles(args.profiles)
    target = build_target(args)
    app = SpectuiApp(target, library=library, keep=getattr(args, "keep", False), telemetry_hz=args.telemetry_hz,
                     traffic=not getattr(args, "no_traffic", False))
    app.run()
    if app.exit_note:
        print(app.exit_note)
    return app.return_code or 0
