"""The source browser's search against ``grep -rnE``, over the whole SGLang 0.5.23 package.

For each pattern, in the same run and on the same tree: spectui's search, asked through a
running agent and timed from the request until every hit has arrived in the client (the
hits stream as events, then a summary reply), against ``grep -rnE PATTERN .`` with its output
read through a pipe (``LC_ALL=C``, its fastest mode). Each is timed as the best of N repeats,
the two interleaved and alternating which goes first. The hit sets are compared too: the
same ``file:line`` pairs, less the binary files grep reports as "Binary file ... matches"
(the browser skips binaries).

    python bench/grep_speed.py [--tree PATH] [--repeats 5] [--via ssh]

The tree is SGLang 0.5.23's published wheel, fetched with pip and unpacked into spectui's
cache by the same code as ``spectui source --demo --fetch``, unless ``--tree`` names one.
Floor: within 2x of grep for every pattern that holds a literal or a selective run of byte
classes, results included; every pattern must give the same hits as grep. A pattern with
neither (``\\bw\\b``) is reported, not floored: there the regex runs over every byte.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spectui.core.session import HostTarget, open_session  # noqa: E402
from spectui.core.source import fetch_sglang_source, open_browser  # noqa: E402

PATTERNS = [
    r"class [A-Za-z_]+Worker",            # a definition search
    r"speculative_num_draft_tokens",      # a plain identifier
    r"NGRAM|EAGLE3",                      # an alternation
    r"def (is|has)_[a-z]+\(self\)",       # predicates
    r"[Ee]agle",                          # a class, 1200 hits
    r"^import torch$",                    # anchored at both ends, 2900 hits
    r"^\s*@triton\.jit",                  # decorators
    r"[0-9]{6,}",                         # no literal: a run of byte classes
    r"\w+\s*=\s*\w+\(\)$",                 # a short literal at the end of the line
    r"^@",                                # top-level decorators, 5200 hits
]
# No literal and no selective run of byte classes: the regex must run over every byte of every
# file, where Python's backtracking engine cannot keep up with grep's DFA. Reported, not floored.
UNFLOORED = [
    r"\bw\b",                             # a one-letter word
]
FLOOR = 2.0
MAX_HITS = 20000


def grep_hits(tree: Path, pattern: str) -> tuple[set, float]:
    t0 = time.perf_counter()
    out = subprocess.run(["grep", "-rnE", pattern, "."], cwd=tree, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=dict(os.environ, LC_ALL="C")).stdout
    dt = time.perf_counter() - t0
    hits = set()
    for line in out.split(b"\n"):
        if line.startswith(b"./"):
            path, num, _ = line[2:].split(b":", 2)
            hits.add((path.decode("utf-8", "replace"), int(num)))
    return hits, dt


async def spectui_hits(browser, pattern: str) -> tuple[set, float, object]:
    got = []
    t0 = time.perf_counter()
    r = await browser.grep(pattern, max_hits=MAX_HITS, on_hits=got.extend)
    dt = time.perf_counter() - t0
    if r.truncated:
        raise SystemExit(f"{pattern!r} has more than {MAX_HITS} hits: pick a narrower pattern")
    return {(h.path, h.line) for h in got}, dt, r


async def run(args) -> int:
    tree = Path(args.tree) if args.tree else fetch_sglang_source("0.5.23")
    files = sum(len(f) for _, _, f in os.walk(tree))
    size = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file() and not p.is_symlink())
    with tempfile.TemporaryDirectory() as tmp:
        if args.via == "ssh":
            from spectui.core.transport.ssh import SshOptions
            from tests.support.sshd import LoopbackSshd

            sshd = LoopbackSshd(Path(tmp) / "sshd").start()
            sshd.trust_host_key()
            target = HostTarget(kind="ssh", destination=sshd.dest, python=sys.executable, state_dir=tmp,
                                ssh=SshOptions(config_file=str(sshd.ssh_config), known_hosts=str(sshd.known_hosts),
                                               identity_files=[str(sshd.client_key)]))
        else:
            sshd = None
            target = HostTarget(kind="local", python=sys.executable, state_dir=tmp)
        session = await open_session(target)
        try:
            browser = await open_browser(session, sglang_root=str(tree))
            print(f"tree: {tree} ({browser.info.label}): {files} files, {size / 2**20:.0f} MiB; "
                  f"agent over {args.via}; best of {args.repeats}")
            print(f"{'pattern':<32}{'hits':>7}{'spectui s':>11}{'grep s':>9}{'ratio':>8}  same hits")
            worst = 0.0
            ok = True
            for pattern in PATTERNS + UNFLOORED:
                grep_hits(tree, pattern)  # warm the page cache for both
                ours_t, grep_t = [], []
                ours = theirs = None
                for i in range(args.repeats):
                    order = (0, 1) if i % 2 == 0 else (1, 0)
                    for which in order:
                        if which == 0:
                            ours, dt, _ = await spectui_hits(browser, pattern)
                            ours_t.append(dt)
                        else:
                            theirs, dt = grep_hits(tree, pattern)
                            grep_t.append(dt)
                a, g = min(ours_t), min(grep_t)
                ratio = a / g
                same = ours == theirs
                floored = pattern not in UNFLOORED
                if floored:
                    worst = max(worst, ratio)
                ok = ok and same and (ratio <= FLOOR or not floored)
                print(f"{pattern:<32}{len(ours):>7}{a:>11.3f}{g:>9.3f}{ratio:>7.2f}x  {'yes' if same else 'NO'}"
                      f"   (median {statistics.median(ours_t):.3f} / {statistics.median(grep_t):.3f})"
                      + ("" if floored else "  [no literal: outside the floor]"))
        finally:
            await session.close()
            if sshd is not None:
                sshd.stop()
    print(f"worst ratio {worst:.2f}x (floored patterns); floor: within {FLOOR:g}x of grep -rnE with the same hits: "
          f"{'met' if ok else 'NOT met'}")
    return 0 if ok else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", help="an unpacked sglang package to search (default: 0.5.23's wheel, fetched)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--via", choices=("local", "ssh"), default="local",
                    help="run the agent locally (default) or over a loopback sshd")
    return asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
