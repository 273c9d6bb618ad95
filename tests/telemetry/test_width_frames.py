"""The console's view of the draft width in force: ``width_now`` and ``width_changes`` parsed from a
``server_frame`` event, and nothing (not a traceback) from an agent that sends none or a malformed one."""

from __future__ import annotations

from spectui.core.server_frames import LAUNCH_FLAG, WIDTH_IN_FORCE, DraftWidth, ServerFrame, settings_in_force

EVENT = {"name": "kimi-eagle3", "seq": 3, "t": 100.0, "state": "ready",
         "speculative": {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4},
         "width_now": {"steps": 1, "draft_tokens": 2, "source": "sglang:spec_num_draft_tokens", "read_at": 100.0},
         "width_changes": [{"t": 90.0, "old": {"steps": 3, "draft_tokens": 4}, "new": {"steps": 1, "draft_tokens": 2}}]}


def test_a_frame_exposes_the_width_in_force_and_its_changes():
    frame = ServerFrame.from_event(EVENT, 101.0)
    assert frame.width_now == DraftWidth(steps=1, draft_tokens=2, topk=None, read_at=100.0,
                                         source="sglang:spec_num_draft_tokens")
    (change,) = frame.width_changes
    assert change.at == 90.0 and change.old.steps == 3 and change.new.draft_tokens == 2


def test_no_width_from_an_agent_that_sends_none_or_a_malformed_one():
    plain = {k: v for k, v in EVENT.items() if not k.startswith("width")}
    assert ServerFrame.from_event(plain, 1.0).width_now is None
    assert ServerFrame.from_event(plain, 1.0).width_changes == ()
    bad = dict(EVENT, width_now={"steps": "many"}, width_changes=[{"t": "x"}, 7, None])
    frame = ServerFrame.from_event(bad, 1.0)
    assert frame.width_now is None and frame.width_changes == ()


def test_the_settings_in_force_prefer_the_live_width_and_name_their_source():
    launch = {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4}
    settings, source = settings_in_force(launch, ServerFrame.from_event(EVENT, 101.0))
    assert settings == {"algorithm": "EAGLE3", "num_steps": 1, "topk": 1, "draft_tokens": 2}
    assert source == WIDTH_IN_FORCE == "the width in force (sglang:spec_num_draft_tokens)"
    plain = {k: v for k, v in EVENT.items() if k != "width_now"}
    for frame in (None, ServerFrame.from_event(plain, 1.0)):
        assert settings_in_force(launch, frame) == (launch, LAUNCH_FLAG)
    assert LAUNCH_FLAG == "the launch flag"
