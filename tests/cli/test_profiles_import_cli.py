"""``spectui profiles import``: where the command comes from, where the profile goes, and errors."""

from __future__ import annotations

import io
import json
import stat
import sys
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


# -- --from-running: the command of a server running on the host ------------------------------


def _sim_args(argv):
    """A simulated server's argv read by its own parser (everything after ``-m spectui.sim.server``)."""
    from spectui.sim.server.cli import build_parser

    return vars(build_parser().parse_args(argv[3:]))


def test_from_running_writes_the_profile_that_reproduces_it(capsys, tmp_path, state_dir):
    from spectui.core.profiles import build_argv
    from tests.cli.hand_started import hand_started_server

    demo = ["--demo", "--state-dir", str(state_dir)]
    target = tmp_path / "handmade.yaml"
    with hand_started_server(state_dir, tmp_path, extra=("--max-running-req", "16")) as server:
        assert main(["profiles", "import", "--from-running", server.name, *demo, "-o", str(target)]) == 0
        err = capsys.readouterr().err
        assert f"wrote profile handmade to {target}" in err
        assert "note: --max-running-req is short for --max-running-requests" in err
        assert target.read_text().startswith(f"# Imported by 'spectui profiles import' from the running server "
                                             f"{server.name} on ")
        profile = load_profile(target, layers=[])
        assert profile.port == server.port and profile.metrics is True
        assert profile.args["max-running-requests"] == 16 and profile.sim == {"load-time": 0.3}
        rebuilt = build_argv(profile, simulated=True, python=sys.executable)
        assert _sim_args(rebuilt) == _sim_args(server.argv)

        # by the leader's pid, to stdout
        assert main(["profiles", "import", "--from-running", str(server.pid), *demo, "--name", "bypid"]) == 0
        out = capsys.readouterr().out
        assert "name: bypid\n" in out and f"port: {server.port}\n" in out


@pytest.mark.parametrize("words, message", [
    (["--from-running", "ext-1", "--demo"], "no server named ext-1, and none whose leader pid is ext-1"),
    (["--from-running", "ext-1"], "--from-running needs the host the server runs on"),
    (["--from-running", "ext-1", "--demo", "python3 -m sglang.launch_server --model-path m"],
     "either a launch command or --from-running"),
])
def test_from_running_errors_are_one_line(capsys, state_dir, words, message):
    assert main(["profiles", "import", *words, "--state-dir", str(state_dir)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("spectui: ") and message in err
    assert err.count("\n") == 1


def test_running_server_without_metrics_gets_them_and_a_note():
    from spectui.core.profiles import parse_help_flags
    from spectui.core.profiles.importer import import_running_server

    flags = parse_help_flags(HELP.read_text(encoding="utf-8"))
    view = {"name": "ext-30000", "gpus": [4, 5], "env_keys": ["CUDA_VISIBLE_DEVICES", "HF_TOKEN"],
            "argv": ["/opt/venv/bin/python3", "/opt/venv/bin/sglang", "serve", "Qwen/Qwen3-8B", "--tp", "2",
                     "--api-key", "sk-live-123"]}
    imported = import_running_server(view, flagset=flags, flag_source="SGLang 0.5.23 on gpu1", where="gpu1")
    data = imported.data
    assert data["model"] == "Qwen/Qwen3-8B" and data["python"] == "/opt/venv/bin/python3"
    assert data["args"] == {"tp-size": 2, "api-key": "${SGLANG_API_KEY}"}
    assert data["gpus"] == [4, 5] and data["metrics"] is True and data["port"] == 30000
    assert "sk-live-123" not in imported.to_yaml()
    notes = "\n".join(imported.notes)
    assert "it runs without --enable-metrics (its /metrics is off); the profile adds it (metrics: true)" in notes
    assert "spectui adds --enable-metrics" not in notes
    assert "it was started with HF_TOKEN set" in notes
    assert imported.to_yaml().startswith("# Imported by 'spectui profiles import' from the running server "
                                         "ext-30000 on gpu1.")
