"""Foreign requests longer than the run: in flight from before it to after it, they finish in no counter's increase
(SGLang counts a request, and its tokens, when it finishes), and only the samples of what the server runs see them.
The run is still marked, and says what it saw."""
from __future__ import annotations

from spectui.agent.bench.foreign import MARK_SHARE, foreign_load
from spectui.core.bench.table import foreign_detail, foreign_share


def snap(requests, tokens, prompt):
    return {"counters": {"num_requests_total": requests, "generation_tokens_total": tokens,
                         "prompt_tokens_total": prompt}}


def test_long_foreign_requests_that_finish_after_the_run_mark_it():
    own = {"requests": 8, "tokens": 384, "prompt_tokens": 256}
    before, after = snap(100, 5000, 3000), snap(108, 5384, 3256)  # the counters moved by the run's own only
    samples = [(4, 2)] * 20  # the server ran 4 while the run had 2 in flight: 2 were someone else's throughout
    load = foreign_load(before, after, own, samples)
    assert load["known"] and load["share"] == 0.0 and load["requests_share"] == 0.0
    assert load["in_flight"]["share"] == 0.5 and load["in_flight"]["max"] == 2
    assert load["marked"]
    run = {"foreign_load": load}
    detail = foreign_detail(run)
    assert detail.startswith("‡ shared its server: 50% of the requests the server ran while it measured (up to 2 "
                             "at once) were not this run's"), detail
    assert foreign_share(run) == 0.5


def test_a_quiet_run_with_a_rare_sample_skew_is_not_marked():
    own = {"requests": 8, "tokens": 384, "prompt_tokens": 256}
    before, after = snap(100, 5000, 3000), snap(108, 5384, 3256)
    samples = [(2, 2)] * 9 + [(3, 2)]  # one sample read the server a moment before the run's count dropped
    load = foreign_load(before, after, own, samples)
    assert load["in_flight"]["share"] > MARK_SHARE and not load["marked"]  # rare, not someone else's load
    assert foreign_detail({"foreign_load": load}).startswith("no foreign load")
