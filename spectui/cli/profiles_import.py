"""``spectui profiles import``: a profile from a launch command the operator already has.

The command comes as arguments (quoted, or after ``--``), from ``--file FILE``, or on stdin. The
profile goes to stdout, to ``--output FILE``, or with ``--save`` into the user's profiles folder;
an existing file is replaced only with ``--force``. Abbreviated flags are resolved against the
flag list of the host's SGLang (``--host DEST`` / ``--demo``), else of a local SGLang (the
``--python`` interpreter, default ``python3``), else kept as written; the notes say which.

The importer and the flag lists load when the command runs: the other ``profiles`` actions, which register
this one, do not load them.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from spectui.agent.protocol import FINAL_STATES, ServerState
from spectui.cli.hostopts import add_host_options, explain_connect_error, has_host, run_with_passphrase_prompt, target_from_args
from spectui.core.errors import SpectuiError
from spectui.core.profiles import user_profile_dir
from spectui.core.textsafe import visible

if TYPE_CHECKING:
    from spectui.core.profiles import FlagCache, FlagSet
    from spectui.core.profiles.importer import ImportedProfile

LOCAL_HELP_TIMEOUT_S = 240


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "import",
        help="make a profile from an SGLang launch command",
        description="Turn a launch command (python3 -m sglang.launch_server ..., sglang serve ..., with "
        "VAR=value, env, nohup or docker run around it) into a profile. Give the command quoted or after "
        "'--', with --file, on stdin, or take it from a running server with --from-running. Secrets (--api-key, HF_TOKEN and the like) are written as "
        "${VAR} references to the host's environment.",
    )
    parser.add_argument("command", nargs="*", metavar="WORD", help="the launch command (quote it, or put it after --)")
    parser.add_argument("-f", "--file", metavar="FILE", help="read the command from FILE ('-' for stdin)")
    parser.add_argument("--from-running", metavar="NAME|PID",
                        help="import the command of a server running on the host (--host DEST or --demo), named "
                             "as 'spectui servers list' shows it or by its leader pid")
    parser.add_argument("--name", help="the profile's name (default: from the model and the algorithm)")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("-o", "--output", metavar="FILE", help="write the profile to FILE")
    out.add_argument("--save", action="store_true", help=f"write it into {user_profile_dir()}")
    parser.add_argument("--force", action="store_true", help="replace an existing file")
    add_host_options(parser, required=False)
    parser.set_defaults(func=cmd_import)


def _fail(message: str) -> int:
    print("spectui: " + message, file=sys.stderr)
    return 1


def _read_text(args: argparse.Namespace) -> str:
    if args.file and args.command:
        raise SpectuiError("give the command either as words or with --file, not both")
    if args.file and args.file != "-":
        try:
            return Path(args.file).read_text(encoding="utf-8")
        except OSError as exc:
            raise SpectuiError(f"cannot read {args.file}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise SpectuiError(f"{args.file} is not UTF-8 text; save the command as plain text") from None
    if args.command:
        words = args.command
        return words[0] if len(words) == 1 else shlex.join(words)
    return sys.stdin.read()


# -- flag lists --------------------------------------------------------------------------------


def local_flagset(python: str, cache: FlagCache | None = None) -> tuple[FlagSet | None, str | None]:
    """The flags of the SGLang installed for ``python`` here (cached by version), or (None, None)."""
    from spectui.core.profiles import FlagCache, parse_help_flags
    from spectui.core.profiles.host_flags import SGLANG_LAUNCHER

    try:
        r = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('sglang'))"],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    version = r.stdout.strip()
    if r.returncode != 0 or not version:
        return None, None
    cache = cache or FlagCache()
    key = f"sglang-{version}@{python}"
    flagset = cache.get("local", key)
    if flagset is None:
        try:
            helped = subprocess.run([python, *SGLANG_LAUNCHER, "--help"], capture_output=True, text=True,
                                    timeout=LOCAL_HELP_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            return None, None
        flagset = parse_help_flags(helped.stdout)
        if not flagset:
            return None, None
        cache.put("local", key, flagset)
    return flagset, f"the local SGLang {version} ({python})"


async def host_flagset(target, cache: FlagCache | None = None) -> tuple[FlagSet, str]:
    """The flags of the launcher a profile would run on the host (the simulator's on a demo host)."""
    from spectui.core.profiles.host_flags import session_flagset
    from spectui.core.session import open_session

    session = await open_session(target)
    try:
        return await session_flagset(session, cache)
    finally:
        await session.close()


def _checked(imported: ImportedProfile) -> str:
    """The YAML text, after loading it back the way spectui will (a failure is a bug, said plainly)."""
    from spectui.core.profiles.host_flags import checked_yaml

    return checked_yaml(imported, "the imported profile does not load; please report this command")


def _write(path: Path, text: str, force: bool) -> None:
    if path.exists() and not force:
        raise SpectuiError(f"{path} already exists; pass --force to replace it, or --name to choose another name")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def find_running(servers: list[dict], wanted: str) -> dict:
    """The server ``wanted`` names: by name, else by its leader's pid."""
    for s in servers:
        if s.get("name") == wanted:
            return s
    if wanted.isdigit():
        for s in servers:
            if s.get("pid") == int(wanted):
                return s
    names = ", ".join(visible(str(s.get("name"))) for s in servers if s.get("state") != ServerState.STOPPED) or "none"
    raise SpectuiError(f"no server named {visible(wanted)}, and none whose leader pid is {visible(wanted)}, runs on "
                       f"the host (running: {names}); 'spectui servers list' shows them")


async def _from_running(target, args: argparse.Namespace) -> ImportedProfile:
    """The profile of the server ``--from-running`` names, its flags read with the host's SGLang parser."""
    from spectui.core.profiles.host_flags import server_python, session_flagset
    from spectui.core.profiles.importer import import_running_server
    from spectui.core.servers import ServerControl
    from spectui.core.session import open_session

    session = await open_session(target)
    try:
        view = find_running(await ServerControl(session).list(), args.from_running)
        if not view.get("argv") or view.get("state") in FINAL_STATES:
            raise SpectuiError(f"{visible(str(view.get('name')))} is {view.get('state')}; import a server that runs")
        flagset, source = await session_flagset(session, python=server_python(view))
        return import_running_server(view, flagset=flagset, flag_source=source, name=args.name,
                                     where=session.transport.destination)
    finally:
        await session.close()


def cmd_import(args: argparse.Namespace) -> int:
    from spectui.core.profiles.importer import import_launch_command
    from spectui.core.profiles.launch_command import LaunchCommandError

    try:
        if args.from_running:
            if args.command or args.file:
                raise SpectuiError("give either a launch command or --from-running, not both")
            if not has_host(args):
                raise SpectuiError("--from-running needs the host the server runs on: add --host DEST (or --demo)")
            try:
                imported = run_with_passphrase_prompt(target_from_args(args), lambda t: _from_running(t, args))
            except LaunchCommandError:
                raise
            except SpectuiError as exc:
                return _fail(explain_connect_error(exc, args.argv))
            return _finish(imported, args)
        text = _read_text(args)
        if has_host(args):
            try:
                flagset, source = run_with_passphrase_prompt(target_from_args(args), host_flagset)
            except SpectuiError as exc:
                return _fail(explain_connect_error(exc, args.argv))
        else:
            flagset, source = local_flagset(args.python or "python3")
        imported = import_launch_command(text, flagset=flagset, flag_source=source, name=args.name)
        return _finish(imported, args)
    except (LaunchCommandError, SpectuiError) as exc:
        return _fail(str(exc))


def _finish(imported: ImportedProfile, args: argparse.Namespace) -> int:
    """Write the profile where the options say (stdout, --output, --save), then its notes."""
    try:
        yaml_text = _checked(imported)
        if args.save:
            path = user_profile_dir() / f"{imported.name}.yaml"
        elif args.output:
            path = Path(args.output)
        else:
            sys.stdout.write(yaml_text)
            path = None
        if path is not None:
            _write(path, yaml_text, args.force)
    except SpectuiError as exc:
        return _fail(str(exc))
    for note in imported.notes:
        print("note: " + visible(note), file=sys.stderr)
    if path is not None:
        print(f"wrote profile {imported.name} to {path}", file=sys.stderr)
    return 0
