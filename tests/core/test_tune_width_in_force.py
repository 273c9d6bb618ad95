"""Tune and the probe's L* predict the width a server runs now (``sglang:spec_num_draft_tokens``), not the
launch flag, when a live frame of that server carries one; without one they say they used the launch flag."""

from __future__ import annotations

from spectui.core.probe.predict import StepCosts, predict_for_settings
from spectui.core.server_frames import LAUNCH_FLAG, WIDTH_IN_FORCE, ServerFrame
from spectui.core.tune import SpecSetting, measured_from_runs
from spectui.core.tune.sweep import predict_variants
from tests.core.test_tune_predict import STORY, STORY_COSTS, _run

LAUNCH = {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4}


def frame(steps=1, tokens=2):
    width = {"steps": steps, "draft_tokens": tokens, "source": "sglang:spec_num_draft_tokens", "read_at": 5.0}
    return ServerFrame.from_event({"name": "kimi-eagle3", "t": 5.0, "speculative": LAUNCH, "width_now": width}, 6.0)


def without_width():
    return ServerFrame.from_event({"name": "kimi-eagle3", "t": 5.0, "speculative": LAUNCH}, 6.0)


def test_the_measured_setting_is_the_width_in_force():
    runs = [_run(1, 30.0, [2, 1], LAUNCH)]
    live = measured_from_runs(runs, frame=frame())
    assert live.setting == SpecSetting.chain("EAGLE3", 1)
    assert live.setting_source == WIDTH_IN_FORCE
    launch = measured_from_runs(runs, frame=without_width())
    assert launch.setting == SpecSetting.chain("EAGLE3", 3) and launch.setting_source == LAUNCH_FLAG
    assert measured_from_runs(runs).setting_source == LAUNCH_FLAG


class _Profile:
    name = "kimi-eagle3"

    @staticmethod
    def speculative_settings():
        return dict(LAUNCH)


def test_variant_predictions_use_the_width_in_force_of_the_running_server():
    measured = measured_from_runs([_run(1, 30.0, [4, 3, 2, 1], LAUNCH)])
    (live,) = predict_variants(measured, STORY, [("kimi-eagle3", _Profile())], [1], STORY_COSTS,
                               frames={"kimi-eagle3": frame(2, 3)})
    assert live.setting == SpecSetting.chain("EAGLE3", 2) and live.setting_source == WIDTH_IN_FORCE
    (launch,) = predict_variants(measured, STORY, [("kimi-eagle3", _Profile())], [1], STORY_COSTS)
    assert launch.setting == SpecSetting.chain("EAGLE3", 3) and launch.setting_source == LAUNCH_FLAG


def test_the_probe_break_even_is_of_the_width_in_force():
    costs = StepCosts(decode_step_ms=12.2, token_ms=0.1, draft_step_ms=0.5)
    live = predict_for_settings(STORY, LAUNCH, costs, frame=frame(1, 2))
    assert (live.num_steps, live.draft_tokens, live.width_source) == (1, 2, WIDTH_IN_FORCE)
    launch = predict_for_settings(STORY, LAUNCH, costs, frame=without_width())
    assert (launch.num_steps, launch.draft_tokens, launch.width_source) == (3, 4, LAUNCH_FLAG)
