"""``spectui profiles list`` where every profile file is broken says so, not "no profiles found"."""
from __future__ import annotations

from spectui.cli.main import main


def test_a_folder_of_broken_profiles_is_not_called_empty(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPECTUI_PROFILES_PATH", str(tmp_path))
    (tmp_path / "cpu.yaml").write_text("name: cpu\nmodel: m\ngpus: \"zz\"\n")
    code = main(["profiles", "list"])
    out, err = capsys.readouterr()
    assert code != 0
    assert not out, out  # messages go to stderr; stdout carries only the table
    assert "no profiles found" not in err and "1 profile file could not be loaded" in err, err
    assert "cpu.yaml:3:7" in err and "'gpus'" in err, err
    (tmp_path / "cpu.yaml").write_text("name: cpu\nmodel: m\ngpus: []\nargs:\n  device: cpu\n")  # none: the CPU
    assert main(["profiles", "list"]) == 0
    out, err = capsys.readouterr()
    assert "cpu" in out and not err
