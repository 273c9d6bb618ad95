"""``spectui history list | show ID | export [--format md|csv|json] [IDS] | import FILE``.

Every benchmark run and comparison, from the SQLite file in the user's data folder. Exported
Markdown pastes into an issue or a pull request; exported JSON imports back unchanged; a
``sglang.benchmark.serving`` JSONL file, or text holding the result blocks that
``sglang.bench_serving`` prints, imports as runs of the ``sglang`` engine.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from pathlib import Path

from spectui.agent.logs.follow import kind_of

from spectui.core.bench.sglang_import import (IMPORT_LIMIT_BYTES, SGLANG_JSONL, SGLANG_PRINTED, SPECTUI_EXPORT,
                                              SglangImportError, detect_format, parse_sglang_jsonl, result_from_row,
                                              results_from_printed)
from spectui.core.bench.table import render_comparison, render_run_detail, to_json, with_positions
from spectui.core.cells import pad, widths
from spectui.core.errors import SpectuiError
from spectui.core.history import EXPORT_FORMATS, HistoryStore, ImportOutcome, default_path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help="benchmark runs and comparisons kept by spectui",
                       description=f"Benchmark runs and comparisons, kept in {default_path()}.")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
    hs = p.add_subparsers(dest="history_command", metavar="ACTION")
    ls = hs.add_parser("list", help="list runs and comparisons", description="List runs (12) and comparisons (c3).")
    ls.add_argument("--limit", type=int, metavar="N", help="only the last N entries")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=cmd_list)
    show = hs.add_parser("show", help="show one run or comparison", description="Show a run (12) or comparison (c3).")
    show.add_argument("id", metavar="ID")
    fmt = show.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_const", const="json", dest="format")
    fmt.add_argument("--markdown", action="store_const", const="markdown", dest="format")
    fmt.add_argument("--csv", action="store_const", const="csv", dest="format")
    show.set_defaults(func=cmd_show, format="text")
    ex = hs.add_parser("export", help="export runs and comparisons (Markdown, CSV or JSON)",
                       description="Export the given runs and comparisons (all runs without IDS). Markdown pastes "
                                   "into an issue or pull request; JSON imports back with 'spectui history import'.")
    ex.add_argument("ids", nargs="*", metavar="ID")
    ex.add_argument("--format", choices=EXPORT_FORMATS, default="md")
    ex.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    ex.set_defaults(func=cmd_export)
    im = hs.add_parser("import", help="import a JSON export, sglang JSONL or pasted sglang.bench_serving results",
                       description="Import runs from a spectui JSON export, from the JSONL file that "
                                   "sglang.benchmark.serving (or sglang.bench_serving) writes with --output-file, "
                                   "or from text holding the result blocks it prints ('==== Serving Benchmark "
                                   "Result ====' ...), such as a pasted shell session or notes. FILE - reads stdin.")
    im.add_argument("file", metavar="FILE")
    im.add_argument("--profile", metavar="NAME", help="sglang runs: the profile name to file the runs under")
    im.add_argument("--host", metavar="LABEL", default="imported", help="sglang runs: the host label")
    im.set_defaults(func=cmd_import)


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def cmd_list(args: argparse.Namespace) -> int:
    store = HistoryStore()
    entries = store.entries(args.limit)
    if args.json:
        print(to_json({"entries": [e.__dict__ for e in entries], "path": str(store.path)}))
        return 0
    if not entries:
        print(f"no benchmark runs yet ({store.path})")
        return 0
    rows = [("ID", "WHEN", "HOST", "WHAT", "STATE", "")] + [
        (e.id, _when(e.when), e.host, e.what, e.state, e.detail) for e in entries]
    cols = widths([str(c) for c in r[:5]] for r in rows)
    for r in rows:
        print("  ".join(pad(str(r[i]), cols[i]) for i in range(5)) + "  " + r[5])
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    store = HistoryStore()
    item = store.get(args.id)
    if item.get("kind") == "comparison":
        print(render_comparison(item, args.format), end="")
        return 0
    if args.format == "json":
        print(to_json(with_positions(item)))
    elif args.format in ("markdown", "csv"):
        print(store.export([args.id], "md" if args.format == "markdown" else "csv"), end="")
    else:
        print(render_run_detail(item, refs=store.refs()), end="")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    text = HistoryStore().export(args.ids or None, args.format)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


IMPORT_MAX_BYTES = IMPORT_LIMIT_BYTES  # an export of thousands of runs is a few MiB: past this nothing is imported


def _import_bytes(name: str) -> bytes:
    """At most :data:`IMPORT_MAX_BYTES` of FILE (``-``: standard input, which may never end); a FILE that is no
    regular file (a FIFO, a device, a socket) is refused by name without waiting for it to open."""
    if name == "-":
        data = sys.stdin.buffer.read(IMPORT_MAX_BYTES + 1)
    else:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as fh:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise SpectuiError(f"cannot import {name}: it is {kind_of(st.st_mode)}, not a file; give a file, or "
                                   "- to read standard input")
            if st.st_size > IMPORT_MAX_BYTES:
                raise SpectuiError(f"cannot import {name}: it is {st.st_size / 2 ** 20:.0f} MiB, more than the "
                                   f"{IMPORT_MAX_BYTES >> 20} MiB an import reads, so nothing was imported")
            data = fh.read(IMPORT_MAX_BYTES + 1)
    if len(data) > IMPORT_MAX_BYTES:
        raise SpectuiError(f"stopped reading {'standard input' if name == '-' else name} after "
                           f"{IMPORT_MAX_BYTES >> 20} MiB, the most an import reads, so nothing was imported")
    return data


def _read_import_text(name: str) -> tuple[str, str]:
    """The text to import and the name to call it by (``-``: standard input)."""
    source = "<stdin>" if name == "-" else str(Path(name))
    try:
        return _import_bytes(name).decode("utf-8"), source
    except UnicodeDecodeError:
        raise SpectuiError(f"{source} is not UTF-8 text; import takes a spectui JSON export, sglang JSONL or "
                           f"pasted sglang.bench_serving output") from None
    except OSError as exc:
        raise SpectuiError(f"cannot read {source}: {exc.strerror or exc}") from None


def cmd_import(args: argparse.Namespace) -> int:
    text, source = _read_import_text(args.file)
    kind = detect_format(text)
    store = HistoryStore()
    skipped: list[str] = []
    if kind == SPECTUI_EXPORT:
        outcome = ImportOutcome(store.import_json(text, source), [])
        what = "a spectui JSON export"
    elif kind == SGLANG_JSONL:
        rows = parse_sglang_jsonl(text, source)
        outcome = store.import_runs([result_from_row(row, host=args.host, profile=args.profile, source=source, n=i)
                                     for i, row in enumerate(rows, 1)])
        what = f"{len(rows)} sglang.benchmark.serving JSONL line{'' if len(rows) == 1 else 's'}"
    elif kind == SGLANG_PRINTED:
        results, skipped = results_from_printed(text, source=source, host=args.host, profile=args.profile)
        if not results:
            raise SglangImportError(f"{source}: no printed sglang.bench_serving result imported: "
                                    + "; ".join(skipped))
        outcome = store.import_runs(results)
        what = f"{len(results)} {SGLANG_PRINTED} block{'' if len(results) == 1 else 's'}"
    else:
        raise SglangImportError(f"{source} holds no spectui JSON export, no sglang.benchmark.serving JSONL line and "
                                f"no '==== Serving Benchmark Result ====' block, so nothing was imported")
    for reason in skipped:
        print(f"spectui: skipped {reason}", file=sys.stderr)
    print(outcome.sentence(what, source))
    return 0


def _guard(fn):
    def wrapped(args: argparse.Namespace) -> int:
        try:
            return fn(args)
        except (SpectuiError, SglangImportError) as exc:
            print(f"spectui: {exc}", file=sys.stderr)
            return 1
    return wrapped


cmd_list = _guard(cmd_list)
cmd_show = _guard(cmd_show)
cmd_export = _guard(cmd_export)
cmd_import = _guard(cmd_import)
