"""``spectui profiles``: list the server profiles and check them.

- ``spectui profiles list [--json]``: name, algorithm, key speculative settings and source file;
- ``spectui profiles check [PATH...] [--json] [--host DEST | --demo] [--python PY]``: schema check,
  and with a host (or ``--python`` alone: this machine) the flags checked by that SGLang's own
  argument parser; one line per error, exit 1 if any;
- ``spectui profiles render NAME --for slurm|lws|shell [--output FILE]``: the profile as a Slurm
  batch script, a Kubernetes LeaderWorkerSet or shell commands, one per node of a multi-node profile.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from spectui.core.profiles import (
    PROFILES_PATH_ENV,
    Profile,
    ProfileError,
    ProfileLibrary,
    load_profiles,
    user_profile_dir,
)
from spectui.core.profiles.loader import expand_profile_paths, read_profile_file
from spectui.core.profiles.spec_text import profile_settings, settings_text
from spectui.core.profiles.render import DEFAULT_IMAGE, TARGETS as RENDER_TARGETS, RenderError, render
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
        description="Show every profile: name, algorithm, speculative settings as SGLang resolves them (as the "
        "console writes them), draft model and source file; --json adds the flags as written. Exits 1 if some profiles could not be loaded (they are reported on stderr).",
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

    p_render = sub.add_parser(
        "render",
        help="print a profile as a Slurm script, a Kubernetes LeaderWorkerSet or shell commands",
        description="Render a profile as text a scheduler runs: --for slurm gives an sbatch script (one srun "
        "task per node, the rank from SLURM_NODEID), --for lws a Kubernetes LeaderWorkerSet and a Service "
        "(the rank and rank 0's address from LWS_WORKER_INDEX and LWS_LEADER_ADDRESS), --for shell one "
        "command per node. A multi-node profile ('nodes:') gets --nnodes, --node-rank and --dist-init-addr "
        "on each node. The text holds the profile's env values; --output writes it to a file only you can read.",
    )
    p_render.add_argument("name", metavar="NAME", help="a profile name, or a profile file")
    p_render.add_argument("--for", dest="target", required=True, choices=RENDER_TARGETS,
                          help="what to render for: slurm (sbatch), lws (kubectl apply) or shell")
    p_render.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p_render.add_argument("--force", action="store_true", help="replace an existing --output file")
    p_render.add_argument("--image", metavar="IMAGE",
                          help=f"the container image for --for lws (default {DEFAULT_IMAGE})")
    p_render.set_defaults(func=cmd_render)


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
        "settings": settings_text(profile_settings(profile)),
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
    elif not rows and library.errors:
        files = len(set(getattr(e, "path", None) or str(e) for e in library.errors))
        print(f"no usable profile: {files} profile file{'s' if files != 1 else ''} could not be loaded "
              f"(the problems follow)", file=sys.stderr)
    elif not rows:
        print(f"no profiles found; put YAML files in {user_profile_dir()} or set ${PROFILES_PATH_ENV}",
              file=sys.stderr)
    else:
        # the settings as the console's speculative panel and profiles list write them (one function)
        headers = ["NAME", "ALGORITHM", "SETTINGS", "DRAFT MODEL", "SOURCE"]
        table = [headers]
        for row in rows:
            source = _display_path(row["source"]) + (" (overrides shipped)" if row["overrides"] else "")
            table.append([
                row["name"],
                row["algorithm"] or "-",
                row["settings"] or "-",
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
    from spectui.core.timer_check import timer_notes

    # Host notes, then what the profiles' own settings are worth knowing (the device timer's cost and needs).
    notes = [note for result in host_checks for note in result.notes] + timer_notes(checked)
    if args.json:
        json.dump({"checked": [p.name for p in checked], "errors": [e.to_dict() for e in library.errors],
                   "notes": [{"severity": "note", **n.to_dict()} for n in notes],
                   "host_checks": [r.to_dict() for r in host_checks]},
                  sys.stdout, indent=2)
        print()
    else:
        for basis in dict.fromkeys(r.basis for r in host_checks):
            print(f"spectui: {basis}", file=sys.stderr)
        for error in library.errors:
            print(error)
        for note in notes:
            label = getattr(note, "severity", "note")
            print(f"{note.location}: {label}: {note.message}" if note.location else f"{label}: {note.message}")
        print(_summary(len(checked), n_files, len(library.errors),
                       sum(getattr(n, "severity", "") == "warning" for n in notes)), file=sys.stderr)
    return 1 if library.errors else 0


def _summary(n_checked: int, n_files: int, n_errors: int, n_warnings: int) -> str:
    """``2 profiles OK (2 files)``, ``3 problems in 2 files``, with ``, 1 warning`` when there are any."""
    files = f"{n_files} file{'s' if n_files != 1 else ''}"
    if n_errors:
        line = f"{n_errors} problem{'s' if n_errors != 1 else ''} in {files}"
    else:
        line = f"{n_checked} profile{'s' if n_checked != 1 else ''} OK ({files})"
    return line + (f", {n_warnings} warning{'s' if n_warnings != 1 else ''}" if n_warnings else "")



def _render_profile(name: str) -> Profile:
    """The profile NAME names: a file when one exists at that path, else a profile name."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        if not path.is_file():
            raise SpectuiError(f"no profile file {name}; give a profile name or an existing .yaml file")
        library = load_profiles([path])
        raw, _ = read_profile_file(path)
        if library.errors or raw is None:
            raise library.errors[0]
        return library.get(raw.name)
    library = load_profiles()
    broken = [e for e in library.errors if e.profile == name]
    if name not in library and broken:
        raise broken[0]
    return library.get(name)


def _write_private(path: Path, text: str, force: bool) -> None:
    """Write ``text`` to ``path`` readable only by its owner; an existing file only with ``force``."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        raise SpectuiError(f"{path} already exists; pass --force to replace it") from None
    except OSError as exc:
        raise SpectuiError(f"cannot write {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        os.fchmod(fd, 0o600)
        out.write(text)


def cmd_render(args: argparse.Namespace) -> int:
    try:
        profile = _render_profile(args.name)
        text = render(profile, args.target, image=args.image)
        if args.output:
            _write_private(Path(args.output), text, args.force)
    except (ProfileError, RenderError, SpectuiError) as exc:
        print(f"spectui: {exc}", file=sys.stderr)
        return 1
    if not args.output:
        sys.stdout.write(text)
        return 0
    apply = {"slurm": "sbatch", "lws": "kubectl apply -f", "shell": "sh"}[args.target]
    print(f"spectui: wrote {args.output} ({apply} {args.output})", file=sys.stderr)
    return 0


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
