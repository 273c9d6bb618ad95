"""How fast spectui's SGLang log parser reads a realistic log, against SGLang's own regex.

SGLang ships a decode-line regex, ``_PATTERN_DECODE`` in
``sglang/srt/debug_utils/log_parser.py``. The two sides, timed on the same lines in the
same run, each as the best of N repeats, interleaved (alternating which goes first) so
that both see the same machine state:

* SGLang: ``_PATTERN_DECODE`` applied with ``re.search`` to each line, the match
  object dropped. It only finds decode lines, converting nothing.
* spectui: ``LogFeeder.feed_lines``, the batch call the agent makes with the lines it
  has read from the log, here given the lines ``--poll`` at a time (one feeder for the
  whole log). It returns a dict per record (here each decode and prefill line; HTTP
  access lines give none) with every field converted (accept length and accept rate
  included), and keeps a poll's records until the poll is done.

Also shown, not in the ratio: ``LogParser.parse_line`` and ``LogFeeder.feed`` called once per line,
and the parser's coverage of the real SGLang lines in ``tests/fixtures/real/logs/`` (each
copied verbatim from a public source, with the record expected of it): per era, the lines
read to the expected kind and fields out of the lines of interest.

The lines are a deterministic, realistic mix: per request one ``Prefill batch`` line, a few
``Decode batch,`` lines of the late-2025 era (the shape SGLang's regex matches: trailing
comma after ``#queue-req``, speculative accept fields) and one HTTP access line.

    python bench/parse_speed.py [--wheel sglang-0.5.23-....whl] [--lines 40000] [--repeats 11] [--poll 256]

The regex is read from the wheel given by ``--wheel`` (or ``$SGLANG_WHEEL``), else from an
``sglang-*.whl`` in pip's cache, else the copy embedded below is used.
"""

from __future__ import annotations

import argparse
import ast
import glob
import json
import os
import platform
import random
import re
import subprocess
import sys
import time
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from spectui.agent.logs import LogFeeder, LogParser, parse_line  # noqa: E402

REAL_LOGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "real", "logs")

LOG_PARSER_PATH = "sglang/srt/debug_utils/log_parser.py"

# Verbatim copy of ``_PATTERN_DECODE`` from sglang/srt/debug_utils/log_parser.py in the
# sglang 0.5.23 wheel (PyPI ``sglang==0.5.23``), used only when no wheel is found.
EMBEDDED_PATTERN_DECODE = (
    r"(\(\w+ pid=(?P<pid>\d+)(?:,\s*ip=(?P<ip>[\d\.]+))?\))?\s*"
    r"\[(?P<time>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})"
    r"(?:\s+DP(?P<dp_rank>\d+))?"
    r"(?:\s+TP(?P<tp_rank>\d+))?"
    r"(?:\s+EP(?P<ep_rank>\d+))?"
    r"(?:\s+PP(?P<pp_rank>\d+))?"
    r"\]\s+"
    r"Decode batch( \[\d+\])?,\s+"
    r"#running-req:\s*(?P<num_running_req>\d+),\s+"
    r"#token:\s*(?P<num_token>\d+),\s+"
    r"token usage:\s*(?P<token_usage>[0-9.]+),\s+"
    r".*?"
    r"gen throughput \(token/s\):\s*(?P<gen_throughput>[0-9.]+),\s+"
    r"#queue-req:\s*(?P<queue_req>\d+),"
)


def _pip_cache_wheels() -> list:
    try:
        out = subprocess.run(
            [sys.executable, "-m", "pip", "cache", "dir"],
            capture_output=True, text=True, timeout=30, check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return []
    if not out or not os.path.isdir(out):
        return []
    return sorted(glob.glob(os.path.join(out, "**", "sglang-*.whl"), recursive=True))


def load_pattern(wheel: str | None) -> tuple:
    """``(pattern, where it came from)``."""
    candidates = [wheel] if wheel else []
    if not wheel and os.environ.get("SGLANG_WHEEL"):
        candidates.append(os.environ["SGLANG_WHEEL"])
    if not candidates:
        candidates.extend(_pip_cache_wheels())
    for path in candidates:
        try:
            with zipfile.ZipFile(path) as zf:
                source = zf.read(LOG_PARSER_PATH).decode("utf-8")
        except (OSError, KeyError, zipfile.BadZipFile) as exc:
            if wheel:
                sys.exit("cannot read %s from %s: %s" % (LOG_PARSER_PATH, path, exc))
            continue
        for node in ast.parse(source).body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "_PATTERN_DECODE" for t in node.targets
            ):
                return ast.literal_eval(node.value), "%s (%s)" % (os.path.basename(path), LOG_PARSER_PATH)
        if wheel:
            sys.exit("%s in %s has no _PATTERN_DECODE" % (LOG_PARSER_PATH, path))
    return EMBEDDED_PATTERN_DECODE, "embedded copy of sglang 0.5.23 " + LOG_PARSER_PATH


def make_lines(n: int, seed: int = 7) -> list:
    """A realistic late-2025 speculative-decoding log: prefill, decode lines, HTTP line."""
    rng = random.Random(seed)
    lines = []
    t = 1764850000  # 2025-12-04
    tokens = 0
    port = 40000
    while len(lines) < n:
        running = rng.choice((1, 1, 1, 2, 4, 8))
        new = rng.randint(24, 2048)
        cached = rng.choice((0, 0, rng.randint(0, new)))
        tokens += new
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))
        lines.append(
            "[%s TP0] Prefill batch, #new-seq: 1, #new-token: %d, #cached-token: %d, #token: %d, "
            "token usage: %.2f, #running-req: %d, #queue-req: %d, #pending-token: 0, "
            % (stamp, new, cached, tokens, min(tokens / 400000.0, 1.0), running - 1, rng.choice((0, 0, 1)))
        )
        for _ in range(rng.randint(3, 6)):
            t += rng.randint(0, 2)
            accept_len = rng.uniform(1.2, 3.4)
            tokens += int(40 * accept_len * running)
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))
            lines.append(
                "[%s TP0] Decode batch, #running-req: %d, #token: %d, token usage: %.2f, "
                "accept len: %.2f, accept rate: %.2f, cuda graph: True, "
                "gen throughput (token/s): %.2f, #queue-req: %d, "
                % (stamp, running, tokens, min(tokens / 400000.0, 1.0), accept_len,
                   accept_len / 8.0, rng.uniform(35.0, 90.0) * running, rng.choice((0, 0, 0, 1)))
            )
        port += 1
        lines.append(
            '[%s] INFO:     127.0.0.1:%d - "POST /generate HTTP/1.1" 200 OK' % (stamp, port)
        )
        if tokens > 350000:
            tokens = 0
    return lines[:n]


def time_theirs(pattern, lines) -> float:
    search = pattern.search
    start = time.perf_counter()
    for line in lines:
        search(line)
    return time.perf_counter() - start


def time_ours(lines, poll: int, parser=None) -> float:
    feeder = LogFeeder(parser=parser)
    feed_lines = feeder.feed_lines
    start = time.perf_counter()
    for at in range(0, len(lines), poll):
        feed_lines(lines[at:at + poll])
    feeder.flush()
    return time.perf_counter() - start


def time_parse_line(lines, parser) -> float:
    parse = parser.parse_line
    start = time.perf_counter()
    for line in lines:
        parse(line)
    return time.perf_counter() - start


def time_feed(lines, parser=None) -> float:
    feeder = LogFeeder(parser=parser)
    feed = feeder.feed
    start = time.perf_counter()
    for line in lines:
        feed(line)
    feeder.flush()
    return time.perf_counter() - start


def check_agreement(pattern, lines) -> int:
    """Every line SGLang's regex matches, ours reads to the same numbers (and more)."""
    matched = 0
    for line in lines:
        m = pattern.search(line)
        if m is None:
            continue
        matched += 1
        rec = parse_line(line)
        if rec is None or rec["kind"] != "decode":
            sys.exit("ours missed a line SGLang's regex matches: %r" % line)
        expect = {
            "running_req": int(m.group("num_running_req")),
            "num_token": int(m.group("num_token")),
            "token_usage": float(m.group("token_usage")),
            "gen_throughput": float(m.group("gen_throughput")),
            "queue_req": int(m.group("queue_req")),
            "time": m.group("time"),
        }
        for key, value in expect.items():
            if rec.get(key) != value:
                sys.exit("field %s differs on %r: ours %r, SGLang's %r" % (key, line, rec.get(key), value))
        if not isinstance(rec.get("accept_len"), float) or not isinstance(rec.get("accept_rate"), float):
            sys.exit("ours lacks accept len/rate on %r" % line)
    return matched


def real_lines(folder: str = REAL_LOGS) -> list:
    """``(era, line, expected record)`` for each single-line record of interest in the real
    fixture set (format: the folder's README.md)."""
    out = []
    for path in sorted(glob.glob(os.path.join(folder, "*.log"))):
        era, default, pending = "?", {}, []
        with open(path, encoding="utf-8") as f:
            for raw in f.read().split("\n"):
                if raw.startswith("# era: "):
                    era = raw[len("# era: "):].split(" (")[0]
                elif raw.startswith("#default "):
                    default = json.loads(raw[len("#default "):])
                elif raw.startswith("#> "):
                    expected = json.loads(raw[3:])
                    if expected is not None and len(pending) == 1:
                        merged = {k: v for k, v in {**default, **expected}.items() if v != "absent"}
                        out.append((era, pending[0], merged))
                    pending = []
                elif not raw.startswith("# "):
                    pending.append(raw)
    return out


def coverage(parse=parse_line, folder: str = REAL_LOGS) -> dict:
    """Per era, ``[lines read as expected, lines of interest]``: read as expected means the
    record has the expected kind, time and every expected field with the expected value."""
    by_era: dict = {}
    for era, line, expected in real_lines(folder):
        counts = by_era.setdefault(era, [0, 0])
        counts[1] += 1
        rec = parse(line)
        if rec is not None and all(
            rec.get(k, KeyError) == v or (isinstance(v, float) and abs(rec.get(k, 1e300) - v) < 1e-9)
            for k, v in expected.items()
        ):
            counts[0] += 1
    return by_era


def check_batch(lines, poll: int) -> None:
    """The timed batch call gives, in order, the records parse_line gives line by line."""
    one_by_one = [rec for rec in map(parse_line, lines) if rec is not None]
    feeder = LogFeeder()
    batched = []
    for at in range(0, len(lines), poll):
        batched += feeder.feed_lines(lines[at:at + poll])
    batched += feeder.flush()
    if [list(r.items()) for r in batched] != [list(r.items()) for r in one_by_one]:
        sys.exit("LogFeeder.feed_lines and parse_line disagree")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheel", help="an sglang wheel to read _PATTERN_DECODE from")
    ap.add_argument("--lines", type=int, default=40000)
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--poll", type=int, default=256, help="lines per LogFeeder.feed_lines call")
    args = ap.parse_args(argv)
    poll = max(1, args.poll)

    source, origin = load_pattern(args.wheel)
    pattern = re.compile(source)
    lines = make_lines(args.lines)
    kinds = {"decode": 0, "prefill": 0, "other": 0}
    for line in lines:
        kinds["decode" if "Decode batch" in line else "prefill" if "Prefill batch" in line else "other"] += 1
    matched = check_agreement(pattern, lines)
    check_batch(lines, poll)

    # One parser per way of calling it, kept over the repeats as the agent keeps a log's
    # feeder: the first repeat learns the shapes and fills the value cache.
    parsers = {way: LogParser() for way in ("batch", "line", "feed")}
    theirs, ours, by_line, fed = [], [], [], []
    for i in range(max(1, args.repeats)):
        if i % 2:
            ours.append(time_ours(lines, poll, parsers["batch"]))
            theirs.append(time_theirs(pattern, lines))
        else:
            theirs.append(time_theirs(pattern, lines))
            ours.append(time_ours(lines, poll, parsers["batch"]))
        by_line.append(time_parse_line(lines, parsers["line"]))
        fed.append(time_feed(lines, parsers["feed"]))

    # Per kind of line (informative: where each side spends its time).
    by_kind = {}
    for kind, needle in (("decode", "Decode batch"), ("prefill", "Prefill batch"), ("other", None)):
        subset = [line for line in lines if (needle in line if needle else "batch" not in line)]
        t_best = o_best = float("inf")
        for _ in range(max(1, args.repeats)):
            t_best = min(t_best, time_theirs(pattern, subset))
            o_best = min(o_best, time_ours(subset, poll, parsers["batch"]))
        by_kind[kind] = (t_best / len(subset) * 1e6, o_best / len(subset) * 1e6)

    n = len(lines)
    theirs_rate = n / min(theirs)
    ours_rate = n / min(ours)
    print("Python: %s %s (the host's Python runs the agent's parser; run this under it)"
          % (platform.python_implementation(), platform.python_version()))
    print("SGLang regex: %s" % origin)
    print("lines: %d (decode %d, prefill %d, other %d); SGLang's regex matches %d, ours agrees on all"
          % (n, kinds["decode"], kinds["prefill"], kinds["other"], matched))
    print("best of %d, interleaved:" % len(theirs))
    print("  SGLang _PATTERN_DECODE, re.search per line, match only    %10.0f lines/s" % theirs_rate)
    print("  spectui LogFeeder.feed_lines, %4d lines a call, records   %10.0f lines/s" % (poll, ours_rate))
    print("not in the ratio:")
    print("  spectui LogParser.parse_line per line, records           %10.0f lines/s" % (n / min(by_line)))
    print("  spectui LogFeeder.feed per line, records                  %10.0f lines/s" % (n / min(fed)))
    print("per line, by kind (microseconds, SGLang re.search / spectui feed_lines):")
    for kind, (t_us, o_us) in by_kind.items():
        print("  %-8s %6.2f / %6.2f" % (kind, t_us, o_us))
    cover = coverage()
    if cover:
        read = sum(c[0] for c in cover.values())
        total = sum(c[1] for c in cover.values())
        print("coverage of real SGLang lines (tests/fixtures/real/logs), read as expected / of interest:")
        for era, (ok, n) in sorted(cover.items()):
            print("  %-55s %3d / %3d" % (era, ok, n))
        print("  %-55s %3d / %3d" % ("all", read, total))
    print("ratio ours/SGLang: %.2f" % (ours_rate / theirs_rate))
    return 0 if ours_rate >= theirs_rate else 1


if __name__ == "__main__":
    sys.exit(main())
