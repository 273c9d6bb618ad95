"""``spectui profiles check`` on a profile that turns on SGLang's device timer
(``SGLANG_ENABLE_METRICS_DEVICE_TIMER``): what it costs, that it needs ``--enable-metrics``, and that a
CPU server cannot run it (tests/fixtures/sglang-0.5.23-cpu-step-counters/timer-on-scheduler-crash.log).

Each test runs the real command in its own process, with its own profile folder and config folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIMER = "SGLANG_ENABLE_METRICS_DEVICE_TIMER"
NO_COST = ("SGLang documents no cost; it records two device events per timed forward and reads them back "
           "without a device synchronization")


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def check(tmp_path: Path, *paths: Path, json_out: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "SPECTUI_PROFILES_PATH": str(tmp_path)}
    argv = [sys.executable, "-m", "spectui", "profiles", "check", *(["--json"] if json_out else []),
            *map(str, paths)]
    result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in result.stderr
    return result


def timed(tmp_path: Path, name: str = "timed", extra: str = "") -> Path:
    return write(tmp_path, f"{name}.yaml", textwrap.dedent(f"""\
        name: {name}
        model: org/m
        env:
          HF_HUB_OFFLINE: "1"
          {TIMER}: "1"
        """) + textwrap.dedent(extra))


def test_a_profile_with_the_timer_is_told_its_cost_and_that_it_needs_metrics(tmp_path):
    path = timed(tmp_path)
    result = check(tmp_path, path)
    assert result.returncode == 0
    [line] = result.stdout.splitlines()
    # At the variable's key (line 5, column 3), as a note, never an error.
    assert line.startswith(f"{path}:5:3: note: ")
    assert TIMER in line and NO_COST in line
    # Where that is seen in the real source, and where the counter is only fed with metrics on.
    assert "sglang/srt/utils/device_timer.py:147-166" in line
    assert "--enable-metrics" in line and "spectui adds it" in line
    assert "metrics_reporter.py:337-338" in line
    assert "1 profile OK" in result.stderr


def test_a_profile_without_the_timer_gets_no_note(tmp_path):
    path = write(tmp_path, "plain.yaml", f"""\
        name: plain
        model: org/m
        env: {{HF_HUB_OFFLINE: "1", {TIMER}: "0"}}
        args: {{device: cpu}}
        """)
    result = check(tmp_path, path)
    assert result.returncode == 0
    assert result.stdout == ""
    assert "1 profile OK" in result.stderr


def test_the_timer_on_a_cpu_server_is_a_warning_at_the_device(tmp_path):
    path = timed(tmp_path, extra="""\
        args:
          device: cpu
        """)
    result = check(tmp_path, path)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    warnings = [ln for ln in lines if ": warning: " in ln]
    assert len(warnings) == 1 and len(lines) == 2
    [warning] = warnings
    # At the value of args.device (line 7, column 11).
    assert warning.startswith(f"{path}:7:11: warning: ")
    assert TIMER in warning and "device cpu" in warning
    assert "device_timer.py:149-151" in warning and "Event() takes no arguments" in warning
    assert "1 warning" in result.stderr


def test_metrics_off_is_a_warning_at_metrics(tmp_path):
    path = timed(tmp_path, extra="metrics: false\n")
    result = check(tmp_path, path)
    assert result.returncode == 0
    warnings = [ln for ln in result.stdout.splitlines() if ": warning: " in ln]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"{path}:6:10: warning: ")
    assert "--enable-metrics" in warnings[0] and "metrics: false" in warnings[0]
    note = next(ln for ln in result.stdout.splitlines() if ": note: " in ln)
    assert "spectui adds it" not in note


def test_a_value_sglang_does_not_read_as_true_is_a_warning(tmp_path):
    path = write(tmp_path, "typo.yaml", f"""\
        name: typo
        model: org/m
        env:
          {TIMER}: "on"
        """)
    result = check(tmp_path, path)
    assert result.returncode == 0
    [line] = result.stdout.splitlines()
    assert line.startswith(f"{path}:4:3: warning: ")
    assert "the timer stays off" in line and "environ.py:143-150" in line
    assert '"on"' not in line  # env values are never shown


def test_inherited_timer_is_noted_once_where_it_is_set(tmp_path):
    parent = timed(tmp_path, "parent")
    child = write(tmp_path, "child.yaml", "name: child\nextends: parent\nport: 30001\n")
    result = check(tmp_path, parent, child)
    assert result.returncode == 0
    [line] = result.stdout.splitlines()
    assert line.startswith(f"{parent}:5:3: note: ")
    named = line.split("device timer (", 1)[1].split(")", 1)[0]
    assert sorted(named.split(", ")) == ["child", "parent"]


def test_json_carries_the_same_notes_structured(tmp_path):
    path = timed(tmp_path, extra="""\
        args:
          device: cpu
        """)
    result = check(tmp_path, path, json_out=True)
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert data["errors"] == []
    notes = {n["kind"]: n for n in data["notes"]}
    assert set(notes) == {"cost", "cpu"}
    cost, cpu = notes["cost"], notes["cpu"]
    assert (cost["topic"], cost["severity"], cost["path"], cost["line"], cost["column"]) == (
        "device-timer", "note", str(path), 5, 3)
    assert cost["field"] == f"env.{TIMER}" and cost["profiles"] == ["timed"]
    assert cost["documented_cost"] is None and NO_COST in cost["message"]
    assert cost["synchronizes"] is False
    assert cost["needs"] == "--enable-metrics" and cost["spectui_adds_it"] is True
    assert any("device_timer.py" in s for s in cost["sources"])
    assert (cpu["severity"], cpu["field"], cpu["line"], cpu["column"]) == ("warning", "args.device", 7, 11)
    assert any("device_timer.py:149-151" in s for s in cpu["sources"])
    # The text form prints the very same messages.
    text = check(tmp_path, path).stdout
    assert cost["message"] in text and cpu["message"] in text
