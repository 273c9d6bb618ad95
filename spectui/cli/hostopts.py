"""The options every host-facing command shares: where the host is and how to reach it.

The SSH options default to the ``ssh:`` section of the settings file (:mod:`spectui.core.settings`);
what the command line gives wins.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from typing import TYPE_CHECKING

from spectui.agent.protocol import GPU_SOURCES
from spectui.core.errors import HostKeyUnknown, KeyPassphraseNeeded
from spectui.core.paths import demo_state_dir

# Registering a command's options loads none of these: each is imported by the function that uses it.
if TYPE_CHECKING:
    from spectui.core.demo_ports import DemoPorts
    from spectui.core.profiles import ProfileLibrary
    from spectui.core.session import HostTarget
    from spectui.core.settings import Settings
    from spectui.core.transport.ssh import SshOptions

CONNECT_TIMEOUT_S = 15.0


class _Destinations(argparse.Action):
    """Collects every DEST in ``destinations`` and keeps the first in ``destination``."""

    def __call__(self, parser, namespace, values, option_string=None):
        dests = list(getattr(namespace, self.dest, None) or []) if option_string else []
        dests += values if isinstance(values, list) else [values]
        setattr(namespace, self.dest, dests)
        namespace.destination = dests[0] if dests else None


def add_host_options(parser: argparse.ArgumentParser, *, positional: bool = False, required: bool = True,
                     multi: bool = False) -> None:
    """The host and SSH options; with ``multi``, DEST may be given several times (``args.destinations``,
    the first also in ``args.destination``)."""
    where = parser.add_argument_group("host")
    if positional and multi:
        parser.set_defaults(destination=None)
        where.add_argument("destinations", metavar="DEST", nargs="*", action=_Destinations, default=[],
                           help="[user@]host[:port] or an SSH config alias, one or more (default: default_host "
                                "from the settings file)")
    elif positional:
        where.add_argument("destination", metavar="DEST", nargs="?",
                           help="[user@]host[:port] or an SSH config alias (default: default_host from the "
                                "settings file)")
    else:
        x = where.add_mutually_exclusive_group(required=required)
        if multi:
            parser.set_defaults(destination=None)
            x.add_argument("-H", "--host", dest="destinations", metavar="DEST", action=_Destinations,
                           help="[user@]host[:port] or an SSH config alias ('local' for this machine); repeat it "
                                "for several hosts")
        else:
            x.add_argument("-H", "--host", dest="destination", metavar="DEST",
                           help="[user@]host[:port] or an SSH config alias ('local' for this machine)")
        x.add_argument("--demo", action="store_true", help="use the built-in simulated GPU host")
        where.add_argument("--port-base", metavar="N", type=int,
                           help="with --demo: the simulated servers listen on N, N+1, ... (default: demo.port_base "
                                "from the settings file, else the profiles' ports, a taken one moved up)")
    where.add_argument("--python", metavar="PY", help="the host's Python, e.g. an SGLang venv: it runs the agent, "
                       "and the servers of profiles that name no python (default: python3)")
    where.add_argument("--sim", action="store_true", help="treat the host as a simulated GPU host")
    where.add_argument("--state-dir", metavar="DIR", help="the host's state folder (default: ~/.cache/spectui)")
    where.add_argument("--gpu-source", choices=GPU_SOURCES, default="auto", help="force a GPU telemetry source")
    ssh = parser.add_argument_group("ssh", "defaults: the ssh section of the settings file")
    ssh.add_argument("-F", dest="ssh_config", metavar="FILE", help="SSH config file (default: ~/.ssh/config)")
    ssh.add_argument("-i", dest="identity", metavar="KEY", action="append", default=[], help="identity file")
    ssh.add_argument("-p", dest="port", metavar="PORT", type=int, help="SSH port")
    ssh.add_argument("-J", dest="jump", metavar="JUMP", help="jump host, [user@]host[:port]")
    ssh.add_argument("--known-hosts", metavar="FILE",
                     help="known_hosts file to check and save keys in (default: UserKnownHostsFile from the SSH "
                          "config, else ~/.ssh/known_hosts; the global known_hosts files are read too)")
    ssh.add_argument("--accept-new-host-key", action="store_true",
                     help="trust and save the key of a host not yet in known_hosts (a changed key is always refused)")
    ssh.add_argument("--connect-timeout", metavar="S", type=float,
                     help=f"seconds to wait for the host (default: {CONNECT_TIMEOUT_S:g})")


def host_settings(args: argparse.Namespace, *, report: bool = True) -> Settings:
    """The settings file, read once per command; with ``report``, each problem in it is printed (not fatal)."""
    from spectui.core.settings import load_settings

    settings = getattr(args, "_settings", None)
    if settings is None:
        settings = load_settings()
        args._settings = settings
        if report:
            for e in settings.errors:
                print(f"spectui: {e} (ignored; the other settings apply)", file=sys.stderr)
    return settings


def demo_ports(args: argparse.Namespace, settings: Settings, library: ProfileLibrary) -> DemoPorts:
    """Where the demo's servers listen: --port-base, else the settings' demo.port_base, else the profiles'
    ports with taken ones moved; a port base that is out of range or in use raises DemoPortError."""
    from spectui.core.demo_ports import plan_demo_ports

    base, base_from = getattr(args, "port_base", None), "--port-base"
    if base is None and settings.demo_port_base is not None:
        base, base_from = settings.demo_port_base, f"demo.port_base in {settings.path}"
    return plan_demo_ports(library, base=base, base_from=base_from, state_dir=args.state_dir or demo_state_dir())


def demo_profiles(args: argparse.Namespace, library: ProfileLibrary) -> ProfileLibrary:
    """``library`` as the demo host serves it: with ``--demo``, each profile port that is taken on this machine
    moved as ``spectui demo`` moves it (:func:`demo_ports`), saying so on stderr; else unchanged."""
    if not getattr(args, "demo", False):
        return library
    ports = demo_ports(args, host_settings(args), library)
    if ports.note:
        print(f"spectui: {ports.note}", file=sys.stderr)
    return ports.apply(library)


def ssh_options(args: argparse.Namespace, settings: Settings) -> SshOptions:
    """The SSH options: each from the command line when given, else from the settings, else the default."""
    from spectui.core.transport.ssh import SshOptions

    d = settings.ssh
    timeout = args.connect_timeout if args.connect_timeout is not None else d.connect_timeout
    return SshOptions(
        config_file=args.ssh_config or d.config_file,
        identity_files=list(args.identity) or list(d.identity_files),
        port=args.port if args.port is not None else d.port,
        jump=args.jump or d.jump,
        known_hosts=args.known_hosts or d.known_hosts,
        accept_new_host_key=bool(args.accept_new_host_key or d.accept_new_host_key),
        connect_timeout=timeout if timeout is not None else CONNECT_TIMEOUT_S,
    )


def has_host(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "demo", False) or getattr(args, "destination", None))


def target_from_args(args: argparse.Namespace) -> HostTarget:
    from spectui.core.session import HostTarget

    if getattr(args, "demo", False):
        t = HostTarget.demo(args.state_dir)
        t.gpu_source = args.gpu_source
        if args.python:
            t.python = args.python
        return t
    return _target_for(args, args.destination)


def destinations_of(args: argparse.Namespace) -> list[str]:
    """Every DEST given, in order: ``args.destinations`` (a multi-host command) else ``args.destination``."""
    dests = getattr(args, "destinations", None)
    if dests:
        return list(dests)
    return [args.destination] if getattr(args, "destination", None) else []


def targets_from_args(args: argparse.Namespace, destinations: list[str] | None = None) -> list[HostTarget]:
    """One target per DEST (``destinations`` when given, e.g. the settings' hosts, else those on the command
    line), each with the same host and SSH options; with ``--demo``, the demo host alone."""
    if getattr(args, "demo", False):
        return [target_from_args(args)]
    return [_target_for(args, dest) for dest in (destinations if destinations is not None else destinations_of(args))]


def _target_for(args: argparse.Namespace, dest: str) -> HostTarget:
    from spectui.core.session import HostTarget

    if dest == "local":
        return HostTarget(kind="local", python=args.python, simulated=args.sim, state_dir=args.state_dir,
                          gpu_source=args.gpu_source)
    opts = ssh_options(args, host_settings(args))
    return HostTarget(kind="ssh", destination=dest, ssh=opts, python=args.python, simulated=args.sim,
                      state_dir=args.state_dir, gpu_source=args.gpu_source)


def host_option_words(args: argparse.Namespace) -> list[str]:
    """The host and SSH options of ``args`` that the user gave, as command-line words (``-F cfg --sim ...``):
    what a command suggested later repeats so that it reaches the host the same way."""
    words: list[str] = []
    for flag, dest in (("--python", "python"), ("--state-dir", "state_dir"), ("-F", "ssh_config"), ("-p", "port"),
                       ("-J", "jump"), ("--known-hosts", "known_hosts"), ("--connect-timeout", "connect_timeout")):
        value = getattr(args, dest, None)
        if value is not None:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    for key in getattr(args, "identity", None) or []:
        words += ["-i", key]
    if getattr(args, "sim", False):
        words.append("--sim")
    if getattr(args, "gpu_source", "auto") not in (None, "auto"):
        words += ["--gpu-source", args.gpu_source]
    if getattr(args, "accept_new_host_key", False):
        words.append("--accept-new-host-key")
    return words


def host_words(args: argparse.Namespace) -> list[str]:
    """``--demo`` or ``--host DEST``, then every host and SSH option given: the host part of a command line."""
    where = ["--demo"] if getattr(args, "demo", False) or getattr(args, "console", None) == "demo" else \
        ["--host", args.destination]
    return where + host_option_words(args)


def command_line(words: list[str]) -> str:
    """Words as one shell command line, each quoted where it needs it."""
    return " ".join(shlex.quote(w) for w in words)


def explain_connect_error(exc: Exception, argv: list[str]) -> str:
    """The error's sentence; for an unknown host key, plus the exact command that trusts it."""
    hint = trust_hint(exc, argv)
    return str(exc) + (f"\n{hint}" if hint else "")


def trust_hint(exc: Exception, argv: list[str]) -> str | None:
    """For an unknown host key, ``To trust it: spectui ARGV --accept-new-host-key``; else None."""
    if not isinstance(exc, HostKeyUnknown):
        return None
    cmd = ["spectui", *argv]
    if "--accept-new-host-key" not in cmd:
        cmd.append("--accept-new-host-key")
    return "To trust it: " + " ".join(shlex.quote(c) for c in cmd)


def refuse_on_problems(problems: list, closing: str) -> bool:
    """Print each problem of a profile check and the closing sentence; True when there were any."""
    for e in problems:
        print(f"spectui: {e}", file=sys.stderr)
    if problems:
        print(f"spectui: {closing}", file=sys.stderr)
    return bool(problems)


def run_with_passphrase_prompt(target: HostTarget, fn):
    """``asyncio.run(fn(target))``; an encrypted identity file asks for its passphrase on a terminal."""
    import asyncio
    import getpass

    try:
        return asyncio.run(fn(target))
    except KeyPassphraseNeeded:
        if target.kind != "ssh" or not sys.stdin.isatty():
            raise
        target.ssh.passphrase = getpass.getpass("Passphrase for your SSH key: ")
        return asyncio.run(fn(target))


def node_destination(node) -> str:
    """How the command line names a node's host: its SSH host, with its ``ssh-port``."""
    return f"{node.host}:{node.ssh_port}" if node.ssh_port else node.host


class NodeHostError(Exception):
    """--host is not one of a multi-node profile's nodes."""


def node_targets(args: argparse.Namespace, profile) -> list[HostTarget] | None:
    """A multi-node profile's hosts, rank 0 first: --host names any one of its nodes, and the others are reached
    with the same host and SSH options; None for a profile without nodes. NodeHostError when --host is none of
    them."""
    from spectui.core.profiles.multinode import is_node_host

    if profile is None or not profile.nodes:
        return None
    given = target_from_args(args)
    if given.kind != "ssh" or not any(is_node_host(node, given) for node in profile.nodes):
        names = ", ".join(node_destination(n) for n in profile.nodes)
        raise NodeHostError(f"{profile.name} runs on {len(profile.nodes)} nodes ({names}), and --host "
                            f"{args.destination} is not one of them: give one of them, and spectui reaches all of them")
    targets = []
    for node in profile.nodes:
        t = target_from_args(args) if is_node_host(node, given) else \
            dataclasses.replace(given, destination=node_destination(node), ssh=dataclasses.replace(given.ssh))
        targets.append(t)
    return targets


def run_on_nodes(targets: list[HostTarget], fn):
    """``fn(targets)`` with :func:`run_with_passphrase_prompt`: a passphrase asked for once serves every node."""
    def across(first: HostTarget):
        for t in targets[1:]:
            if t.ssh is not None and first.ssh is not None:
                t.ssh.passphrase = first.ssh.passphrase
        return fn([first, *targets[1:]])
    return run_with_passphrase_prompt(targets[0], across)


async def open_sessions(targets: list[HostTarget]) -> list:
    """A session on each of ``targets``, opened at once; when one fails, the others are closed and its error
    raised."""
    import asyncio

    from spectui.core.session import open_session

    opened = await asyncio.gather(*(open_session(t) for t in targets), return_exceptions=True)
    failed = [r for r in opened if isinstance(r, BaseException)]
    if failed:
        await asyncio.gather(*(s.close() for s in opened if not isinstance(s, BaseException)),
                             return_exceptions=True)
        raise failed[0]
    return list(opened)
