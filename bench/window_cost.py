"""What a server frame's windows cost the agent, against reading the /metrics text they come from.

Every server frame the agent reads the server's /metrics (``parse_metrics``), keeps the read in a
minute-long window (``MetricsWindow.add``) and reports the increases over its 2 s, 5 s and 30 s
spans (``stats_over``). At 10 Hz a full window holds 600 reads. Timed in the same run, as the best
of ``--repeats``, interleaved:

* the anchor: ``parse_metrics`` of a real sglang 0.5.23 /metrics text
  (``tests/fixtures/logs/sglang_0523_metrics_t1.prom``, with where it comes from in its head);
* the windows: one ``add`` and the three ``stats_over`` of a frame, on a full window of reads of
  that text with its counters and histograms advancing from read to read;
* for comparison, a frame as the agent computed it before: every step summed over the whole minute
  (which ``update`` computed and the frame dropped) and over each of the three spans.

    python3 bench/window_cost.py [--hz 10] [--repeats 7] [--frames 200]

Floor: the windows cost less than the parse they follow.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spectui.agent.servers import metrics as m  # noqa: E402
from spectui.agent.servers.figures import HISTORY_S, LONG_SPAN_S, RATE_SPAN_S, STREAM_SPAN_S  # noqa: E402

SCRIPT = "window_cost"
TEXT = ROOT / "tests" / "fixtures" / "logs" / "sglang_0523_metrics_t1.prom"
SPANS = (RATE_SPAN_S, STREAM_SPAN_S, LONG_SPAN_S)


def advanced(base: m.MetricsSnapshot, i: int, at: float) -> m.MetricsSnapshot:
    """``base`` after ``i`` steps of a server serving: counters up, a few observations per histogram."""
    counters = {name: value + 7.0 * i for name, value in base.counters.items()}
    histograms = {}
    for name, h in base.histograms.items():
        buckets = [(le, c + (i * 3 if k >= len(h.buckets) // 2 else i)) for k, (le, c) in enumerate(h.buckets)]
        histograms[name] = m.Histogram(buckets, buckets[-1][1], (h.sum or 0.0) + 0.04 * i)
    return m.MetricsSnapshot(at, dict(base.gauges), counters, histograms, base.gauge_series)


def best(fn, frames: int) -> float:
    t0 = time.perf_counter()
    for _ in range(frames):
        fn()
    return (time.perf_counter() - t0) / frames


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hz", type=float, default=10.0, help="server frames per second (default 10)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--frames", type=int, default=200, help="frames timed per repeat")
    args = ap.parse_args()
    text = TEXT.read_text()
    base = m.parse_metrics(text, taken_at=0.0)
    n = int(HISTORY_S * args.hz)
    reads = [advanced(base, i, i / args.hz) for i in range(n + args.frames * args.repeats)]
    window = m.MetricsWindow(span_s=HISTORY_S)
    for snap in reads[:n]:
        window.add(snap)
    extra = iter(reads[n:])

    def parse() -> None:
        m.parse_metrics(text, taken_at=0.0)

    def windows() -> None:
        window.add(next(extra))
        for span in SPANS:
            window.stats_over(span)

    def stepwise() -> None:
        snaps = window.snapshots
        end = snaps[-1].taken_at
        for span in (HISTORY_S,) + SPANS:
            chosen = [s for s in snaps if end - s.taken_at <= span + 1e-6]
            names = sorted(set(m.COUNTERS).union(*(s.counters for s in chosen)))
            hnames = sorted(set(m.HISTOGRAMS).union(*(s.histograms for s in chosen)))
            m._sum_steps(chosen, names, hnames, {}, {})

    times = {"parse": [], "windows": [], "stepwise": []}
    for r in range(args.repeats):
        order = [("parse", parse), ("windows", windows), ("stepwise", stepwise)]
        for name, fn in (order if r % 2 == 0 else order[::-1]):
            times[name].append(best(fn, args.frames))
    p, w, s = (min(times[k]) for k in ("parse", "windows", "stepwise"))
    print(f"{SCRIPT}: {len(window.snapshots)} reads in the window ({HISTORY_S:g} s at {args.hz:g} Hz), "
          f"spans {', '.join('%g s' % x for x in SPANS)}; best of {args.repeats} x {args.frames} frames")
    print(f"{SCRIPT}: parse_metrics (anchor)             {p * 1e3:8.3f} ms per frame")
    print(f"{SCRIPT}: add + three stats_over            {w * 1e3:8.3f} ms per frame   ratio {w / p:6.3f} of the parse")
    print(f"{SCRIPT}: before: every step, minute + spans {s * 1e3:8.3f} ms per frame   ratio {s / p:6.3f} of the parse")
    print(f"{SCRIPT}: at {args.hz:g} Hz the windows take {w * args.hz * 100:.2f}% of a core "
          f"(before: {s * args.hz * 100:.1f}%)")
    ok = w < p
    print(f"{SCRIPT}: floor: the windows cost less than the parse: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
