"""``--sweep`` parsing, variant profiles and their names, and SGLang 0.5.23's consistency rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from spectui.core.profiles import FlagSet, ProfileLayer, load_profiles
from spectui.core.profiles.flags import FlagInfo
from spectui.core.tune import TuneError, build_variants, parse_sweep, sglang_adjustments

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shipped():
    return load_profiles(layers=[ProfileLayer("shipped", (ROOT / "spectui" / "data" / "profiles",))])


def test_flags_with_or_without_the_speculative_prefix():
    axes = parse_sweep(["num-draft-tokens=3,4,8", "--speculative-num-steps=1..3", "mem_fraction_static=0.8,0.85",
                        "speculative-ngram-match-type=BFS,PROB", "enable-metrics=true,false"])
    assert [(a.flag, a.values) for a in axes] == [
        ("speculative-num-draft-tokens", (3, 4, 8)),
        ("speculative-num-steps", (1, 2, 3)),
        ("mem-fraction-static", (0.8, 0.85)),
        ("speculative-ngram-match-type", ("BFS", "PROB")),
        ("enable-metrics", (True, False)),
    ]


@pytest.mark.parametrize("text, message", [
    ("num-draft-tokens", "write FLAG=V1,V2"),
    ("=3,4", "write FLAG=V1,V2"),
    ("num-draft-tokens=3,,4", "empty value"),
    ("num-draft-tokens=4,4", "given twice"),
    ("num-steps=5..2", "runs backwards"),
    ("num steps=1", "not a flag name"),
])
def test_bad_sweeps_end_in_one_sentence(text, message):
    with pytest.raises(TuneError, match=message) as exc:
        parse_sweep([text])
    assert "\n" not in str(exc.value)


def test_a_flag_twice_and_a_flag_the_host_lacks():
    with pytest.raises(TuneError, match="twice"):
        parse_sweep(["num-steps=1", "speculative-num-steps=2"])
    host = FlagSet()
    for name in ("--speculative-num-steps", "--speculative-num-draft-tokens", "--tp-size"):
        host.add(FlagInfo(name=name))
    assert parse_sweep(["num-steps=2"], host_flags=host)[0].flag == "speculative-num-steps"
    with pytest.raises(TuneError, match="did you mean speculative-num-draft-tokens"):
        parse_sweep(["num-draft-token=3"], host_flags=host)


def test_variants_have_a_display_name_and_a_server_safe_name(shipped):
    base = shipped.get("kimi-ngram")
    variants = build_variants(base, parse_sweep(["num-draft-tokens=3,4"]))
    assert [v.display_name for v in variants] == ["kimi-ngram[num-draft-tokens=3]", "kimi-ngram[num-draft-tokens=4]"]
    assert [v.server_name for v in variants] == ["kimi-ngram.ndt3", "kimi-ngram.ndt4"]
    v = variants[0]
    assert v.profile.args["speculative-num-draft-tokens"] == 3
    assert v.profile.args["speculative-algorithm"] == "NGRAM"
    assert v.profile.extends == "kimi-ngram"
    assert v.profile.content_hash != base.content_hash != variants[1].profile.content_hash
    assert base.args["speculative-num-draft-tokens"] == 8     # the base is untouched
    assert v.problems == ()


def test_several_flags_give_their_product_in_order(shipped):
    variants = build_variants(shipped.get("kimi-eagle3"),
                              parse_sweep(["num-steps=1,2", "num-draft-tokens=2,3", "ngram-match-type=BFS"]))
    assert [v.server_name for v in variants] == [
        "kimi-eagle3.ns1.ndt2.match-BFS", "kimi-eagle3.ns1.ndt3.match-BFS",
        "kimi-eagle3.ns2.ndt2.match-BFS", "kimi-eagle3.ns2.ndt3.match-BFS"]
    assert variants[1].display_name == "kimi-eagle3[num-steps=1,num-draft-tokens=3,ngram-match-type=BFS]"
    # topk 1: SGLang makes draft tokens = steps + 1, so (1, 3) and (2, 2) are changed, (1, 2) and (2, 3) not
    assert [bool(v.problems) for v in variants] == [False, True, True, False]
    assert "changes speculative-num-draft-tokens 3 to 2" in variants[1].problems[0]


def test_eagle_steps_alone_are_flagged_when_draft_tokens_stay(shipped):
    v = build_variants(shipped.get("kimi-eagle3"), parse_sweep(["num-steps=5"]))[0]
    assert v.problems == ("SGLang changes speculative-num-draft-tokens 4 to 6: with topk 1 a chain of 5 steps "
                          "verifies 6 positions (speculative_hook.py:1255-1266)",)


def test_sglang_rules_for_ngram_adaptive_and_dflash():
    ngram = sglang_adjustments({"speculative-algorithm": "NGRAM", "speculative-eagle-topk": 4})
    assert len(ngram) == 1 and "speculative-ngram-max-bfs-breadth" in ngram[0]
    refused = sglang_adjustments({"speculative-algorithm": "EAGLE3", "speculative-adaptive": True,
                                  "speculative-num-steps": 2})
    assert any("refuses speculative-num-steps 2" in s for s in refused)
    assert sglang_adjustments({"speculative-algorithm": "EAGLE3", "speculative-adaptive": True,
                               "speculative-num-steps": 3}) == ()
    assert any("turns speculative-adaptive off" in s for s in sglang_adjustments(
        {"speculative-algorithm": "EAGLE3", "speculative-adaptive": True, "speculative-num-steps": 3,
         "speculative-eagle-topk": 4, "speculative-num-draft-tokens": 8}))
    assert sglang_adjustments({"speculative-algorithm": "DFLASH", "speculative-num-steps": 3}) == (
        "SGLang overrides speculative-num-steps 3 to 1 for DFLASH (speculative_hook.py:334-366)",)
    assert any("without speculative-num-steps" in s for s in sglang_adjustments(
        {"speculative-algorithm": "EAGLE", "speculative-num-draft-tokens": 4}))
    assert sglang_adjustments({"tp-size": 8}) == ()


def test_too_many_or_clashing_variants_are_refused(shipped):
    with pytest.raises(TuneError, match="more than 64"):
        build_variants(shipped.get("kimi-ngram"), parse_sweep(["num-draft-tokens=1..9", "ngram-capacity=1..8"]))
    with pytest.raises(TuneError, match="both be named"):
        build_variants(shipped.get("kimi-ngram"), parse_sweep(["draft-model-path=a/b,a_b"]))
