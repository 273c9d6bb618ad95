"""Shared helpers of the probe tests: a tiny model folder and a profile that uses it."""

import json
import sys
import textwrap

import pytest


@pytest.fixture
def tiny_model(tmp_path):
    """A model folder whose config.json nests its sizes, as multimodal wrappers (Kimi-K2.5) do."""
    d = tmp_path / "tiny-model"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({
        "architectures": ["TinyForConditionalGeneration"],
        "text_config": {"hidden_size": 512, "num_hidden_layers": 4, "torch_dtype": "bfloat16"},
    }))
    return d


@pytest.fixture
def probe_profiles(tmp_path, tiny_model):
    """A profile folder: tensor parallel 2 with a 3-step EAGLE-3 chain, run by this interpreter."""
    d = tmp_path / "profiles"
    d.mkdir()
    (d / "tiny-eagle.yaml").write_text(textwrap.dedent(f"""\
        name: tiny-eagle
        description: a tiny model for the probe tests
        model: {tiny_model}
        python: {sys.executable}
        gpus: [0, 1]
        args:
          tp-size: 2
          speculative-algorithm: EAGLE3
          speculative-draft-model-path: {tiny_model}
          speculative-num-steps: 3
          speculative-eagle-topk: 1
          speculative-num-draft-tokens: 4
        """))
    return d
