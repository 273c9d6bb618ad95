"""``spectui profiles list`` and ``spectui profiles check``: output and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spectui.cli import main as cli_main
from spectui.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
SECRET = "hf_SECRETSECRET0123456789"


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """Shipped profiles from the repository, and an empty user config folder."""
    monkeypatch.delenv("SPECTUI_PROFILES_PATH", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.chdir(ROOT)


def user_dir(tmp_path: Path) -> Path:
    d = tmp_path / "config" / "spectui" / "profiles"
    d.mkdir(parents=True, exist_ok=True)
    return d


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def test_registered_with_the_main_command():
    assert "profiles" in cli_main.COMMAND_MODULES


def test_list_table(capsys):
    assert main(["profiles", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["NAME", "ALGORITHM", "SETTINGS", "DRAFT", "MODEL", "SOURCE"]
    rows = {line.split()[0]: line.split("  ") for line in out[1:]}
    cells = {name: [c.strip() for c in row if c.strip()] for name, row in rows.items()}
    assert cells["kimi-eagle3"] == ["kimi-eagle3", "EAGLE3", "steps 3 · topk 1 · draft tokens 4",
                                    "lightseekorg/kimi-k2.5-eagle3", "spectui/data/profiles/kimi-eagle3.yaml"]
    assert cells["kimi-ngram"][:3] == ["kimi-ngram", "NGRAM", "draft tokens 8 · BFS breadth ≤ 10"]
    assert cells["kimi-baseline"][1:4] == ["-"] * 3


def test_list_json_and_user_override(capsys, tmp_path):
    mine = write(user_dir(tmp_path), "kimi-ngram.yaml", """\
        name: kimi-ngram
        extends: kimi-baseline
        args: {speculative-algorithm: NGRAM, speculative-num-draft-tokens: 16}
        """)
    assert main(["profiles", "list", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["errors"] == []
    rows = {r["name"]: r for r in data["profiles"]}
    assert rows["kimi-ngram"]["draft_tokens"] == 16
    assert rows["kimi-ngram"]["source"] == str(mine)
    assert rows["kimi-ngram"]["overrides"] == [str(ROOT / "spectui" / "data" / "profiles" / "kimi-ngram.yaml")]
    assert rows["kimi-k2-drafter"]["extends"] == "kimi-eagle3"
    assert len(rows["kimi-eagle3"]["content_hash"]) == 64
    assert main(["profiles", "list"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("kimi-ngram "))
    assert "(overrides shipped)" in line


def test_list_reports_broken_profiles_on_stderr(capsys, tmp_path):
    write(user_dir(tmp_path), "oops.yaml", "model: org/m\nprot: 1\n")
    assert main(["profiles", "list"]) == 1
    captured = capsys.readouterr()
    assert "kimi-eagle3" in captured.out
    assert captured.err.strip().endswith("oops.yaml:2:1: unknown field 'prot'; did you mean 'port'?")


def test_check_all_shipped_profiles(capsys):
    assert main(["profiles", "check"]) == 0
    captured = capsys.readouterr()
    assert [ln for ln in captured.out.splitlines() if ": note: " not in ln] == []  # no errors, no warnings
    assert "profiles OK" in captured.err


def test_check_paths_one_line_per_error(capsys, tmp_path):
    bad = write(tmp_path, "bad.yaml", f"""\
        name: bad
        extends: kimi-eagle3
        env:
          HF_TOKEN: {SECRET}
          DEBUG: yes
        args:
          speculative_num_steps: 5
        tags: probe
        """)
    good = write(tmp_path, "good.yaml", "name: good\nextends: kimi-ngram\n")
    broken = write(tmp_path, "broken.yaml", "model: x\n  args: 1\n")
    assert main(["profiles", "check", str(bad), str(good), str(broken)]) == 1
    captured = capsys.readouterr()
    lines = [ln for ln in captured.out.splitlines() if ": note: " not in ln]  # kimi-ngram's device timer note
    assert lines == [
        f"{bad}:5:10: env value for DEBUG is true/false; quote it (e.g. \"1\" or \"true\") so the server "
        "gets the exact text",
        f"{bad}:7:3: SGLang flags use dashes, not underscores; did you mean 'speculative-num-steps'?",
        f"{bad}:8:7: field 'tags' must be a list; did you mean 'tags: [probe]'?",
        f"{broken}:2:7: invalid YAML: mapping values are not allowed here; fix the YAML syntax there",
    ]
    assert "4 problems in 3 files" in captured.err
    assert SECRET not in captured.out + captured.err

    assert main(["profiles", "check", str(good)]) == 0
    assert "1 profile OK" in capsys.readouterr().err


def test_check_json(capsys, tmp_path):
    bad = write(tmp_path, "bad.yaml", "extends: kimi-eagel3\n")
    assert main(["profiles", "check", "--json", str(bad)]) == 1
    data = json.loads(capsys.readouterr().out)
    [error] = data["errors"]
    assert (error["path"], error["line"], error["column"], error["field"]) == (str(bad), 1, 10, "extends")
    assert error["suggestions"][0] == "kimi-eagle3"


def test_check_a_folder_and_a_missing_file(capsys, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    write(folder, "a.yaml", "extends: kimi-baseline\nport: 30002\n")
    write(folder, "b.yaml", "extends: a\nargs: {speculative-algorithm: NGRAM}\n")
    assert main(["profiles", "check", str(folder)]) == 0
    assert "2 profiles OK (2 files)" in capsys.readouterr().err
    missing = tmp_path / "nope.yaml"
    assert main(["profiles", "check", str(missing)]) == 1
    assert capsys.readouterr().out.strip() == f"{missing}: cannot read the file: No such file or directory"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["profiles", "check", str(empty)]) == 1
    assert "no profile files" in capsys.readouterr().err


def test_check_as_a_real_process(tmp_path):
    bad = write(tmp_path, "cycle-a.yaml", "name: cycle-a\nextends: cycle-b\nmodel: org/m\n")
    write(tmp_path, "cycle-b.yaml", "name: cycle-b\nextends: cycle-a\n")
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "SPECTUI_PROFILES_PATH": str(tmp_path)}
    result = subprocess.run([sys.executable, "-m", "spectui", "profiles", "check"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"{bad}:2:10: profile 'cycle-a' is in an extends cycle: cycle-a -> cycle-b -> cycle-a; "
        "remove 'extends' from one of them",
        f"{tmp_path / 'cycle-b.yaml'}:2:10: profile 'cycle-b' is in an extends cycle: "
        "cycle-b -> cycle-a -> cycle-b; remove 'extends' from one of them",
    ]
    assert "Traceback" not in result.stderr
    ok = subprocess.run([sys.executable, "-m", "spectui", "profiles", "list"], cwd=ROOT,
                        env={**env, "SPECTUI_PROFILES_PATH": str(ROOT / "spectui" / "data" / "profiles")},
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "kimi-k2-drafter" in ok.stdout
