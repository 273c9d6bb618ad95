"""``spectui source``: SGLang's source on a host, headless: tree, show, grep, def, algorithms, flags.

    spectui source (--host DEST | --demo) [--sglang-root PATH] tree [DIR] | show PATH[:LINE]
                   | grep PATTERN | def NAME | algorithms | flag FLAG... | profile NAME | where  [--json]

Without ``--sglang-root`` the tree is the installed package of the host's Python (``--python``).
The demo host has no SGLang: there the published wheel, unpacked in this machine's cache, is
read (``--fetch`` downloads it with pip when it is not there yet).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import textwrap

from spectui.cli.hostopts import add_host_options, explain_connect_error, run_with_passphrase_prompt, target_from_args
from spectui.core.errors import SpectuiError
from spectui.core.profiles import ProfileError
from spectui.core.session import HostTarget, open_session
from spectui.core.source import (
    DEMO_VERSION,
    AlgorithmsView,
    DemoSourceMissing,
    SourceBrowser,
    fetch_sglang_source,
    locate_sglang,
    open_browser,
    parse_ref,
)

SCHEMA = "spectui.source.{}/1"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("source", help="browse and search SGLang's source on a host",
                       description="Find SGLang's source on a host (or --sglang-root PATH) and list, read or "
                                   "search it; list the speculative algorithms and their workers.")
    add_host_options(p)
    g = p.add_argument_group("source")
    g.add_argument("--sglang-root", metavar="PATH",
                   help="a source tree on the host (a git checkout, an unpacked wheel) instead of the installed package")
    g.add_argument("--root", metavar="PATH", action="append", default=[],
                   help="another folder on the host the browser may read (repeatable)")
    g.add_argument("--fetch", action="store_true",
                   help="with --demo: download SGLang's published wheel with pip if it is not in the cache yet")
    g.add_argument("--demo-version", metavar="V", default=DEMO_VERSION,
                   help=f"with --demo: the SGLang release whose wheel is read (default {DEMO_VERSION})")
    acts = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    def action(name: str, help: str) -> argparse.ArgumentParser:
        a = acts.add_parser(name, help=help, description=help)
        a.add_argument("--json", action="store_true", help="print one JSON object (see docs/source-browser.md)")
        a.set_defaults(func=run, action=name)
        return a

    a = action("tree", "list a folder of the tree (default: srt/speculative)")
    a.add_argument("dir", metavar="DIR", nargs="?")
    a.add_argument("--depth", type=int, default=1, metavar="N", help="levels to list (default 1)")
    a = action("show", "print a file with line numbers (PATH:LINE shows the lines around LINE)")
    a.add_argument("ref", metavar="PATH[:LINE]")
    a.add_argument("-n", "--lines", type=int, default=None, metavar="N",
                   help="how many lines (default: the whole file, or 40 around LINE)")
    a = action("grep", "search the package with a regular expression (Python syntax), line by line")
    a.add_argument("pattern", metavar="PATTERN")
    a.add_argument("-i", "--ignore-case", action="store_true")
    a.add_argument("--max", type=int, default=1000, metavar="N", help="stop after N hits (default 1000)")
    a.add_argument("--include", action="append", metavar="GLOB", help="only files named like GLOB, e.g. '*.py'")
    a.add_argument("--in", dest="within", metavar="DIR", help="search under DIR instead of the whole package")
    a = action("def", "where a class or function is defined")
    a.add_argument("name", metavar="NAME")
    action("algorithms", "the speculative algorithms of this SGLang and the module of each one's worker")
    a = action("flag", "where server flags are defined, with their help text")
    a.add_argument("flags", metavar="FLAG", nargs="+",
                   help="flag names without their dashes (speculative-num-steps), or after --")
    a = action("profile", "where each speculative-* flag of a profile is defined, with its help text")
    a.add_argument("profile", metavar="PROFILE")
    a.add_argument("--profiles", metavar="PATH", action="append", help="extra profile file or folder")
    action("where", "where SGLang is on the host, and its version")


# --- running ---------------------------------------------------------------------------------
def run(args: argparse.Namespace) -> int:
    profile = None
    try:
        if args.action == "profile":
            from spectui.core.profiles import load_profiles

            profile = load_profiles(args.profiles).get(args.profile)
        target = target_from_args(args)
        return run_with_passphrase_prompt(target, lambda t: _run(args, t, profile))
    except (SpectuiError, ProfileError) as exc:
        msg = explain_connect_error(exc, args.argv)
        if args.json:
            print(json.dumps({"schema": SCHEMA.format(args.action),
                              "error": {"kind": type(exc).__name__, "message": msg}}, indent=2))
        print("spectui: " + msg, file=sys.stderr)
        return 1


def _confirm_fetch(exc: DemoSourceMissing) -> bool:
    if not sys.stdin.isatty():
        return False
    sys.stderr.write(f"The demo host has no SGLang. Download SGLang {exc.version}'s published wheel from PyPI "
                     f"with pip into {exc.cache_dir}? [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


async def _open(args: argparse.Namespace, session, python: str | None) -> SourceBrowser:
    opts = dict(python=python, sglang_root=args.sglang_root, roots=args.root, demo_version=args.demo_version)
    try:
        return await open_browser(session, **opts)
    except DemoSourceMissing as exc:
        if not (args.fetch or _confirm_fetch(exc)):
            raise
        print(f"spectui: fetching SGLang {exc.version}'s wheel with pip (pip download --no-deps "
              f"sglang=={exc.version}) into {exc.cache_dir} ...", file=sys.stderr)
        await asyncio.to_thread(fetch_sglang_source, exc.version)
        return await open_browser(session, **opts)


async def _run(args: argparse.Namespace, target: HostTarget, profile) -> int:
    session = await open_session(target)
    try:
        python = (profile.python if profile is not None and profile.python else None) or None
        if args.action == "where":
            where = await locate_sglang(session.client, python)
            out = {"python": where.python, "installed": where.installed, "path": where.path,
                   "version": where.version, "message": where.message}
            _emit(args, out, lambda d: (f"sglang {d['version'] or '(unknown version)'} at {d['path']} (for {d['python']})"
                                        if d["installed"] else d["message"]))
            return 0
        browser = await _open(args, session, python)
        if browser.info.note and not args.json:
            print(f"spectui: {browser.info.note}", file=sys.stderr)
        return await ACTIONS[args.action](args, browser, profile)
    finally:
        await session.close()


def _emit(args, data: dict, render) -> None:
    if args.json:
        print(json.dumps({"schema": SCHEMA.format(args.action), **data}, indent=2))
    else:
        print(render(data))  # host text: shown, not obeyed, on a terminal (spectui.cli.output)


def _source_json(browser: SourceBrowser) -> dict:
    i = browser.info
    return {"root": i.root, "roots": list(i.roots), "origin": i.origin, "package": i.package, "version": i.version,
            "python": i.python, "note": i.note}


# --- actions -----------------------------------------------------------------------------------
async def _tree(args, browser: SourceBrowser, _profile) -> int:
    listing = await browser.tree(args.dir, depth=max(1, args.depth))
    entries = [{"name": e.name, "path": e.path, "kind": e.kind, "depth": e.depth, "size": e.size, "link": e.link,
                **({"what": e.what} if e.what else {})} for e in listing.entries]

    def render(d):
        lines = [f"{d['path'] or '.'}/  ({browser.info.label})"]
        for e in d["entries"]:
            pad = "  " * (e["depth"] + 1)
            if e["kind"] == "dir":
                lines.append(f"{pad}{e['name']}/")
            elif e["kind"] == "file":
                lines.append(f"{pad}{e['name']}  {_size(e['size'])}")
            elif e["kind"] == "outside":
                lines.append(f"{pad}{e['name']} -> (symlink leading outside the source roots; refused)")
            elif e["kind"] == "special":
                lines.append(f"{pad}{e['name']}  ({e.get('what')}; not readable here)")
            else:
                lines.append(f"{pad}{e['name']}  ({e['kind']})")
        if d["truncated"]:
            lines.append("  ... (listing cut short)")
        return "\n".join(lines)

    _emit(args, {"source": _source_json(browser), "path": listing.path, "entries": entries,
                 "truncated": listing.truncated}, render)
    return 0


async def _show(args, browser: SourceBrowser, _profile) -> int:
    path, line = parse_ref(args.ref)
    if line is not None:
        count = args.lines or 40
        page = await browser.read(path, start=max(1, line - count // 4), count=count)
        start, lines = page.start, list(page.lines)
    else:  # the whole file (up to the viewer's cap), page by page, or its first N lines
        page = await browser.read(path, 1, args.lines or 5000)
        start, lines = page.start, list(page.lines)
        while args.lines is None and not page.eof:
            page = await browser.read(path, page.end + 1, 5000)
            lines.extend(page.lines)
    data = {"source": _source_json(browser), "path": page.path, "module": page.module, "start": start,
            "end": start + len(lines) - 1, "total_lines": page.total_lines, "size": page.size,
            "truncated": page.truncated, "note": page.note, "line": line, "lines": lines}

    def render(d):
        width = len(str(max(d["end"], 1)))
        head = f"{d['path']}" + (f"  ({d['module']})" if d["module"] else "") + \
               f"  lines {d['start']}-{d['end']} of {d['total_lines']}"
        out = [head]
        if d["note"]:
            out.append(f"note: {d['note']}")
        for i, text in enumerate(d["lines"], d["start"]):
            mark = ">" if i == d["line"] else " "
            out.append(f"{mark}{i:>{width}}  {text}")
        return "\n".join(out)

    _emit(args, data, render)
    return 0


async def _grep(args, browser: SourceBrowser, _profile) -> int:
    printed = [0]

    def on_hits(hits):
        if args.json:
            return
        for h in hits:
            print(f"{h.path}:{h.line}:{h.text}")
        printed[0] += len(hits)
        sys.stdout.flush()

    r = await browser.grep(args.pattern, path=args.within, ignore_case=args.ignore_case, include=args.include,
                           max_hits=max(1, args.max), on_hits=on_hits)
    summary = (f"{len(r.hits)} hit{'s' if len(r.hits) != 1 else ''} in {r.files_matched} files "
               f"({r.files_scanned} files searched, {r.elapsed_s:.2f} s)"
               + (f"; stopped at the cap of {r.max_hits} hits" if r.truncated else ""))
    if args.json:
        print(json.dumps({"schema": SCHEMA.format("grep"), "source": _source_json(browser), "pattern": args.pattern,
                          "hits": [{"path": h.path, "line": h.line, "col": h.col, "text": h.text} for h in r.hits],
                          "truncated": r.truncated, "files_scanned": r.files_scanned,
                          "files_matched": r.files_matched, "elapsed_s": r.elapsed_s}, indent=2))
    else:
        print(summary, file=sys.stderr)
    return 0


async def _def(args, browser: SourceBrowser, _profile) -> int:
    defs = await browser.definition(args.name)
    data = {"source": _source_json(browser), "name": args.name,
            "definitions": [{"path": d.path, "line": d.line, "kind": d.kind, "text": d.text} for d in defs]}
    _emit(args, data, lambda d: "\n".join(f"{x['path']}:{x['line']}  {x['kind']:<10} {x['text']}"
                                          for x in d["definitions"]) or f"no definition of {args.name} found")
    return 0 if defs else 1


def algorithms_json(view: AlgorithmsView) -> dict:
    return {"enum": {"class": view.enum_class, "path": view.enum_path, "line": view.enum_line,
                     "bases": list(view.enum_bases), "module": view.enum_module},
            "version": view.version,
            "algorithms": [{"name": a.name, "value": a.value, "line": a.line, "predicates": list(a.predicates),
                            "workers": [{"class": w.cls, "module": w.module, "path": w.path, "line": w.line,
                                         "conditional": w.conditional, "condition": w.condition,
                                         "site": {"path": w.site_path, "line": w.site_line,
                                                  "function": w.site_function}} for w in a.workers]}
                           for a in view.algorithms]}


def render_algorithms(view: AlgorithmsView) -> str:
    lines = [f"{view.enum_class}({', '.join(view.enum_bases)}) in {view.enum_path}:{view.enum_line}"
             f"  (sglang {view.version or 'unknown version'})"]
    width = max(len(a.name) for a in view.algorithms)
    for a in view.algorithms:
        if not a.workers:
            lines.append(f"  {a.name:<{width}}  no worker (no dispatch site picks one)")
            continue
        for i, w in enumerate(a.workers):
            name = a.name if i == 0 else ""
            where = f"{w.path}:{w.line}" if w.path and w.line else (w.path or "?")
            cond = f"  [when {w.condition}]" if w.conditional else ""
            lines.append(f"  {name:<{width}}  {w.cls:<26} {w.module or '?'}  ({where}){cond}")
    sites = sorted({(w.site_path, w.site_function) for a in view.algorithms for w in a.workers})
    if sites:
        lines.append("chosen in: " + ", ".join(f"{p} ({f})" if f else p for p, f in sites))
    return "\n".join(lines)


async def _algorithms(args, browser: SourceBrowser, _profile) -> int:
    view = await browser.algorithms()
    if args.json:
        print(json.dumps({"schema": SCHEMA.format("algorithms"), "source": _source_json(browser),
                          **algorithms_json(view)}, indent=2))
    else:
        print(render_algorithms(view))
    return 0


def _flag_rows(flag: str, defs, value=None) -> list[str]:
    head = flag + (f" = {value}" if value is not None else "")
    if not defs:
        return [f"{head}: not defined in this SGLang"]
    d = defs[0]
    alias = f", alias of {d.names[0]}" if d.alias and d.names else ""
    out = [f"{head}: {d.path}:{d.line} ({d.kind}{', in ' + d.context if d.context else ''}{alias})"]
    if d.help:
        out.extend(textwrap.wrap(d.help, 96, initial_indent="    ", subsequent_indent="    "))
    extra = [f"{k}={getattr(d, k)}" for k in ("type", "default", "choices") if getattr(d, k)]
    if extra:
        out.append("    " + ", ".join(extra))
    return out


def _flag_json(defs) -> list[dict]:
    return [{"path": d.path, "line": d.line, "end_line": d.end_line, "kind": d.kind, "names": list(d.names),
             "help": d.help,
             "context": d.context, "type": d.type, "default": d.default, "choices": d.choices, "alias": d.alias}
            for d in defs]


async def _flag(args, browser: SourceBrowser, _profile) -> int:
    found = await browser.flags(args.flags)
    data = {"source": _source_json(browser),
            "flags": [{"flag": f, "definitions": _flag_json(defs)} for f, defs in found.items()]}
    _emit(args, data, lambda d: "\n".join(r for f, defs in found.items() for r in _flag_rows(f, defs)))
    return 0 if all(found.values()) else 1


async def _profile(args, browser: SourceBrowser, profile) -> int:
    rows = await browser.profile_flags(profile)
    data = {"source": _source_json(browser), "profile": profile.name,
            "flags": [{"flag": r.flag, "value": r.value,
                       "definitions": _flag_json(([r.definition] if r.definition else []) + list(r.others))}
                      for r in rows]}

    def render(d):
        if not rows:
            return f"{profile.name} sets no speculative-* flags"
        return "\n".join(x for r in rows for x in _flag_rows(r.flag, ([r.definition] if r.definition else []),
                                                                r.value))

    _emit(args, data, render)
    return 0 if all(r.definition for r in rows) else 1


def _size(n) -> str:
    if n is None:
        return ""
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


ACTIONS = {"tree": _tree, "show": _show, "grep": _grep, "def": _def, "algorithms": _algorithms, "flag": _flag,
           "profile": _profile}
