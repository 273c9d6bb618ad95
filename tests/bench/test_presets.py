"""Benchmark presets: the shipped ones, user ones, and mistakes pointed at file:line:col."""

import pytest

from spectui.core.bench.presets import PresetError, load_presets, preset_from_text


def test_shipped_presets(env, monkeypatch):
    monkeypatch.delenv("SPECTUI_PRESETS_PATH", raising=False)
    lib = load_presets()
    assert not lib.errors
    assert {"single-stream", "batch-16", "concurrency-sweep"} <= set(lib.presets)
    assert lib.get("single-stream").concurrency == (1,)
    assert lib.get("batch-16").concurrency == (16,)
    assert lib.get("concurrency-sweep").concurrency == (1, 2, 4, 8, 16, 32)
    assert lib.get("concurrency-sweep").sweep


def test_user_preset_overrides_a_shipped_one(env):
    (env["config"] / "presets").mkdir()
    (env["config"] / "presets" / "mine.yaml").write_text("name: single-stream\nnum-prompts: 2\nrequest-rate: 0.5\n")
    p = load_presets().get("single-stream")
    assert p.num_prompts == 2 and p.request_rate == 0.5 and p.source.endswith("mine.yaml")


@pytest.mark.parametrize("text, where, words", [
    ("name: a\nconcurency: 4\n", ":2:1", ["concurency", "did you mean 'concurrency'"]),
    ("name: a\nconcurrency: [1, 2, 0]\n", ":2:21", ["concurrency must be", "not 0"]),
    ("name: a\ndataset: reasonig\n", ":2:10", ["dataset must be random, reasoning, mt-bench, sharegpt or custom", "did you mean 'reasoning'"]),
    ("name: a\noutput-len: many\n", ":2:13", ["output-len must be a whole number"]),
    ("name: a\nrequest-rate: -1\n", ":2:15", ["request-rate must be"]),
    ("name: a\nconcurrency: [1, 2]\nrequest-rate: 3\n", ":2:14", ["one concurrency cap"]),
    ("dataset: random\n", ":1:1", ["no name"]),
    ("name: a\nname: b\n", ":2:1", ["appears twice"]),
    ("name: a\n  seed: [\n", ":2", ["invalid YAML"]),
])
def test_mistakes_name_file_line_and_column(text, where, words):
    with pytest.raises(PresetError) as e:
        preset_from_text(text, "p.yaml")
    msg = str(e.value)
    assert msg.startswith("p.yaml" + where), msg
    for w in words:
        assert w in msg, msg


def test_unknown_preset_name_suggests(env):
    with pytest.raises(PresetError) as e:
        load_presets().get("single-strem")
    assert "did you mean 'single-stream'" in str(e.value)


def test_round_trip_through_a_dict():
    p = preset_from_text("name: s\nconcurrency: [4, 1]\nseed: 3\n")
    assert p.concurrency == (1, 4)
    from spectui.core.bench.presets import Preset
    assert Preset.from_dict(p.to_dict()) == p
