"""``spectui profiles import``: a profile from a launch command the operator already has.

The command comes as arguments (quoted, or after ``--``), from ``--file FILE``, or on stdin. The
profile goes to stdout, to ``--output FILE``, or with ``--save`` into the user's profiles folder;
an existing file is replaced only with ``--force``. Abbreviated flags are resolved against the
flag list of the host's SGLang (``--host DEST`` / ``--demo``), else of a local SGLang (the
``--python`` interpreter, default ``python3``), else kept as written; the notes say which.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from spectui.cli.hostopts import add_host_options, explain_connect_error, has_host, run_with_passphrase_prompt, target_from_args
from spectui.core.errors import SpectuiError
from spectui.core.profiles import FlagCache, FlagSet, ProfileError, load_profile, parse_help_flags, user_profile_dir
from spectui.core.profiles.importer import ImportedProfile, import_launch_command
from spectui.core.profiles.launch_command import LaunchCommandError

LOCAL_HELP_TIMEOUT_S = 240
_SIM_LAUNCHER = ["-m", "spectui.sim.server"]
_SGLANG_LAUNCHER = ["-m", "sglang.launch_server"]


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "import",
        help="make a profile from an SGLang launch command",
        description="Turn a launch command (python3 -m sglang.launch_server ..., sglang serve ..., with "
        "VAR=value, env, nohup or docker run around it) into a profile. Give the command quoted or after "
        "'--', with --file, or on stdin. Secrets (--api-key, HF_TOKEN and the like) are written as "
        "${VAR} references to the host's environment.",
    )
    parser.add_argument("command", nargs="*", metavar="WORD", help="the launch command (quote it, or put it after --)")
    parser.add_argument("-f", "--file", metavar="FILE", help="read the command from FILE ('-' for stdin)")
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
            helped = subprocess.run([python, *_SGLANG_LAUNCHER, "--help"], capture_output=True, text=True,
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
    from spectui.core.session import open_session

    cache = cache or FlagCache()
    session = await open_session(target)
    try:
        host = session.transport.destination
        if session.target.simulated:
            python, launcher = session.hello.get("python"), _SIM_LAUNCHER
            version, label = "spectui-sim", f"the simulated SGLang on {host}"
        else:
            python, launcher = target.python or "python3", _SGLANG_LAUNCHER
            info = await session.client.call("python.sglang", {"python": python}, timeout=60)
            version = f"sglang-{info.get('version') or 'unknown'}@{python}:{' '.join(launcher)}"
            label = f"SGLang {info.get('version') or '(version unknown)'} on {host}"
        flagset = cache.get(host, version)
        if flagset is None:
            res = await session.client.call("launch.help", {"python": python, "launcher": launcher}, timeout=240)
            flagset = parse_help_flags(res["text"])
            cache.put(host, version, flagset)
        return flagset, label
    finally:
        await session.close()


# -- writing -----------------------------------------------------------------------------------


def _checked(imported: ImportedProfile) -> str:
    """The YAML text, after loading it back the way spectui will (a failure is a bug, said plainly)."""
    text = imported.to_yaml()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{imported.name}.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            load_profile(path, layers=[])
        except ProfileError as exc:
            raise SpectuiError(f"the imported profile does not load ({exc.message}); please report this "
                               "command") from None
    return text


def _write(path: Path, text: str, force: bool) -> None:
    if path.exists() and not force:
        raise SpectuiError(f"{path} already exists; pass --force to replace it, or --name to choose another name")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def cmd_import(args: argparse.Namespace) -> int:
    try:
        text = _read_text(args)
        if has_host(args):
            try:
                flagset, source = run_with_passphrase_prompt(target_from_args(args), host_flagset)
            except SpectuiError as exc:
                return _fail(explain_connect_error(exc, args.argv))
        else:
            flagset, source = local_flagset(args.python or "python3")
        imported = import_launch_command(text, flagset=flagset, flag_source=source, name=args.name)
        yaml_text = _checked(imported)
        if args.save:
            path = user_profile_dir() / f"{imported.name}.yaml"
        elif args.output:
            path = Path(args.output)
        else:
            sys.stdout.write(yaml_text)
            for note in imported.notes:
                print("note: " + note, file=sys.stderr)
            return 0
        _write(path, yaml_text, args.force)
    except (LaunchCommandError, SpectuiError) as exc:
        return _fail(str(exc))
    for note in imported.notes:
        print("note: " + note, file=sys.stderr)
    print(f"wrote profile {imported.name} to {path}", file=sys.stderr)
    return 0
