"""``spectui recording info FILE`` and ``spectui recording export FILE --format csv|json|prometheus``.

A recording is what ``spectui connect --record FILE`` (or the console's record key) kept of a session
(:mod:`spectui.core.recording`); export writes its series, or a time range of them, for a spreadsheet,
a script, or an existing Prometheus (:mod:`spectui.core.recording_export`).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import errno
import sys
from pathlib import Path

from spectui.core.recording import RecordingError, read_recording
from spectui.core.recording_export import FORMATS, export
from spectui.core.textsafe import visible


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("recording", help="look into a recorded session, or export its series",
                       description="Look into a recorded session (spectui connect --record FILE), or export it.")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
    rs = p.add_subparsers(dest="recording_command", metavar="ACTION")
    info = rs.add_parser("info", help="what a recording holds", description="What a recording holds.")
    info.add_argument("file", metavar="FILE")
    info.set_defaults(func=cmd_info)
    ex = rs.add_parser("export", help="its series as CSV, JSON or Prometheus (OpenMetrics) text",
                       description="Write a recording's series, or a time range of them. CSV writes one file a "
                                   "series into the folder OUT; json and prometheus write the file OUT. Load "
                                   "the prometheus form with: promtool tsdb create-blocks-from openmetrics OUT DIR.")
    ex.add_argument("file", metavar="FILE")
    ex.add_argument("--format", choices=FORMATS, required=True)
    ex.add_argument("-o", "--output", metavar="OUT", required=True)
    ex.add_argument("--from", dest="start", metavar="S", type=float, default=0.0,
                    help="seconds since the recording began (default: 0)")
    ex.add_argument("--to", dest="end", metavar="S", type=float, help="seconds since the recording began "
                    "(default: its end)")
    ex.add_argument("--force", action="store_true", help="replace files that exist (a link is replaced by the "
                    "new file, never followed)")
    ex.set_defaults(func=cmd_export)


def _load(path: str):
    try:
        return read_recording(path)
    except RecordingError as exc:
        print(f"spectui: {visible(str(exc))}.", file=sys.stderr)
        return None


def _shown(value: object) -> str:
    """A name from the recording (the host's, a server's, a rule's) as text that shows every control
    character and obeys none."""
    return visible(str(value))


def cmd_info(args: argparse.Namespace) -> int:
    rec = _load(args.file)
    if rec is None:
        return 1
    h = rec.header
    started = datetime.datetime.fromtimestamp(float(h.get("started", 0)), datetime.timezone.utc)
    session = next((d for _, ev, d in rec.events if ev == "session" and isinstance(d, dict)), {})
    host = ((h.get("host") or {}).get("hostname") or (session.get("facts") or {}).get("hostname")
            or h.get("target") or "?")
    print(f"{_shown(args.file)}: {_shown(host)}, from {started:%Y-%m-%d %H:%M:%S} UTC, {rec.duration_s:.0f} s, "
          f"{len(rec.events)} events (format {h.get('version')}, spectui {_shown(h.get('spectui', '?'))})")
    counts = collections.Counter(ev for _, ev, _ in rec.events)
    print("  " + ", ".join(f"{n} {ev}" for ev, n in counts.most_common()))
    servers = sorted({d.get("name") for _, ev, d in rec.events if ev == "server_frame" and isinstance(d, dict)})
    if servers:
        print("  servers: " + ", ".join(_shown(s) for s in servers))
    alerts = [d for _, ev, d in rec.events if ev == "alert" and isinstance(d, dict) and d.get("kind") == "fired"]
    if alerts:
        print(f"  alerts fired: {len(alerts)} ({', '.join(sorted({_shown(a.get('rule', '?')) for a in alerts}))})")
    if rec.truncated:
        print("  the file ends mid-write (the recording was cut off): replayed up to its last flush")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    if args.end is not None and args.end < args.start:
        print(f"spectui: --to {args.end:g} is before --from {args.start:g}.", file=sys.stderr)
        return 2
    rec = _load(args.file)
    if rec is None:
        return 1
    out = Path(args.output)
    try:
        paths = export(rec, args.format, out, start_s=args.start, end_s=args.end, replace=args.force)
    except FileExistsError as exc:
        taken = exc.filename or args.output
        if args.format == "csv" and Path(taken) == out:
            print(f"spectui: {args.output} exists and is not a folder; give a folder for the CSV files.",
                  file=sys.stderr)
        else:
            print(f"spectui: {taken} exists; --force replaces it (an export never writes through a link).",
                  file=sys.stderr)
        return 1
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            print(f"spectui: {args.output} is a link; give a folder (an export never writes through a link).",
                  file=sys.stderr)
        else:
            print(f"spectui: cannot write {args.output}: {exc.strerror or exc}.", file=sys.stderr)
        return 1
    what = f"{len(paths)} files in {args.output}" if args.format == "csv" else args.output
    print(f"exported {args.format} to {what}")
    return 0
