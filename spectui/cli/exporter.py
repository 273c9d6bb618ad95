"""``spectui exporter``: live Prometheus metrics of one or several hosts on ``/metrics`` (docs/exporter.md).

The hosts are chosen as ``spectui connect`` chooses them (DESTs, else the settings' hosts, else default_host), or
``--demo`` (``--hosts N``: N simulated hosts, as ``spectui demo --hosts N``). prometheus_client is imported only
when the command runs.
"""

from __future__ import annotations

import argparse
import sys

from spectui.cli.hostopts import add_host_options, explain_connect_error, host_settings, targets_from_args
from spectui.core.exporter import DEFAULT_PORT

FIRST_CONNECTION_S = 120.0   # the demo starts its agent and may compile nothing; an SSH host answers well within


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("exporter", help="serve live Prometheus metrics of GPU hosts and their SGLang servers",
                       description="Watch one or several hosts as the console does (server frames, GPU telemetry, "
                                   "break-even L*, alerts) and serve the figures on /metrics for Prometheus. Without "
                                   "DEST it watches hosts, else default_host, from the settings file. It listens on "
                                   f"127.0.0.1:{DEFAULT_PORT} unless --listen says otherwise. See docs/exporter.md.")
    add_host_options(p, positional=True, multi=True)
    p.add_argument("--listen", metavar="HOST:PORT", default=f"127.0.0.1:{DEFAULT_PORT}",
                   help=f"where /metrics is served (default 127.0.0.1:{DEFAULT_PORT}; port 0 takes a free one, "
                        "printed on start)")
    d = p.add_argument_group("demo")
    d.add_argument("--demo", action="store_true", help="watch the built-in simulated GPU host")
    d.add_argument("--hosts", metavar="N", type=int, default=1, help="with --demo: N simulated hosts, as spectui "
                                                                      "demo --hosts N")
    d.add_argument("--port-base", metavar="N", type=int, help="with --demo: the simulated servers listen on N, N+1, ...")
    d.add_argument("--no-traffic", action="store_true", help="with --demo: send no demo traffic (by default the "
                                                             "newest ready server gets the demo's light load)")
    p.add_argument("--profiles", metavar="PATH", action="append", help="extra profile file or folder (repeatable)")
    p.set_defaults(func=run)


def listen_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as (host, port); ValueError with one sentence."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen {text!r} is not HOST:PORT (for example 127.0.0.1:{DEFAULT_PORT})")
    return host, int(port)


def _hosts(args: argparse.Namespace):
    """(target, profiles) of each host to watch; ValueError with one sentence."""
    from spectui.cli.console import MAX_DEMO_HOSTS, connect_destinations, demo_hosts
    from spectui.cli.hostopts import demo_ports
    from spectui.core.demo_ports import DemoPortError
    from spectui.core.profiles import load_profiles
    from spectui.core.session import HostTarget

    settings = host_settings(args)
    library = load_profiles(args.profiles)
    if args.demo:
        if args.destinations:
            raise ValueError("give either --demo or DEST, not both")
        if not 1 <= args.hosts <= MAX_DEMO_HOSTS:
            raise ValueError(f"--hosts must be from 1 to {MAX_DEMO_HOSTS}, not {args.hosts}")
        try:
            ports = demo_ports(args, settings, library)
            if args.hosts > 1:
                return demo_hosts(args, settings, library, ports)
        except DemoPortError as exc:
            raise ValueError(str(exc).rstrip(".")) from None
        target = HostTarget.demo(args.state_dir, ports=ports)
        target.gpu_source = args.gpu_source
        return [(target, ports.apply(library))]
    if args.hosts != 1 or args.port_base is not None or args.no_traffic:
        raise ValueError("--hosts, --port-base and --no-traffic go with --demo")
    dests = connect_destinations(args, settings)
    if not dests:
        raise ValueError(f"spectui exporter needs DEST ([user@]host[:port] or an SSH config alias), --demo, or "
                         f"default_host or hosts in {settings.path}")
    return [(t, library) for t in targets_from_args(args, dests)]


def run(args: argparse.Namespace) -> int:
    try:
        address = listen_address(args.listen)
        hosts = _hosts(args)
    except ValueError as exc:
        print(f"spectui exporter: {exc}.", file=sys.stderr)
        return 2
    try:
        from prometheus_client import CollectorRegistry, start_http_server
    except ImportError:
        print("spectui exporter: the Python package prometheus-client is not installed: pip install "
              "prometheus-client.", file=sys.stderr)
        return 1
    import asyncio

    from spectui.core.exporter import Exporter, WatchedHost, collector
    from spectui.core.alerts import AlertEngine
    from spectui.core.errors import SpectuiError
    from spectui.core.live import HostLink

    settings = host_settings(args, report=False)
    watched = [WatchedHost(HostLink(target), library, AlertEngine(settings.alerts, host=target.label),
                           traffic=bool(args.demo and not args.no_traffic)) for target, library in hosts]
    exporter = Exporter(watched)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector(exporter))
    try:
        server, _thread = start_http_server(address[1], addr=address[0], registry=registry)
    except OSError as exc:
        why = "it is in use" if getattr(exc, "errno", None) in (98, 48) else (exc.strerror or str(exc))
        print(f"spectui exporter: cannot listen on {args.listen}: {why}; give another with --listen HOST:PORT.",
              file=sys.stderr)
        return 1
    host, port = server.server_address[:2]

    async def main() -> None:
        import signal

        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await exporter.start(FIRST_CONNECTION_S)
        print(f"spectui exporter: serving http://{host}:{port}/metrics for "
              f"{', '.join(h.label for h in watched)} (ctrl+c stops)", flush=True)
        try:
            await exporter.run(stop)
        finally:
            await exporter.close()

    try:
        asyncio.run(main())
    except (SpectuiError, OSError, TimeoutError) as exc:
        print("spectui exporter: " + explain_connect_error(exc, args.argv), file=sys.stderr)
        return 1
    finally:
        server.shutdown()
    return 0
