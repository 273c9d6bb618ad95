"""``import_launch_command``: real launch commands become profiles that launch the same server."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from spectui.core.profiles import build_argv, build_env, load_profile, parse_help_flags
from spectui.core.profiles.importer import derive_name, import_launch_command
from spectui.core.profiles.launch_command import LaunchCommandError, read_launch_command

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "launch_commands"
COMMANDS = json.loads((FIXTURES / "commands.json").read_text(encoding="utf-8"))
BY_ID = {item["id"]: item["command"] for item in COMMANDS}
# ``python -m sglang.launch_server --help`` of the sglang 0.5.23 wheel (see the folder's README).
SGLANG_0_5_23 = parse_help_flags((FIXTURES / "sglang-0.5.23-launch-server-help.txt").read_text(encoding="utf-8"))


def load(tmp_path: Path, imported) -> object:
    path = tmp_path / f"{imported.name}.yaml"
    path.write_text(imported.to_yaml(), encoding="utf-8")
    return load_profile(path, layers=[])


def original_flags(command: str) -> dict[str, list[str]]:
    """The server flags of a fixture command, read here with shlex (independently of the importer)."""
    words = shlex.split(command.replace("\\\n", " "))
    start = next(i for i, w in enumerate(words) if w in ("sglang.launch_server", "serve")) + 1
    flags: dict[str, list[str]] = {}
    current = None
    for word in words[start:]:
        if word.startswith("--"):
            current = word
            flags[current] = []
        else:
            flags[current].append(word)
    if "--model" in flags:
        flags["--model-path"] = flags.pop("--model")
    flags.pop("--enable-metrics", None)
    return flags


def argv_flags(argv: list[str]) -> dict[str, list[str]]:
    flags: dict[str, list[str]] = {}
    current = None
    for word in argv[3:]:
        if word.startswith("--"):
            current = word
            flags[current] = []
        else:
            flags[current].append(word)
    flags.pop("--enable-metrics", None)
    return flags


@pytest.mark.parametrize("item", COMMANDS, ids=[c["id"] for c in COMMANDS])
def test_every_real_command_round_trips_without_a_flag_list(item, tmp_path):
    profile = load(tmp_path, import_launch_command(item["command"]))
    produced = argv_flags(build_argv(profile, simulated=False))
    wanted = original_flags(item["command"])
    # spectui always writes --host and --port; where the command left them out, they are SGLang's defaults
    wanted.setdefault("--host", ["127.0.0.1"])
    wanted.setdefault("--port", ["30000"])
    assert produced == wanted


@pytest.mark.parametrize("item", COMMANDS, ids=[c["id"] for c in COMMANDS])
def test_every_real_command_imports_against_sglang_0_5_23(item, tmp_path):
    imported = import_launch_command(item["command"], flagset=SGLANG_0_5_23, flag_source="sglang 0.5.23")
    profile = load(tmp_path, imported)
    assert profile.model == original_flags(item["command"])["--model-path"][0]
    for key in profile.args:
        assert "--" + key in SGLANG_0_5_23 or any("--" + key in n for n in imported.notes)


def test_abbreviations_resolved_like_sglang_argparse(tmp_path):
    imported = import_launch_command(BY_ID["eagle-blog-abbreviated"], flagset=SGLANG_0_5_23)
    profile = load(tmp_path, imported)
    assert profile.args == {
        "speculative-algorithm": "EAGLE",
        # nine options start with --speculative-draft in 0.5.23: SGLang refuses it, so it stays as written
        "speculative-draft": "lmzheng/sglang-EAGLE-llama2-chat-7B",
        "speculative-num-steps": 5,
        "speculative-eagle-topk": 8,
        "speculative-num-draft-tokens": 64,
        "mem-fraction-static": 0.7,
    }
    assert profile.name == "llama-2-7b-chat-hf-eagle"
    assert any(n.startswith("--speculative-draft is ambiguous") for n in imported.notes)
    assert "--speculative-algo is short for --speculative-algorithm" in imported.notes


def test_env_prefixes_gpus_and_aliases(tmp_path):
    profile = load(tmp_path, import_launch_command(BY_ID["eagle-cuda-visible-devices"], flagset=SGLANG_0_5_23))
    assert profile.gpus == ("0", "1", "3", "7")
    assert profile.port == 9001 and profile.host == "0.0.0.0"
    assert profile.python is None
    assert profile.args["tp-size"] == 4  # written --tensor-parallel-size, an alias of --tp-size
    assert profile.args["mem-fraction-static"] == 0.7
    assert profile.args["disable-cuda-graph"] is True
    assert build_env(profile) == {"CUDA_VISIBLE_DEVICES": "0,1,3,7"}


def test_ngram_command_with_three_env_prefixes(tmp_path):
    profile = load(tmp_path, import_launch_command(BY_ID["ngram-env-prefix-qwen25vl"], flagset=SGLANG_0_5_23))
    assert profile.gpus == ("0", "1")
    assert profile.env == {"SGLANG_FLASHINFER_WORKSPACE_SIZE": "536870912", "SGLANG_USE_CUDA_IPC_TRANSPORT": "1"}
    assert (profile.args["tp-size"], profile.args["dp-size"], profile.args["ep-size"]) == (2, 1, 1)
    # the reporter's missing space: not a flag of 0.5.23, kept as written with its value
    assert profile.args["keep-mm-feature-on-device--speculative-algorithm"] == "NGRAM"


def test_sglang_serve_with_env_prefixes(tmp_path):
    imported = import_launch_command(BY_ID["nextn-sglang-serve"], flagset=SGLANG_0_5_23)
    profile = load(tmp_path, imported)
    assert profile.name == "qwen3.8-flash-next-nvfp4-nextn"
    assert profile.launcher == ("-m", "sglang.launch_server")
    assert profile.env == {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                           "SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK": "1"}
    assert profile.args["speculative-algorithm"] == "NEXTN"
    assert profile.args["tp-size"] == 4
    assert profile.args["ple-offload-embedding"] is True


def test_docker_command_keeps_the_hf_token_out(tmp_path):
    imported = import_launch_command(BY_ID["docker-install-docs"], flagset=SGLANG_0_5_23)
    text = imported.to_yaml()
    assert "<secret>" not in text
    profile = load(tmp_path, imported)
    assert profile.env == {"HF_TOKEN": "${HF_TOKEN}"}
    assert profile.host == "0.0.0.0" and profile.port == 30000
    assert any("--shm-size 32g" in n and "--ipc=host" in n for n in imported.notes)
    assert any("lmsysorg/sglang:latest" in n for n in imported.notes)


def test_long_flag_names_kept_as_written_without_a_flag_list(tmp_path):
    imported = import_launch_command(BY_ID["baseline-abbreviated-research"])
    assert load(tmp_path, imported).args["disable-overlap"] is True
    assert any("kept as written" in n for n in imported.notes)
    resolved = load(tmp_path, import_launch_command(BY_ID["baseline-abbreviated-research"], flagset=SGLANG_0_5_23))
    assert resolved.args["disable-overlap-schedule"] is True
    assert resolved.args["served-model-name"] == "ReSearch"
    assert resolved.port == 80 and resolved.host == "127.0.0.1"


# -- secrets -------------------------------------------------------------------------------------


def test_api_key_and_tokens_become_host_references(tmp_path):
    text = ("HF_TOKEN=hf_SECRETSECRET HUGGING_FACE_HUB_TOKEN=hf_OTHERSECRET \\\n"
            "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --api-key sk-VERYSECRET "
            "--admin-api-key=adminSECRET")
    imported = import_launch_command(text)
    yaml_text = imported.to_yaml()
    for secret in ("hf_SECRETSECRET", "hf_OTHERSECRET", "sk-VERYSECRET", "adminSECRET"):
        assert secret not in yaml_text
        assert all(secret not in n for n in imported.notes)
    profile = load(tmp_path, imported)
    assert profile.env == {"HF_TOKEN": "${HF_TOKEN}", "HUGGING_FACE_HUB_TOKEN": "${HUGGING_FACE_HUB_TOKEN}"}
    assert profile.args["api-key"] == "${SGLANG_API_KEY}"
    assert profile.args["admin-api-key"] == "${SGLANG_ADMIN_API_KEY}"


def test_other_secret_flags_are_kept_out_too(tmp_path):
    imported = import_launch_command("python3 -m sglang.launch_server --model-path m --ssl-keyfile k.pem "
                                     "--ssl-keyfile-password hunter2")
    assert "hunter2" not in imported.to_yaml()
    profile = load(tmp_path, imported)
    assert profile.args == {"ssl-keyfile": "k.pem", "ssl-keyfile-password": "${SGLANG_SSL_KEYFILE_PASSWORD}"}


def test_a_secret_already_given_as_a_variable_keeps_its_name(tmp_path):
    profile = load(tmp_path, import_launch_command(
        'python3 -m sglang.launch_server --model-path m --api-key "$MY_KEY"'))
    assert profile.args["api-key"] == "${MY_KEY}"


# -- wrappers --------------------------------------------------------------------------------------


def test_nohup_redirections_comments_and_exports(tmp_path):
    text = (
        "#!/bin/bash\n"
        "source /venv/bin/activate   # the SGLang venv\n"
        "export SGLANG_ENABLE_SPEC_V2=1\n"
        "nohup /opt/sglang/bin/python -u -m sglang.launch_server \\\n"
        "    --model-path Qwen/Qwen3-8B \\\n"
        "    --speculative-algorithm EAGLE3   # the drafter below\n"
    )
    # as in a shell, a comment ends the line and with it the continued command
    cut = import_launch_command(text + "    --speculative-draft-model-path d > log 2>&1 &\n")
    assert cut.data["args"] == {"speculative-algorithm": "EAGLE3"}
    assert any("other commands in the text were left out" in n for n in cut.notes)
    profile = load(tmp_path, import_launch_command(text.replace("   # the drafter below\n", " \\\n") +
                                                   "    --speculative-draft-model-path d > log.txt 2>&1 < /dev/null &\n"))
    assert profile.python == "/opt/sglang/bin/python"
    assert profile.env == {"SGLANG_ENABLE_SPEC_V2": "1"}
    assert profile.args == {"speculative-algorithm": "EAGLE3", "speculative-draft-model-path": "d"}
    assert profile.name == "qwen3-8b-eagle3"


def test_env_wrapper_and_shell_c(tmp_path):
    profile = load(tmp_path, import_launch_command(
        "env A=1 B='two words' python3 -m sglang.launch_server --model-path m --tp-size 2"))
    assert profile.env == {"A": "1", "B": "two words"} and profile.args == {"tp-size": 2}
    profile = load(tmp_path, import_launch_command(
        "docker run --rm -e HF_TOKEN -e MODE=fast img:1 bash -c 'cd /w && python3 -m sglang.launch_server "
        "--model-path m --port 8000'"))
    assert profile.env == {"HF_TOKEN": "${HF_TOKEN}", "MODE": "fast"} and profile.port == 8000


def test_values_that_yaml_would_retype_stay_text(tmp_path):
    profile = load(tmp_path, import_launch_command(
        "python3 -m sglang.launch_server --model-path m --mem-fraction-static 0.70 --x true --y 1e3 "
        "--cuda-graph-bs 1 2 4 --json-model-override-args '{\"rope_scaling\": {\"factor\": 2}}'"))
    argv = build_argv(profile, simulated=False)
    assert argv[argv.index("--mem-fraction-static") + 1] == "0.70"
    assert argv[argv.index("--x") + 1] == "true"
    assert argv[argv.index("--y") + 1] == "1e3"
    i = argv.index("--cuda-graph-bs")
    assert argv[i + 1:i + 4] == ["1", "2", "4"]
    assert argv[argv.index("--json-model-override-args") + 1] == '{"rope_scaling": {"factor": 2}}'


def test_sglang_serve_positional_model():
    launch = read_launch_command("sglang serve Qwen/Qwen3-8B --tp 2")
    assert launch.entry == "serve"
    assert import_launch_command("sglang serve Qwen/Qwen3-8B --tp 2").data["model"] == "Qwen/Qwen3-8B"


def test_name_from_model_and_algorithm():
    assert derive_name("meta-llama/Llama-3.1-8B-Instruct", "EAGLE3") == "llama-3.1-8b-instruct-eagle3"
    assert derive_name("/models/Qwen3-8B/", None) == "qwen3-8b"
    assert derive_name("${MODEL_PATH}", "NGRAM") == "model_path-ngram"


@pytest.mark.parametrize("text, message", [
    ("python3 -m sglang.launch_server --model-path 'Qwen/Qwen3", "line 1 opens a single quote"),
    ('python3 -m sglang.launch_server\n --model-path "Qwen', 'line 2 opens a double quote'),
    ("ls -l\necho done", "no SGLang launch command found"),
    ("", "the input is empty"),
    ("numactl -N 0 python3 -m sglang.launch_server --model-path m", "wrapper spectui does not know"),
    ("python3 -m sglang.launch_server --model-path a\npython3 -m sglang.launch_server --model-path b",
     "2 SGLang launch commands (lines 1, 2)"),
    ("python3 -m sglang.launch_server --model-path $(cat model.txt)", "runs a command with $(...)"),
    ("python3 -m sglang.launch_server --model-path ${M:-x}", "shell expansion '${M:-x}'"),
    ("python3 -m sglang.launch_server --model-path m --port $PORT", "--port is '${PORT}', not a port number"),
    ("python3 -m sglang_router.launch_server --model-path m", "'python -m sglang_router.launch_server', not SGLang"),
    ("python3 -m sglang.bench_serving --model m", "not SGLang's server launcher"),
    ("python3 -m sglang.launch_server --tp 2", "has no --model-path"),
    ("python3 -m sglang.launch_server --model-path m -h", "short option '-h'"),
    ("docker run --gpus all lmsysorg/sglang:latest", "runs the image's default command"),
])
def test_bad_input_is_one_sentence(text, message):
    with pytest.raises(LaunchCommandError) as info:
        import_launch_command(text)
    text_out = str(info.value)
    assert message in text_out
    assert "\n" not in text_out and "Traceback" not in text_out


def test_a_switch_followed_by_a_stray_word_is_refused_with_a_flag_list():
    with pytest.raises(LaunchCommandError, match="'yes' is neither a flag nor the value of one"):
        import_launch_command("python3 -m sglang.launch_server --model-path m --trust-remote-code yes",
                              flagset=SGLANG_0_5_23)
