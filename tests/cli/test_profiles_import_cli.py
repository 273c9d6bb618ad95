"""``spectui profiles import``: where the command comes from, where the profile goes, and errors."""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path

import pytest

from spectui.cli import profiles_import
from spectui.cli.main import main
from spectui.core.profiles import FlagCache, load_profile

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "launch_commands"
COMMANDS = {c["id"]: c["command"] for c in json.loads((FIXTURES / "commands.json").read_text(encoding="utf-8"))}
HELP = FIXTURES / "sglang-0.5.23-launch-server-help.txt"


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("SPECTUI_PROFILES_PATH", raising=False)
    # no SGLang on this machine unless a test provides one
    monkeypatch.setattr(profiles_import, "local_flagset", lambda python: (None, None))


def fake_sglang_python(tmp_path: Path) -> Path:
    """An interpreter stand-in that answers the version query and prints the real 0.5.23 --help."""
    script = tmp_path / "python-with-sglang"
    script.write_text(f'#!/bin/sh\nif [ "$1" = "-c" ]; then echo 0.5.23; exit 0; fi\ncat "{HELP}"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_prints_the_profile_and_notes(capsys):
    assert main(["profiles", "import", COMMANDS["docker-install-docs"]]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("# Imported by 'spectui profiles import'")
    assert "name: llama-3.1-8b-instruct\n" in out and "HF_TOKEN: ${HF_TOKEN}" in out
    assert "<secret>" not in out
    assert "note: docker options left out" in err


def test_words_after_double_dash_are_the_command(capsys):
    assert main(["profiles", "import", "--", "python3", "-m", "sglang.launch_server", "--model-path", "m",
                 "--host", "0.0.0.0", "--tp-size", "2"]) == 0
    out = capsys.readouterr().out
    assert "host: 0.0.0.0" in out and "tp-size: 2" in out


def test_reads_stdin_and_file(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr("sys.stdin", io.StringIO(COMMANDS["ngram-docs"]))
    assert main(["profiles", "import"]) == 0
    assert "name: qwen2.5-7b-instruct-ngram" in capsys.readouterr().out
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/bash\n" + COMMANDS["eagle3-qwen3-8b"] + "\n")
    assert main(["profiles", "import", "--file", str(script)]) == 0
    assert "name: qwen3-8b-eagle3" in capsys.readouterr().out


def test_output_file_never_overwritten_without_force(capsys, tmp_path):
    target = tmp_path / "mine.yaml"
    assert main(["profiles", "import", COMMANDS["eagle3-docs"], "-o", str(target), "--name", "mine"]) == 0
    assert load_profile(target, layers=[]).args["speculative-algorithm"] == "EAGLE3"
    before = target.read_text()
    assert main(["profiles", "import", COMMANDS["ngram-docs"], "-o", str(target), "--name", "mine"]) == 1
    err = capsys.readouterr().err
    assert err.strip().endswith("already exists; pass --force to replace it, or --name to choose another name")
    assert target.read_text() == before
    assert main(["profiles", "import", COMMANDS["ngram-docs"], "-o", str(target), "--name", "mine", "--force"]) == 0
    assert "NGRAM" in target.read_text()


def test_save_writes_into_the_user_profiles_folder(capsys, tmp_path):
    assert main(["profiles", "import", "--save", COMMANDS["kimi-k2.5-docs"]]) == 0
    saved = tmp_path / "config" / "spectui" / "profiles" / "kimi-k2.5.yaml"
    assert load_profile(saved, layers=[]).model == "moonshotai/Kimi-K2.5"
    assert f"wrote profile kimi-k2.5 to {saved}" in capsys.readouterr().err
    assert main(["profiles", "import", "--save", COMMANDS["kimi-k2.5-docs"]]) == 1


@pytest.mark.parametrize("words, message", [
    (["python3 -m sglang.launch_server --model-path 'x"], "opens a single quote"),
    (["nvidia-smi"], "no SGLang launch command found"),
    (["--name", "bad name!", "python3 -m sglang.launch_server --model-path m"], "not a usable profile name"),
    (["--file", "/nonexistent/cmd.sh"], "cannot read /nonexistent/cmd.sh"),
])
def test_bad_input_ends_in_one_line(capsys, words, message):
    assert main(["profiles", "import", *words]) == 1
    err = capsys.readouterr().err
    assert err.startswith("spectui: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_local_sglang_resolves_abbreviations_and_is_cached(capsys, monkeypatch, tmp_path):
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    python = fake_sglang_python(tmp_path)
    assert main(["profiles", "import", "--python", str(python), COMMANDS["eagle3-llama33-70b-tp8"]]) == 0
    out, err = capsys.readouterr()
    assert "speculative-algorithm: EAGLE3" in out and "tp-size: 8" in out
    assert f"note: flags checked against the local SGLang 0.5.23 ({python})" in err
    assert "note: --speculative-draft is ambiguous" in err
    cache = FlagCache(tmp_path / "cache" / "spectui" / "flags")
    assert cache.get("local", f"sglang-0.5.23@{python}") is not None


def test_demo_host_resolves_with_the_simulated_servers_parser(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SPECTUI_DEMO_STATE", str(tmp_path / "demo"))
    assert main(["profiles", "import", "--demo", "--",
                 "python3 -m sglang.launch_server --model-path m --speculative-algo EAGLE3 --tp 2"]) == 0
    out, err = capsys.readouterr()
    assert "speculative-algorithm: EAGLE3" in out and "tp-size: 2" in out
    assert "note: flags checked against the simulated SGLang" in err
