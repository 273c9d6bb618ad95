"""The why on the console: beside the predicted L*, the speculative panel says what a verify step and a decode step
cost and how much of each is all-reduce, from the probe's record, in one line a reader can repeat (the story's
"the verify step (30 ms, 25 ms of it all-reduce over PCIe) cost more than speculation saved")."""

from spectui.ui import snapshots
from tests.ui.test_bench_probe_views import PROBE
from tests.ui.test_panels import frame, link_with, shown
from spectui.ui.widgets.speculative import SpecPanel

T, VERIFY_COMM, DECODE_COMM, EXTRA_COMPUTE, DRAFTING = 12.2, 20.16, 3.15, 2.4, 2.7
FULL = dict(PROBE, prediction={"decode_comm_ms": DECODE_COMM, "decode_step_ms": T},
            profile_l_star=dict(PROBE["profile_l_star"], draft_tokens=4, verify_comm_ms=VERIFY_COMM,
                                extra_comm_ms=VERIFY_COMM - DECODE_COMM, extra_compute_ms=EXTRA_COMPUTE,
                                drafting_ms=DRAFTING))


def one_line(text: str) -> str:
    return " ".join(text.split())


async def test_the_panel_says_what_a_verify_and_a_decode_step_cost_and_their_all_reduce_share():
    link = link_with([frame(seq=i, accept=2.0) for i in range(1, 12)])
    view = snapshots.spec_view(link, "kimi-eagle3", None, None, "", snapshots.predicted_view(FULL))
    text, _ = await shown(SpecPanel(), view, size=(110, 24))
    verify = T + (VERIFY_COMM - DECODE_COMM) + EXTRA_COMPUTE + DRAFTING
    want = (f"why: a verify step (4 tokens) {verify:.1f} ms, {VERIFY_COMM:.1f} ms of it all-reduce "
            f"({100 * VERIFY_COMM / verify:.0f}%); a decode step {T:.1f} ms, {DECODE_COMM:.1f} ms all-reduce "
            f"({100 * DECODE_COMM / T:.0f}%)")
    assert want in one_line(text), text
    # at 80 columns the line wraps between its values, never cut
    text, _ = await shown(SpecPanel(), view, size=(80, 30))
    assert want in one_line(text), text


async def test_without_the_decode_step_time_the_why_names_the_all_reduce_alone():
    link = link_with([frame(seq=i, accept=2.0) for i in range(1, 12)])
    record = dict(FULL, prediction={"decode_comm_ms": DECODE_COMM, "decode_step_ms": None},
                  profile_l_star=dict(FULL["profile_l_star"], predicted=None, comm_only=None))
    view = snapshots.spec_view(link, "kimi-eagle3", None, None, "", snapshots.predicted_view(record))
    text, _ = await shown(SpecPanel(), view, size=(110, 24))
    assert (f"why: all-reduce {VERIFY_COMM:.1f} ms per verify step (4 tokens) against {DECODE_COMM:.1f} ms per "
            "decode step") in one_line(text), text
    # an older probe record without these fields shows no why line rather than a wrong one
    view = snapshots.spec_view(link, "kimi-eagle3", None, None, "", snapshots.predicted_view(PROBE))
    text, _ = await shown(SpecPanel(), view, size=(110, 24))
    assert "why:" not in text
