"""``spectui logs``: read SGLang server logs offline.

- ``spectui logs parse FILE [--json]``: one record per recognised line (decode, prefill,
  weight loading, readiness, errors with their tracebacks gathered), as an aligned table
  or one JSON object per line;
- ``spectui logs summary FILE [--json]``: the log cut into phases (loading, then serving,
  again at each restart), per phase min / median / max of accept length and generation
  throughput, time to ready, and the errors.

FILE is a path or ``-`` for stdin; gzip input is recognised by its magic bytes. FILE must be a
regular file: a FIFO, a device (``/dev/zero`` never ends) or a socket is refused by name, without
waiting for it to open. At most :data:`MAX_INPUT_BYTES` of log text is read (standard input may never
end), and a line longer than :data:`LINE_CAP` characters is cut there, the rest of it skipped.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import stat
import statistics
import sys
import zlib
from datetime import datetime
from typing import IO, Any, Dict, Iterable, Iterator, List, Optional

from spectui.agent.logs import LogFeeder, line_time
from spectui.agent.logs.follow import CUT_MARK, LINE_CAP_BYTES as LINE_CAP, kind_of
from spectui.core.textsafe import for_stream, visible_text

MAX_INPUT_BYTES = 256 * 1024 * 1024  # of log text (after gzip): past this, reading stops with a sentence

_RANK_KEYS = ("dp_rank", "pp_rank", "attn_cp_rank", "moe_dp_rank", "tp_rank", "ep_rank")
_HIDDEN = {"kind", "time", "lines", "line_count", "context", "exception"} | set(_RANK_KEYS)


class LogInputError(Exception):
    """The input could not be read: the message is one sentence for stderr."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "logs",
        help="read SGLang server logs",
        description="Read an SGLang server log (a file, '-' for stdin, gzip recognised).",
    )
    parser.set_defaults(func=lambda args: _usage(parser))
    sub = parser.add_subparsers(dest="logs_command", metavar="ACTION")

    p_parse = sub.add_parser(
        "parse",
        help="show each recognised line as a record",
        description="Print one record per recognised log line: decode and prefill batches, weight "
        "loading, readiness, and errors (a traceback is one record). Other lines are skipped.",
    )
    p_parse.add_argument("file", metavar="FILE", help="log file, or - for stdin (gzip is recognised)")
    p_parse.add_argument("--json", action="store_true", help="one JSON object per record")
    p_parse.set_defaults(func=run_parse)

    p_sum = sub.add_parser(
        "summary",
        help="phases, accept length and throughput, time to ready, errors",
        description="Cut the log into phases (loading, serving; again at each restart) and show, per "
        "phase, min / median / max of accept length and generation throughput, the time to ready, "
        "and the errors.",
    )
    p_sum.add_argument("file", metavar="FILE", help="log file, or - for stdin (gzip is recognised)")
    p_sum.add_argument("--json", action="store_true", help="print one JSON object")
    p_sum.set_defaults(func=run_summary)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


# ---------------------------------------------------------------------------
# Input
# ---------------------------------------------------------------------------


class _Capped(io.RawIOBase):
    """The bytes of ``source``, ending with :class:`LogInputError` once more than ``cap`` have been read."""

    def __init__(self, source: Any, cap: int, name: str) -> None:
        super().__init__()
        self.source, self.cap, self.name, self.seen = source, cap, name, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        data = self.source.read(len(buf))
        if not data:
            return 0
        self.seen += len(data)
        if self.seen > self.cap:
            raise LogInputError("stopped reading %s after %d MiB, the most spectui logs reads; give it a part of the "
                                "log (tail -c %dM FILE | spectui logs ACTION -)." % (
                                    self.name, self.cap >> 20, self.cap >> 20))
        buf[:len(data)] = data
        return len(data)

    def close(self) -> None:
        try:
            if self.name != "standard input":
                self.source.close()
        finally:
            super().close()


def _open_regular(path: str) -> Any:
    """``path`` opened for reading if it is a regular file: opened without waiting (a FIFO with no writer holds a
    plain open forever), then looked at; anything else is refused by name."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(path)
        raise LogInputError("cannot read %s: it is %s, not a log file; give a file, or - to read standard input."
                            % (path, kind_of(mode)))
    return os.fdopen(fd, "rb")


def open_log(path: str) -> IO[str]:
    """Open ``path`` (``-``: stdin) as text with universal newlines (so tqdm's ``\\r``
    updates are lines of their own), un-gzipping when its first bytes say gzip; at most
    :data:`MAX_INPUT_BYTES` of text is read. Closing the result closes the file (never stdin)."""
    try:
        if path == "-":
            raw: Any = sys.stdin.buffer
        else:
            raw = _open_regular(path)
    except FileNotFoundError:
        raise LogInputError("cannot read %s: no such file." % path) from None
    except IsADirectoryError:
        raise LogInputError("cannot read %s: it is a directory, not a log file." % path) from None
    except PermissionError:
        raise LogInputError("cannot read %s: permission denied." % path) from None
    except OSError as exc:
        raise LogInputError("cannot read %s: %s." % (path, exc.strerror or exc)) from None
    stream: Any = raw if hasattr(raw, "peek") else io.BufferedReader(raw)
    try:
        head = stream.peek(2)[:2]
    except OSError as exc:
        if path != "-":
            raw.close()
        raise LogInputError("cannot read %s: %s." % (path, exc.strerror or exc)) from None
    if head == b"\x1f\x8b":
        stream = _GzipOwningFile(fileobj=stream, mode="rb")
    capped = io.BufferedReader(_Capped(stream, MAX_INPUT_BYTES, "standard input" if path == "-" else path))
    return io.TextIOWrapper(capped, encoding="utf-8", errors="replace", newline=None)


class _GzipOwningFile(gzip.GzipFile):
    """A GzipFile that also closes the file it reads from."""

    def close(self) -> None:
        fileobj = self.fileobj
        try:
            super().close()
        finally:
            if fileobj is not None:
                fileobj.close()


def read_lines(path: str) -> Iterator[str]:
    """The lines of the log; read errors (a corrupt gzip, ...) become LogInputError."""
    fh = open_log(path)
    gzipped = isinstance(fh.buffer.raw.source, gzip.GzipFile)
    cutting = False  # inside a line already cut at LINE_CAP: skip up to its end
    try:
        while True:
            try:
                line = fh.readline(LINE_CAP + 1)
            except (OSError, EOFError, zlib.error) as exc:
                if gzipped:
                    reason = "it is not valid gzip data (corrupt or cut short)"
                else:
                    reason = (getattr(exc, "strerror", None) or str(exc) or type(exc).__name__).rstrip(".")
                raise LogInputError("cannot read %s: %s." % (path, reason)) from None
            if not line:
                return
            ended = line.endswith("\n")
            if cutting:
                cutting = not ended
                continue
            if len(line) > LINE_CAP and not ended:
                cutting = True
                line = line[:LINE_CAP] + CUT_MARK % (LINE_CAP // 1024) + "\n"
            yield line
    finally:
        if path != "-":
            fh.close()


def iter_records(lines: Iterable[str]) -> Iterator[Dict[str, Any]]:
    feeder = LogFeeder()
    for line in lines:
        yield from feeder.feed(line)
    yield from feeder.flush()


# ---------------------------------------------------------------------------
# parse
# ---------------------------------------------------------------------------


def _ranks(rec: Dict[str, Any]) -> str:
    return " ".join("%s%d" % (key[:-5].upper(), rec[key]) for key in _RANK_KEYS if key in rec)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return ("%.4f" % value).rstrip("0").rstrip(".") if value == value else "nan"
    return str(value)


def format_record(rec: Dict[str, Any]) -> str:
    """One aligned text line: time, ranks, kind, then the fields as ``key=value``."""
    if rec["kind"] == "error":
        fields = rec.get("summary", "")
        if rec.get("line_count", 1) > 1:
            fields += "  (%d lines)" % rec["line_count"]
    else:
        fields = " ".join("%s=%s" % (k, _fmt(v)) for k, v in rec.items() if k not in _HIDDEN)
    return "%-23s  %-9s  %-10s  %s" % (rec.get("time") or "-", _ranks(rec) or "-", rec["kind"], fields)


def run_parse(args: argparse.Namespace) -> int:
    out = sys.stdout
    # on a terminal, control characters in the log are shown, not obeyed; a pipe gets them as they are
    shown = visible_text if out.isatty() else str
    try:
        for rec in iter_records(read_lines(args.file)):
            out.write((json.dumps(rec) if args.json else shown(format_record(rec))) + "\n")
        out.flush()
    except LogInputError as exc:
        print("spectui logs: %s" % exc, file=sys.stderr)
        return 1
    return 0  # `spectui logs parse x | head`: the entry ends a closed pipe quietly


# ---------------------------------------------------------------------------
# summary
# ---------------------------------------------------------------------------


def _seconds_between(start: Optional[str], end: Optional[str]) -> Optional[float]:
    if not start or not end:
        return None
    try:
        return round((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds(), 3)
    except ValueError:
        return None


def _spread(values: List[float]) -> Optional[Dict[str, float]]:
    if not values:
        return None
    return {"min": min(values), "median": statistics.median(values), "max": max(values), "n": len(values)}


class _Phase:
    def __init__(self, name: str, index: int, start: Optional[str]) -> None:
        self.name = name
        self.index = index
        self.start = start
        self.end = start
        self.ready_time: Optional[str] = None
        self.decode_lines = 0
        self.prefill_lines = 0
        self.errors = 0
        self.accept_len: List[float] = []
        self.accept_rate: List[float] = []
        self.gen_throughput: List[float] = []
        self.formulas: List[str] = []
        self.loading: Optional[Dict[str, Any]] = None
        self.load_end: Optional[Dict[str, Any]] = None

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {
            "phase": self.name,
            "index": self.index,
            "start": self.start,
            "end": self.end,
            "duration_s": _seconds_between(self.start, self.end),
            "decode_lines": self.decode_lines,
            "prefill_lines": self.prefill_lines,
            "errors": self.errors,
            "accept_len": _spread(self.accept_len),
            "accept_rate": _spread(self.accept_rate),
            "accept_rate_formula": self.formulas,
            "gen_throughput": _spread(self.gen_throughput),
        }
        if self.name == "loading":
            d["ready_time"] = self.ready_time
            d["time_to_ready_s"] = _seconds_between(self.start, self.ready_time)
            d["weights"] = self.loading
            d["load_end"] = self.load_end
        return d


_LOADING_KINDS = ("loading", "load_begin", "load_end")


def summarize(lines: Iterable[str]) -> Dict[str, Any]:
    """The summary of a log (see the module docstring) as a JSON-ready dict."""
    phases: List[_Phase] = []
    errors: List[Dict[str, Any]] = []
    first_time: Optional[str] = None
    last_time: Optional[str] = None
    # The first timestamp since the last serving-phase record: where a restart's loading
    # phase starts (SGLang's first line at start, "server_args=...", pins it exactly).
    unclaimed: Optional[str] = None
    n_lines = 0
    n_records = 0
    current: Optional[_Phase] = None

    def start(name: str, when: Optional[str]) -> _Phase:
        phase = _Phase(name, len(phases), when)
        phases.append(phase)
        return phase

    feeder = LogFeeder()

    def handle(rec: Dict[str, Any]) -> None:
        nonlocal current, unclaimed, n_records
        n_records += 1
        kind = rec["kind"]
        when = rec.get("time")
        if kind in _LOADING_KINDS:
            if current is None or current.name == "serving":
                current = start("loading", unclaimed or when)
            if kind == "loading":
                current.loading = {k: rec[k] for k in ("desc", "done", "total", "percent") if k in rec}
            elif kind == "load_end":
                current.load_end = {k: v for k, v in rec.items() if k not in ("kind", "time")}
        elif kind == "ready":
            if current is None or current.name == "serving":
                current = start("loading", unclaimed or when)
            current.ready_time = when
            current.end = when or current.end
            current = start("serving", when)
            unclaimed = None
        elif kind in ("decode", "prefill"):
            if current is None:
                current = start("serving", when)
            if kind == "decode":
                current.decode_lines += 1
                for key, bucket in (("accept_len", current.accept_len), ("accept_rate", current.accept_rate), ("gen_throughput", current.gen_throughput)):
                    value = rec.get(key)
                    if isinstance(value, (int, float)) and not isinstance(value, bool):
                        bucket.append(value)
                formula = rec.get("accept_rate_formula")
                if formula and formula not in current.formulas:
                    current.formulas.append(formula)
            else:
                current.prefill_lines += 1
            if current.name == "serving":
                unclaimed = None
        elif kind == "error":
            if current is not None and current.name == "serving":
                unclaimed = None
            errors.append({
                "time": when,
                "ranks": _ranks(rec) or None,
                "summary": rec.get("summary"),
                "exception": rec.get("exception"),
                "phase": current.index if current is not None else None,
            })
            if current is not None:
                current.errors += 1
        if current is not None and when:
            current.end = when

    for line in lines:
        n_lines += 1
        when = line_time(line) if line[:1] in "[(" else None
        if when:
            if first_time is None:
                first_time = when
            last_time = when
            if unclaimed is None or "] server_args=" in line:
                unclaimed = when
        for rec in feeder.feed(line):
            handle(rec)
    for rec in feeder.flush():
        handle(rec)

    if phases and phases[0].start is None:
        phases[0].start = first_time
    if phases:
        phases[-1].end = last_time or phases[-1].end
    first_loading = next((p for p in phases if p.name == "loading" and p.ready_time), None)
    return {
        "lines": n_lines,
        "records": n_records,
        "first_time": first_time,
        "last_time": last_time,
        "time_to_ready_s": _seconds_between(first_time, first_loading.ready_time) if first_loading else None,
        "restarts": max(0, sum(1 for p in phases if p.name == "loading") - 1),
        "phases": [p.to_dict() for p in phases],
        "errors": errors,
    }


def _fmt_spread(spread: Optional[Dict[str, float]], digits: int) -> str:
    if not spread:
        return "-"
    f = "%%.%df" % digits
    return "min %s  median %s  max %s  (%d lines)" % (f % spread["min"], f % spread["median"], f % spread["max"], spread["n"])


def format_summary(summary: Dict[str, Any], name: str) -> str:
    out: List[str] = []
    out.append("%s: %d lines, %d records, %s .. %s" % (
        name, summary["lines"], summary["records"], summary["first_time"] or "-", summary["last_time"] or "-"))
    ttr = summary["time_to_ready_s"]
    out.append("time to ready: %s" % ("%.1f s" % ttr if ttr is not None else "not ready in this log"))
    if summary["restarts"]:
        out.append("restarts: %d" % summary["restarts"])
    for p in summary["phases"]:
        head = "phase %d  %-7s  %s .. %s" % (p["index"] + 1, p["phase"], p["start"] or "-", p["end"] or "-")
        if p["phase"] == "loading":
            if p["time_to_ready_s"] is not None:
                head += "  ready after %.1f s" % p["time_to_ready_s"]
            else:
                head += "  (never ready)"
            if p.get("weights"):
                head += "  weights %s/%s" % (p["weights"].get("done"), p["weights"].get("total"))
            if p.get("load_end") and p["load_end"].get("elapsed") is not None:
                head += "  load %.1f s" % p["load_end"]["elapsed"]
        else:
            head += "  decode %d, prefill %d lines" % (p["decode_lines"], p["prefill_lines"])
        if p["errors"]:
            head += "  errors %d" % p["errors"]
        out.append(head)
        if p["accept_len"] or p["gen_throughput"]:
            formula = ("  [accept rate: %s]" % ", ".join(p["accept_rate_formula"])) if p["accept_rate_formula"] else ""
            out.append("    accept len      %s%s" % (_fmt_spread(p["accept_len"], 2), formula))
            out.append("    gen throughput  %s tok/s" % _fmt_spread(p["gen_throughput"], 1))
    if summary["errors"]:
        out.append("errors: %d" % len(summary["errors"]))
        for e in summary["errors"]:
            out.append("  %-23s  %-9s  %s" % (e["time"] or "-", e["ranks"] or "-", e["summary"]))
    else:
        out.append("errors: none")
    return "\n".join(out) + "\n"


def run_summary(args: argparse.Namespace) -> int:
    try:
        summary = summarize(read_lines(args.file))
    except LogInputError as exc:
        print("spectui logs: %s" % exc, file=sys.stderr)
        return 1
    summary = dict({"file": args.file}, **summary)
    if args.json:
        sys.stdout.write(json.dumps(summary) + "\n")
    else:
        sys.stdout.write(for_stream(format_summary(summary, "stdin" if args.file == "-" else args.file), sys.stdout))
    sys.stdout.flush()
    return 0
