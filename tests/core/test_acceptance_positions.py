"""Acceptance per draft position from correct-drafts histograms (spectui.core.tune.acceptance.positions),
against values computed by hand."""

from __future__ import annotations

import pytest

from spectui.core.tune.acceptance import HistogramError, accept_length, pooled, position_acceptance, positions, width_of

# 10 verify steps: 2 with no correct draft, 3 with one, 4 with two, 1 with three.
H = [2, 3, 4, 1]


def test_position_acceptance_by_hand():
    # P(1) = (3+4+1)/10, P(2) = (4+1)/10, P(3) = 1/10, P(4) = 0 (a width-4 setting never got 4 right)
    assert position_acceptance(H, 4) == pytest.approx([0.8, 0.5, 0.1, 0.0])


def test_accept_length_and_marginal_position():
    # decode step 10 ms: gains 8, 5, 1 ms per step; one more position costs 2 ms of verify -> the 3rd
    # position (1 ms) does not pay, the 2nd (5 ms) does
    p = positions(H, width=3, decode_ms=10.0, position_ms=2.0)
    assert p.accepted == pytest.approx((0.8, 0.5, 0.1))
    assert p.accept_length == pytest.approx(2.4)  # 1 + (0*2 + 1*3 + 2*4 + 3*1) / 10
    assert p.accept_length == pytest.approx(accept_length(H))
    assert p.gain_ms == pytest.approx((8.0, 5.0, 1.0))
    assert (p.marginal, p.verify_steps) == (2, 10)
    assert positions(H, 3, 10.0, 5.0).marginal == 2  # 5 ms >= 5 ms: exactly paying still pays
    assert positions(H, 3, 10.0, 6.0).marginal == 1
    assert positions(H, 3, 10.0, 9.0).marginal == 0  # not even the first position pays


def test_many_histograms_are_pooled():
    # [1,1] + [1,0,2] = [2,1,2]: 5 steps, P(1) = 3/5, P(2) = 2/5
    many = [[1, 1], [1, 0, 2]]
    assert pooled(many) == [2, 1, 2]
    p = positions(many, width=2, decode_ms=4.0, position_ms=2.0)
    assert p.accepted == pytest.approx((0.6, 0.4))
    assert p.accept_length == pytest.approx(2.0)
    assert p.marginal == 1  # gains 2.4 and 1.6 ms against 2 ms


def test_width_from_meta_info_and_bad_input():
    metas = [{"spec_num_proposed_drafts": 30, "spec_verify_ct": 10, "spec_correct_drafts_histogram": [1, 9]},
             {"spec_num_proposed_drafts": 9, "spec_verify_ct": 3}, {"prompt_tokens": 4}]
    assert width_of(metas) == 3
    with pytest.raises(HistogramError, match="one draft width"):
        width_of(metas + [{"spec_num_proposed_drafts": 8, "spec_verify_ct": 4}])
    with pytest.raises(HistogramError, match="more than the 2 drafts"):
        positions(H, width=2, decode_ms=10.0, position_ms=1.0)
    with pytest.raises(HistogramError, match="no verify steps"):
        positions([0, 0], width=2, decode_ms=10.0, position_ms=1.0)
