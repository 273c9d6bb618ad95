"""A window's increases from its first and last reads agree with the step-by-step sum.

The agent keeps a minute of /metrics reads per server and, every frame, reports the increases over
its 2 s, 5 s and 30 s windows. Summing every step of a window each frame cost the agent half a core
at 10 Hz; where nothing odd happened to a metric inside the window (no reset, no series appearing or
vanishing, no ``_count``/``_sum`` coming or going), its increase is the last read less the first,
and only the odd metrics are summed step by step. Checked here against the step-by-step definition
on random sequences of reads with resets, gaps, bucket-bound changes and partial histograms, through
``window_stats`` and through a ``MetricsWindow`` fed one read at a time as the agent feeds it.
"""

import random

import pytest

from spectui.agent.servers import metrics as m
from spectui.agent.servers.metrics import Histogram, MetricsSnapshot, MetricsWindow, window_stats

BOUNDS = [0.01, 0.05, 0.1, 0.5, 1.0, float("inf")]
OTHER_BOUNDS = [0.02, 0.2, 2.0, float("inf")]


def stepwise(snapshots):
    """The definition: every consecutive pair's increase of every metric, summed (resets handled step by
    step), as the agent computed every window before."""
    counters, histograms = {}, {}
    names = sorted(set(m.COUNTERS).union(*(s.counters for s in snapshots)))
    hnames = sorted(set(m.HISTOGRAMS).union(*(s.histograms for s in snapshots)))
    resets = m._sum_steps(snapshots, names, hnames, counters, histograms)
    return counters, histograms, resets


class Server:
    """Counters and histograms of a server that serves, restarts, and sometimes drops a series."""

    def __init__(self, rng):
        self.rng = rng
        self.counters = {name: 0.0 for name in m.COUNTERS}
        self.counters["generation_tokens_total"] = 0.0
        self.hists = {name: [BOUNDS, [0.0] * len(BOUNDS), 0.0, 0.0] for name in m.HISTOGRAMS}

    def step(self, odd):
        rng = self.rng
        for name in self.counters:
            self.counters[name] += rng.choice((0, 1, 3, 17)) + rng.random()  # seconds counters are fractional
        for name, (bounds, counts, _, _) in self.hists.items():
            k = rng.randrange(4)
            for _ in range(k):
                at = rng.randrange(len(bounds))
                for i in range(at, len(bounds)):
                    counts[i] += 1
            self.hists[name][2] = counts[-1]
            self.hists[name][3] += rng.random() * k
        if odd and rng.random() < 0.08:  # a restart: everything from zero, sometimes with other buckets
            self.counters = {name: 0.0 for name in self.counters}
            bounds = rng.choice((BOUNDS, OTHER_BOUNDS))
            self.hists = {name: [bounds, [0.0] * len(bounds), 0.0, 0.0] for name in self.hists}

    def read(self, at, odd):
        rng = self.rng
        counters = {n: v for n, v in self.counters.items() if not (odd and rng.random() < 0.05)}
        if odd and rng.random() < 0.05:
            counters["spec_verify_calls_total"] = rng.random() * 3  # a counter that went down
        histograms = {}
        for name, (bounds, counts, count, total) in self.hists.items():
            if odd and rng.random() < 0.05:
                continue  # the series is missing from this read
            histograms[name] = Histogram(list(zip(bounds, counts)),
                                         None if odd and rng.random() < 0.05 else count,
                                         None if odd and rng.random() < 0.05 else total)
        return MetricsSnapshot(at, {}, counters, histograms, {})


def reads(seed, n, odd):
    rng = random.Random(seed)
    server = Server(rng)
    out = []
    for i in range(n):
        server.step(odd)
        out.append(server.read(i * 0.1, odd))
    return out


def same(got, want):
    gc, gh, gr = got
    wc, wh, wr = want
    assert gr == wr
    assert set(gc) == set(wc) and set(gh) == set(wh)
    for name in wc:
        assert gc[name] == (None if wc[name] is None else pytest.approx(wc[name], rel=1e-9, abs=1e-9)), name
    for name, w in wh.items():
        g = gh[name]
        if w is None:
            assert g is None, name
            continue
        assert [le for le, _ in g.buckets] == [le for le, _ in w.buckets], name
        assert [c for _, c in g.buckets] == pytest.approx([c for _, c in w.buckets]), name
        assert g.count == (None if w.count is None else pytest.approx(w.count)), name
        assert g.sum == (None if w.sum is None else pytest.approx(w.sum, rel=1e-9, abs=1e-9)), name


@pytest.mark.parametrize("odd", [False, True], ids=["steady", "resets-and-gaps"])
def test_window_increases_agree_with_the_step_by_step_sum(odd):
    for seed in range(12):
        snaps = reads(seed, 60, odd)
        for lo in range(0, 59, 7):
            window = snaps[lo:]
            same(m._pairs_increase(window), stepwise(window))


@pytest.mark.parametrize("odd", [False, True], ids=["steady", "resets-and-gaps"])
def test_a_window_fed_read_by_read_agrees_over_every_span(odd):
    for seed in range(8):
        window = MetricsWindow(span_s=3.0)
        for snap in reads(1000 + seed, 80, odd):
            window.add(snap)
            assert window.snapshots[-1] is snap and snap.taken_at - window.snapshots[0].taken_at <= 3.1
            if len(window.snapshots) < 2:
                continue
            for span in (0.2, 0.5, 2.0, 3.0):
                chosen = [s for s in window.snapshots if snap.taken_at - s.taken_at <= span + 1e-6]
                if len(chosen) < 2:
                    chosen = window.snapshots[-2:]
                got = window.stats_over(span)
                want = window_stats(*chosen)
                assert got.to_dict().keys() == want.to_dict().keys()
                for key, value in want.to_dict().items():
                    if isinstance(value, float):
                        assert getattr(got, key) == pytest.approx(value, rel=1e-9, abs=1e-9), key
                    elif not isinstance(value, Histogram):
                        assert getattr(got, key) == value, key
                same(m._pairs_increase(chosen), stepwise(chosen))


def test_a_steady_window_sums_no_step():
    """Where nothing is odd, no step's increase is computed: one increase per metric per window."""
    snaps = reads(7, 600, odd=False)
    window = MetricsWindow(span_s=60.0)
    for snap in snaps:
        window.add(snap)
    calls = []
    real = m.histogram_increase

    def counting(prev, cur):
        calls.append(1)
        return real(prev, cur)

    m.histogram_increase = counting
    try:
        window.stats_over(30.0)
    finally:
        m.histogram_increase = real
    assert len(calls) == len(m.HISTOGRAMS)
