"""The model's sizes from config.json: a folder, the Hugging Face cache layout, nested configs."""

import json
import os
import time

import pytest

from spectui.agent.probe.model import ModelConfigError, find_config, model_sizes


def write(path, cfg):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cfg))
    return path


def test_local_folder(tmp_path):
    write(tmp_path / "m" / "config.json", {"hidden_size": 4096, "num_hidden_layers": 32, "torch_dtype": "float16"})
    s = model_sizes(str(tmp_path / "m"))
    assert (s["hidden_size"], s["layers"], s["dtype"], s["dtype_bytes"], s["dtype_assumed"]) == \
        (4096, 32, "float16", 2, False)
    assert s["source"] == str(tmp_path / "m" / "config.json")


def test_hub_cache_layout_follows_refs_main(tmp_path):
    hub = tmp_path / "hf" / "hub"
    base = hub / "models--moonshotai--Kimi-K2.5"
    # a newer snapshot that refs/main does not name must not win
    write(base / "snapshots" / "aaa" / "config.json", {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "text_config": {"hidden_size": 7168, "num_hidden_layers": 61, "dtype": "bfloat16"}})
    newer = write(base / "snapshots" / "bbb" / "config.json", {"hidden_size": 1, "num_hidden_layers": 1})
    later = time.time() + 10
    os.utime(newer, (later, later))
    (base / "refs").mkdir()
    (base / "refs" / "main").write_text("aaa\n")
    env = {"HF_HOME": str(tmp_path / "hf")}
    assert find_config("moonshotai/Kimi-K2.5", env) == str(base / "snapshots" / "aaa" / "config.json")
    s = model_sizes("moonshotai/Kimi-K2.5", env=env)
    assert (s["hidden_size"], s["layers"], s["dtype_bytes"]) == (7168, 61, 2)
    # without refs/main: the newest snapshot
    (base / "refs" / "main").unlink()
    assert find_config("moonshotai/Kimi-K2.5", env) == str(newer)
    # HF_HUB_CACHE names the hub folder itself
    assert find_config("moonshotai/Kimi-K2.5", {"HF_HUB_CACHE": str(hub)}) == str(newer)


def test_float32_and_unknown_dtypes(tmp_path):
    write(tmp_path / "a" / "config.json", {"hidden_size": 8, "num_hidden_layers": 2, "torch_dtype": "float32"})
    assert model_sizes(str(tmp_path / "a"))["dtype_bytes"] == 4
    write(tmp_path / "b" / "config.json", {"hidden_size": 8, "num_hidden_layers": 2})
    s = model_sizes(str(tmp_path / "b"))
    assert (s["dtype"], s["dtype_bytes"], s["dtype_assumed"]) == ("bfloat16", 2, True)


def test_overrides_need_no_config():
    s = model_sizes(None, hidden_size=7168, layers=61)
    assert (s["hidden_size"], s["layers"], s["dtype_bytes"]) == (7168, 61, 2)
    assert s["source"] == "given (--hidden-size, --layers)"


def test_missing_or_unreadable_config_says_what_to_give(tmp_path):
    env = {"HF_HOME": str(tmp_path / "empty")}
    with pytest.raises(ModelConfigError, match=r"^no config.json for org/absent on this host \(not a folder, nor "
                                               r"in the Hugging Face cache\): give --hidden-size and --layers$"):
        model_sizes("org/absent", env=env)
    write(tmp_path / "c" / "config.json", {"vocab_size": 10})
    with pytest.raises(ModelConfigError, match="has no hidden_size and num_hidden_layers .*give --hidden-size"):
        model_sizes(str(tmp_path / "c"))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "config.json").write_text("{not json")
    with pytest.raises(ModelConfigError, match="could not be read"):
        model_sizes(str(tmp_path / "d"))
