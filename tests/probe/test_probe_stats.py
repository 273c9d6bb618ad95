"""Median, p99 and the combination of ranks, against values worked out by hand."""

import pytest

from spectui.agent.probe.stats import combine_ranks, percentile, summarize


def test_percentile_interpolates_linearly_between_ranks():
    assert percentile([4, 1, 3, 2], 50) == 2.5            # between 2 and 3
    assert percentile(list(range(1, 101)), 99) == pytest.approx(99.01)  # position 98.01 of 0..99
    assert percentile([7.0], 99) == 7.0
    assert percentile([1, 2, 3], 0) == 1 and percentile([1, 2, 3], 100) == 3


def test_summary_and_stability():
    s = summarize([1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    assert s["n"] == 8 and s["median_ms"] == 1.5 and s["min_ms"] == 1.0 and s["mean_ms"] == 1.5
    assert s["halves_median_ms"] == [1.0, 2.0] and s["stable"] is False   # the second half doubled
    steady = summarize([1.0, 1.05, 0.98, 1.02, 1.0, 1.03, 0.99, 1.01])
    assert steady["stable"] is True
    # sorted: 0.98 0.99 1.0 1.0 1.01 1.02 1.03 1.05; p99 at position 7 x 0.99 = 6.93
    assert steady["p99_ms"] == pytest.approx(1.03 + (1.05 - 1.03) * 0.93)


def test_combine_takes_the_slowest_rank_of_each_iteration():
    assert combine_ranks([[1, 5, 2], [3, 1, 2]]) == [3, 5, 2]
    with pytest.raises(ValueError, match="different iteration counts"):
        combine_ranks([[1, 2], [1]])
