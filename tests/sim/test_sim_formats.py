"""Log lines of each era and the cost model, checked against the shapes SGLang's releases print (tests/sim/shapes.py)."""

import re

import pytest

from spectui.sim.hardware import cost_model
from spectui.sim.logfmt import LogFormat, SimLogger
from tests.sim.shapes import decode_re, prefill_re

@pytest.mark.parametrize("era", ["0.4", "2025", "0.5.23"])
@pytest.mark.parametrize("spec", [False, True])
def test_decode_line_of_each_era(era, spec):
    fmt = LogFormat(era)
    line = fmt.decode(running=1, num_token=290, token_usage=0.0, spec=spec, accept_len=1.45, accept_rate=0.18,
                      cuda_graph=True, gen_throughput=41.2, queue=0)
    assert decode_re(era, spec).match(line), line
    for other in ("0.4", "2025", "0.5.23"):
        if other != era:
            assert not decode_re(other, spec).match(line), (other, line)


def test_lines_match_the_releases_f_strings_exactly():
    # sglang 0.4.6.post5 wheel, sglang/srt/managers/scheduler.py:1201-1225: "cuda graph" with or
    # without speculation, no trailing comma
    assert LogFormat("0.4").decode(1, 234, 0.0, False, 0, 0, True, 82.10, 0) == (
        "Decode batch. #running-req: 1, #token: 234, token usage: 0.00, cuda graph: True, "
        "gen throughput (token/s): 82.10, #queue-req: 0")
    assert LogFormat("0.4").decode(1, 290, 0.0, True, 1.45, 0, True, 41.20, 0) == (
        "Decode batch. #running-req: 1, #token: 290, token usage: 0.00, accept len: 1.45, cuda graph: True, "
        "gen throughput (token/s): 41.20, #queue-req: 0")
    # same wheel, scheduler.py:1145-1161
    assert LogFormat("0.4").prefill(1, 31, 0, 31, 0.0, 0, 0, 10.0) == (
        "Prefill batch. #new-seq: 1, #new-token: 31, #cached-token: 0, token usage: 0.00, "
        "#running-req: 0, #queue-req: 0")
    # sglang 0.5.23 wheel, sglang/srt/managers/scheduler_components/metrics_reporter.py:753-783: no "#token:"
    assert LogFormat("0.5.23").prefill(1, 31, 0, 31, 0.0, 0, 0, 10.0) == (
        "Prefill batch, #new-seq: 1, #new-token: 31, #cached-token: 0, token usage: 0.00, "
        "#running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 10.00")


@pytest.mark.parametrize("era", ["0.4", "2025", "0.5.23"])
def test_prefill_line_of_each_era(era):
    line = LogFormat(era).prefill(2, 400, 32, 432, 0.01, 1, 3, 1234.5)
    assert prefill_re(era).match(line), line


def test_accept_rate_formulas_by_era():
    # 10 verify steps, 8 draft tokens, 4 correct drafts: 14 tokens accepted with the bonus tokens
    assert LogFormat("2025").accept_rate(14, 4, 10, 8) == pytest.approx(14 / 80)
    assert LogFormat("0.4").accept_rate(14, 4, 10, 8) == pytest.approx(14 / 80)
    assert LogFormat("0.5.23").accept_rate(14, 4, 10, 8) == pytest.approx(4 / 70)
    assert LogFormat("0.5.23").accept_rate(0, 0, 0, 8) == 0.0


def test_meta_info_names_by_era():
    new = LogFormat("0.5.23").spec_meta(verify_ct=10, completion_tokens=20, correct=10, num_draft_tokens=4,
                                        histogram=[2, 6, 2])
    assert new == {"spec_accept_rate": 10 / 30, "spec_accept_length": 2.0, "spec_num_correct_drafts": 10,
                   "spec_num_proposed_drafts": 30, "spec_verify_ct": 10, "spec_correct_drafts_histogram": [2, 6, 2]}
    old = LogFormat("2025").spec_meta(10, 20, 10, 4, [2, 6, 2])
    assert set(old) == {"spec_accept_rate", "spec_accept_length", "spec_accepted_drafts", "spec_proposed_drafts",
                        "spec_verify_ct", "spec_accept_histogram"}


def test_log_prefix_carries_rank_only_for_multi_rank_servers(monkeypatch):
    monkeypatch.delenv("SGLANG_LOG_MS", raising=False)
    assert re.fullmatch(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d TP3\] ", SimLogger(tp_size=8).prefix(3))
    assert re.fullmatch(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] ", SimLogger(tp_size=1).prefix(0))
    assert re.fullmatch(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} TP0\] ", SimLogger(tp_size=2, millis=True).prefix(0))


def test_cost_model_reproduces_the_story_figures():
    pcie = cost_model("pcie-8gpu")
    assert pcie.decode_ms(1) == pytest.approx(12.2, abs=0.05)  # 82 tok/s
    assert 28.0 <= pcie.verify_ms(1, 4) <= 34.0  # "verify about 30 ms"
    ar8 = pcie.verify_ms(1, 8) - pcie.p.weights_ms - 8 * pcie.p.token_ms
    assert 23.0 <= ar8 <= 26.0  # "about 25 ms of NCCL all-reduce"
    assert pcie.break_even_accept_length("EAGLE3", 3, 1, 4) == pytest.approx(2.7, abs=0.15)
    nvlink = cost_model("nvlink-8gpu")
    assert nvlink.break_even_accept_length("EAGLE3", 3, 1, 4) < 1.6
    # batch growth: decode stays memory-bound, verification grows with the tokens verified
    assert pcie.decode_ms(32) < 1.2 * pcie.decode_ms(1)
    assert pcie.verify_ms(32, 4) > 1.5 * pcie.verify_ms(1, 4)
    single = cost_model("pcie-8gpu", tp_size=1, weights_gb=16)
    assert single.ar_scale == 0 and single.decode_ms(1) < pcie.decode_ms(1)
