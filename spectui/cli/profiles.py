"""``spectui profiles``: list the server profiles and check them.

- ``spectui profiles list [--json]``: name, algorithm, key speculative settings and source file;
- ``spectui profiles check [PATH...] [--json] [--host DEST | --demo] [--python PY]``: schema check,
  and with a host (or ``--python`` alone: this machine) the flags checked by that SGLang's own
  argument parser; one line per error, exit 1 if any.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from spectui.core.profiles import PROFILES_PATH_ENV, Profile, ProfileLibrary, load_profiles, user_profile_dir
from spectui.core.profiles.loader import expand_profile_paths
from spectui.cli import profiles_import
from spectui.cli.hostopts import add_host_options, explain_connect_error, has_host, run_with_passphrase_prompt, target_from_args
from spectui.core.errors import SpectuiError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "profiles",
        help="list and check server profiles",
        description=(
            "Server profiles are YAML files in spectui's shipped profiles folder (or the folders "
            f"in ${PROFILES_PATH_ENV}) and in {user_profile_dir()}; a user profile overrides a "
            "shipped one of the same name."
        ),
    )
    parser.set_defaults(func=lambda args: _usage(parser))
    sub = parser.add_subparsers(dest="profiles_command", metavar="ACTION")

    p_list = sub.add_parser(
        "list",
        help="show the profiles with their speculative settings",
        description="Show every profile: name, algorithm, steps, topk, draft tokens, draft model "
        "and source file. Exits 1 if some profiles could not be loaded (they are reported on stderr).",
    )
    p_list.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p_list.set_defaults(func=cmd_list)

    p_check = sub.add_parser(
        "check",
        help="check profile files against the schema",
        description="Check profile files (all profiles when no PATH is given) and print one line "
        "per problem as FILE:LINE:COL: message. With --host or --demo, the server flags are also "
        "parsed by that host's own SGLang parser (its --help text where the parser cannot be "
        "imported); --python picks the interpreter that parses them (the profile's 'python' "
        "otherwise), and --python without a host checks on this machine. Exits 1 if there is any "
        "problem; notes (abbreviated or deprecated flags) do not count.",
    )
    p_check.add_argument("paths", nargs="*", metavar="PATH", help="profile files or folders to check")
    p_check.add_argument("--json", action="store_true", help="print the problems as JSON")
    add_host_options(p_check, required=False)
    p_check.set_defaults(func=cmd_check)
    profiles_import.register(sub)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _display_path(path: str | None) -> str:
    if not path:
        return ""
    p = Path(path)
    try:
        return os.path.relpath(p) if p.is_absolute() and p.resolve().is_relative_to(Path.cwd()) else str(p)
    except (OSError, ValueError):
        return str(p)


def _row(profile: Profile, library: ProfileLibrary) -> dict:
    spec = profile.speculative_settings()
    return {
        "name": profile.name,
        "description": profile.description,
        "model": profile.model,
        "algorithm": spec["algorithm"],
        "num_steps": spec["num_steps"],
        "topk": spec["topk"],
        "draft_tokens": spec["draft_tokens"],
        "draft_model": spec["draft_model"],
        "extends": profile.extends,
        "tags": list(profile.tags),
        "source": profile.source,
        "overrides": library.shadowed.get(profile.name, []),
        "content_hash": profile.content_hash,
    }


def _print_errors(library: ProfileLibrary, stream) -> None:
    for error in library.errors:
        print(error, file=stream)


def cmd_list(args: argparse.Namespace) -> int:
    library = load_profiles()
    rows = [_row(p, library) for p in library]
    if args.json:
        json.dump({"profiles": rows, "errors": [e.to_dict() for e in library.errors]}, sys.stdout, indent=2)
        print()
    elif not rows:
        print(f"no profiles found; put YAML files in {user_profile_dir()} or set ${PROFILES_PATH_ENV}")
    else:
        headers = ["NAME", "ALGORITHM", "STEPS", "TOPK", "DRAFT TOKENS", "DRAFT MODEL", "SOURCE"]
        table = [headers]
        for row in rows:
            source = _display_path(row["source"]) + (" (overrides shipped)" if row["overrides"] else "")
            table.append([
                row["name"],
                row["algorithm"] or "-",
                *("-" if row[k] is None else str(row[k]) for k in ("num_steps", "topk", "draft_tokens")),
                row["draft_model"] or "-",
                source,
            ])
        widths = [max(len(r[i]) for r in table) for i in range(len(headers))]
        for r in table:
            print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    if library.errors:
        _print_errors(library, sys.stderr)
        return 1
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    library = load_profiles(args.paths or None)
    if args.paths:
        checked_files = {str(p) for p in expand_profile_paths(args.paths)}
        checked = [p for p in library if p.source in checked_files]
        n_files = len(checked_files)
    else:
        checked = list(library)
        n_files = len(library.files)
    if args.paths and n_files == 0:
        print(f"no profile files (*.yaml) in {', '.join(args.paths)}", file=sys.stderr)
        return 1
    host_checks = []
    if has_host(args) or args.python:
        # Flags and algorithm values by the host's own SGLang parser (the simulator's on a demo host).
        try:
            target = target_from_args(args) if has_host(args) else _this_machine(args)
            host_checks = run_with_passphrase_prompt(target, lambda t: _host_checks(t, checked, args.python))
        except SpectuiError as exc:
            print("spectui: " + explain_connect_error(exc, args.argv),
                  file=sys.stderr)
            return 1
        for result in host_checks:
            library.errors.extend(result.errors)
    notes = [note for result in host_checks for note in result.notes]
    if args.json:
        json.dump({"checked": [p.name for p in checked], "errors": [e.to_dict() for e in library.errors],
                   "notes": [n.to_dict() for n in notes], "host_checks": [r.to_dict() for r in host_checks]},
                  sys.stdout, indent=2)
        print()
    else:
        for basis in dict.fromkeys(r.basis for r in host_checks):
            print(f"spectui: {basis}", file=sys.stderr)
        for error in library.errors:
            print(error)
        for note in notes:
            print(f"{note.location}: note: {note.message}" if note.location else f"note: {note.message}")
        files = f"{n_files} file{'s' if n_files != 1 else ''}"
        if library.errors:
            n = len(library.errors)
            print(f"{n} problem{'s' if n != 1 else ''} in {files}", file=sys.stderr)
        else:
            print(f"{len(checked)} profile{'s' if len(checked) != 1 else ''} OK ({files})", file=sys.stderr)
    return 1 if library.errors else 0



def _this_machine(args: argparse.Namespace):
    """This machine as the host; the agent runs under spectui's own interpreter, and the check
    under ``--python`` (looked up on PATH when it is a bare name)."""
    from spectui.core.session import HostTarget

    return HostTarget(kind="local", state_dir=args.state_dir, gpu_source=args.gpu_source)


async def _host_checks(target, profiles: list[Profile], python: str | None) -> list:
    from spectui.core.flagcheck import check_profiles_on_host
    from spectui.core.session import open_session

    session = await open_session(target)
    try:
        return await check_profiles_on_host(session, profiles, python=python)
    finally:
        await session.close()
