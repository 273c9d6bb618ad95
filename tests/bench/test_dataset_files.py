"""Prompts from dataset files in sglang.benchmark.serving's formats, and the MT-Bench set spectui ships."""

import hashlib
import json
from pathlib import Path

import pytest

from spectui.agent.bench.datasets import (
    DatasetFileError,
    load_file_prompts,
    read_prompt_file,
    sample_prompts,
)
from spectui.core.bench.datasets import PromptSet, make_prompts
from spectui.core.bench.presets import PresetError, preset_from_text

FIXTURES = Path(__file__).parent / "dataset_fixtures"
SHAREGPT = FIXTURES / "sharegpt_v3_excerpt.json"
PR_EXAMPLE = FIXTURES / "sglang_pr15057_custom_example.jsonl"
SHORT = ["lemme share a paper with you", 'Please explain what is "AI applications"',
         "Tell me about the Mahindra scandal in Kenya please", "how it feels being an alien among humans?"]


def test_sharegpt_takes_the_first_turn_of_each_conversation_with_two_or_more():
    prompts = read_prompt_file(str(SHAREGPT), "sharegpt")
    # 13 entries: the empty one, the lone system turn and the lone gpt turn are dropped
    assert len(prompts) == 10
    assert prompts[0] == "How to tell if a customer segment is well segmented? In 3 bullet points."
    assert prompts[-1] == "hi"
    assert "Acknowledged." not in prompts and not any("TypingMind" in p for p in prompts)
    # a conversation that begins with the model's turn still gives its first turn, as SGLang takes it
    assert prompts[-2].startswith("Subject: Top Position - Boost Your Local Business\n")
    # second turns are never prompts
    assert not any(p.startswith("Here are") for p in prompts)


def test_sampling_passes_over_one_word_prompts_and_prompts_over_the_length_limit():
    prompts = read_prompt_file(str(SHAREGPT), "sharegpt")
    assert sorted(sample_prompts(prompts, "sharegpt", 4, seed=1, max_words=10, where="f")) == sorted(SHORT)
    everything = sample_prompts(prompts, "sharegpt", 9, seed=1, max_words=100000, where="f")
    assert "hi" not in everything and len(set(everything)) == 9
    with pytest.raises(DatasetFileError) as err:
        sample_prompts(prompts, "sharegpt", 5, seed=1, max_words=10, where="data.json")
    assert str(err.value) == ("data.json has only 4 prompts of 2 to 10 words, and the benchmark needs 5; lower "
                              "num-prompts or warmup, or raise input-len")


def test_a_seed_picks_the_same_prompts_and_another_seed_others():
    prompts = read_prompt_file(str(SHAREGPT), "sharegpt")
    picks = {seed: sample_prompts(prompts, "sharegpt", 3, seed, 100000, "f") for seed in range(1, 6)}
    assert picks[1] == sample_prompts(list(prompts), "sharegpt", 3, 1, 100000, "f")
    assert len({tuple(p) for p in picks.values()}) > 1
    a, b = make_prompts("mt-bench", 6, 256, 1), make_prompts("mt-bench", 6, 256, 2)
    assert a == make_prompts("mt-bench", 6, 256, 1) and a != b


def test_custom_jsonl_reads_content_or_value_one_conversation_a_line(tmp_path):
    entries = json.loads(SHAREGPT.read_text(encoding="utf-8"))
    jsonl = tmp_path / "sharegpt.jsonl"  # the same conversations, one a line: the custom format
    jsonl.write_text("\n".join(json.dumps(e) for e in entries) + "\nnot json\n\n", encoding="utf-8")
    assert read_prompt_file(str(jsonl), "custom") == read_prompt_file(str(SHAREGPT), "sharegpt")
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"conversations": [{"role": "user", "content": "Name three prime numbers."},
                                                  {"role": "assistant", "content": "2, 3 and 5."}]}) + "\n")
    assert read_prompt_file(str(chat), "custom") == ["Name three prime numbers."]


def test_load_records_the_file_hash_and_keeps_warmup_apart():
    spec = {"name": "sharegpt", "path": str(SHAREGPT), "count": 4, "warmup": 2, "seed": 7, "max_words": 100000}
    measured, warm, facts = load_file_prompts(spec)
    assert facts == {"name": "sharegpt", "path": str(SHAREGPT), "entries": 10,
                     "sha256": hashlib.sha256(SHAREGPT.read_bytes()).hexdigest()}
    assert len(measured) == 4 and len(warm) == 2 and not set(measured) & set(warm)
    alone, none, _ = load_file_prompts(dict(spec, warmup=0))
    assert alone == measured and none == []


@pytest.mark.parametrize("setup, fmt, expected", [
    (lambda d: d / "missing.json", "sharegpt", "the dataset file {p} does not exist on this host; give dataset-path "
     "as a path on the host, to a ShareGPT JSON file: a list of {{\"conversations\": [{{\"from\": ..., \"value\": "
     "...}}, ...]}}"),
    (lambda d: d, "sharegpt", "the dataset path {p} is a folder; give the file itself"),
    (lambda d: PR_EXAMPLE, "custom", "{p} has no usable entry; expected JSON Lines of {{\"conversations\""),
    (lambda d: PR_EXAMPLE, "sharegpt", "{p} is not JSON ("),
    (lambda d: _write(d / "obj.json", b'{"conversations": []}'), "sharegpt", "{p} holds a JSON dict, not a list;"),
    (lambda d: _write(d / "latin1.json", b'[{"conversations": "caf\xe9"}]'), "sharegpt", "{p} is not UTF-8 text;"),
    (lambda d: SHAREGPT, "mt-bench", "{p} has no usable entry; expected JSON Lines of {{\"question_id\""),
])
def test_a_file_of_another_shape_gives_one_sentence_naming_it(tmp_path, setup, fmt, expected):
    path = setup(tmp_path)
    with pytest.raises(DatasetFileError) as err:
        read_prompt_file(str(path), fmt)
    message = str(err.value)
    assert message.startswith(expected.format(p=path)), message
    assert "\n" not in message and "Traceback" not in message


def _write(path, data):
    path.write_bytes(data)
    return path


def test_the_shipped_mt_bench_set_gives_first_turns_and_its_hash():
    everything = make_prompts("mt-bench", 80, 100000, 1)
    assert len(set(everything)) == 80
    assert ("Compose an engaging travel blog post about a recent trip to Hawaii, highlighting cultural experiences "
            "and must-see attractions.") in everything
    assert "Rewrite your previous response. Start every sentence with the letter A." not in everything
    facts = PromptSet.build("mt-bench", 3, 256, 1, warmup=1).spec_fields()["dataset"]
    # the sha256 written in spectui/data/prompts/SOURCE.txt, of FastChat's question.jsonl
    assert facts["sha256"] == "119565adbab82227089cefdb44c8d7e2cf04dc0a0ec233634c82e7d4e2a944f7"
    assert facts["name"] == "mt-bench"


def test_presets_name_a_host_file_and_refuse_a_missing_or_stray_path():
    p = preset_from_text("name: real\ndataset: sharegpt\ndataset-path: /data/ShareGPT.json\ninput-len: 400\n")
    fields = PromptSet.build(p.dataset, 5, p.input_len, p.seed, warmup=1, path=p.dataset_path).spec_fields()
    assert "prompts" not in fields
    assert fields["dataset_file"] == {"name": "sharegpt", "path": "/data/ShareGPT.json", "count": 5, "warmup": 1,
                                      "seed": 1, "max_words": 400}
    assert p.to_dict()["dataset-path"] == "/data/ShareGPT.json"
    with pytest.raises(PresetError, match=r"<preset>:2:10: dataset sharegpt is read from a file on the GPU host: "
                                          r"add 'dataset-path: PATH'"):
        preset_from_text("name: real\ndataset: sharegpt\n")
    with pytest.raises(PresetError, match=r"<preset>:3:1: dataset reasoning is generated from the seed"):
        preset_from_text("name: real\ndataset: reasoning\ndataset-path: /x.json\n")
