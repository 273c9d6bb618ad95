"""Every CLI command that prints host or file text, on a terminal: control characters shown, never obeyed.

Each command runs in this process with stdout and stderr that say they are a terminal; the text a
terminal would receive must hold no control character but the line break (and the tab), whatever the
host, the file or the error carried. ``--json`` stays the exact data (JSON escapes the controls), and a
pipe still gets the host's text as it was.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import sys
from pathlib import Path

import pytest

from spectui.cli.main import main
from spectui.sim.vgpu import default_host

TITLE = "\x1b]0;PWNED\x07"
CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4K\x07"
HOSTILE = TITLE + CLEAR + CLIPBOARD
#: what a terminal would obey: C0 controls but tab and newline, DEL, C1 controls
OBEYABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class Stream(io.StringIO):
    """What a command writes to: a terminal (``tty``) or a pipe."""

    def __init__(self, tty: bool = True):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def on_terminal(monkeypatch, *argv: str, tty: bool = True) -> tuple[int, str, str]:
    out, err = Stream(tty), Stream()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    code = main(list(argv))
    assert sys.stdout is out and sys.stderr is err, "the command left its own streams in place"
    return code, out.getvalue(), err.getvalue()


def assert_shown_not_obeyed(text: str) -> None:
    assert not OBEYABLE.search(text), repr(OBEYABLE.search(text).group()) + " reached the terminal in " + repr(text)
    assert "␛]0;PWNED␇" in text, text


@pytest.fixture
def hostile_root(tmp_path):
    """An "SGLang source tree" whose file names and contents carry escapes."""
    root = tmp_path / "sglang"
    spec = root / "srt" / "speculative"
    spec.mkdir(parents=True)
    (spec / "worker.py").write_text(f'NOTE = "{HOSTILE}"\nclass EagleWorker:\n    pass\n')
    (spec / f"n{TITLE}.py").write_text("PWNED = 1\n")
    (root / f"d{CLEAR}{TITLE}").mkdir()
    os.mkfifo(spec / f"fifo{TITLE}")
    return root


@pytest.mark.parametrize("action", [
    ["tree"], ["tree", "srt/speculative"], ["show", "srt/speculative/worker.py"], ["show", f"srt/speculative/n{TITLE}.py"],
    ["grep", "PWNED"], ["show", f"srt/speculative/missing{TITLE}.py"], ["show", f"srt/speculative/fifo{TITLE}"],
])
def test_source_file_names_contents_and_errors(monkeypatch, hostile_root, action):
    code, out, err = on_terminal(monkeypatch, "source", "--host", "local", "--sglang-root", str(hostile_root), *action)
    assert_shown_not_obeyed(out + err)


def write_hostile_host(state: Path) -> Path:
    """A simulated host's state folder whose GPU name and driver version carry escapes."""
    host = default_host(2)
    host["driver_version"] = "580" + TITLE
    host["gpus"][0]["name"] = "GPU" + CLEAR + CLIPBOARD + TITLE
    (state / "sim").mkdir(parents=True)
    (state / "sim" / "host.json").write_text(json.dumps(host))
    return state


@pytest.fixture
def hostile_gpus(tmp_path):
    state = write_hostile_host(tmp_path / "state")
    return ["-H", "local", "--sim", "--state-dir", str(state), "--gpu-source", "sim"]


def test_single_host_status_shows_the_gpu_name_and_driver(monkeypatch, hostile_gpus):
    code, out, err = on_terminal(monkeypatch, "status", *hostile_gpus)
    assert code == 0
    assert_shown_not_obeyed(out)
    assert "driver   580␛]0;PWNED␇" in out


def test_status_json_stays_the_exact_data(monkeypatch, hostile_gpus):
    code, out, _ = on_terminal(monkeypatch, "status", *hostile_gpus, "--json")
    assert code == 0 and not OBEYABLE.search(out)  # JSON escapes them
    report = json.loads(out)
    assert report["host"]["nvidia_driver"] == "580" + TITLE
    assert report["gpu_telemetry"]["gpus"][0]["name"] == "GPU" + CLEAR + CLIPBOARD + TITLE


def test_a_pipe_still_gets_the_hosts_text_as_it_was(monkeypatch, hostile_gpus):
    code, out, _ = on_terminal(monkeypatch, "status", *hostile_gpus, tty=False)
    assert code == 0 and "driver   580" + TITLE in out


def test_several_hosts_the_host_column_and_each_hosts_error(monkeypatch):
    bad = "h" + TITLE
    code, out, err = on_terminal(monkeypatch, "status", "-H", "local", "-H", bad, "--connect-timeout", "5")
    assert code == 1
    assert_shown_not_obeyed(out)
    code, out, err = on_terminal(monkeypatch, "status", "-H", "local", "-H", bad, "--connect-timeout", "5", "--json")
    assert code == 1 and [h["dest"] for h in json.loads(out)["hosts"]] == ["local", bad]
    assert_shown_not_obeyed(err)


@pytest.fixture
def noisy_python(tmp_path):
    """A "Python" that writes 20 MB of escapes and text to stderr and exits."""
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\n"
                      f"{sys.executable} -c \"import sys; sys.stderr.write(sys.argv[1] * 10 + 'x' * (20 << 20) "
                      f"+ sys.argv[1] + 'the last words')\" '{HOSTILE}'\nexit 1\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_a_python_whose_stderr_carries_escapes_is_one_short_line(monkeypatch, noisy_python):
    code, out, err = on_terminal(monkeypatch, "status", "--host", "local", "--python", noisy_python)
    assert code == 1
    assert_shown_not_obeyed(err)
    (line,) = err.splitlines()
    assert line.startswith("spectui: The agent could not start on local")  # the sentence's start is kept
    head, note, tail = re.split(r" (\[\.\.\. [\d,]+ characters cut \.\.\.\]) ", line)
    assert len(head) <= 400 and len(tail) <= 2000 and set(tail) == {"x"}, note  # its start, and its end


def test_profile_errors_name_their_keys_visibly(monkeypatch, tmp_path):
    f = tmp_path / "hostile.yaml"
    f.write_text(f'name: hostile\nmodel: m\nport: 30001\ngpus: [0]\nargs:\n  "tp{CLEAR}": 1\n'
                 f'"zz\\e]0;PWNED\\a": 3\n'.replace(CLEAR, "\\e[2J"))
    code, out, err = on_terminal(monkeypatch, "profiles", "check", str(f))
    assert code == 1
    assert_shown_not_obeyed(out + err)


def test_settings_errors_name_their_keys_visibly(monkeypatch, tmp_path):
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.yaml").write_text('"bad\\e]0;PWNED\\a\\e[2J": 1\n')
    monkeypatch.setenv("SPECTUI_CONFIG_DIR", str(config))
    code, out, err = on_terminal(monkeypatch, "status", "-H", "local", "-H", "local")
    assert code == 0
    assert_shown_not_obeyed(err)


def test_a_server_log_with_escapes(monkeypatch, tmp_path):
    session = (Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "server_session.log").read_text()
    assert "torch.OutOfMemoryError: CUDA out of memory." in session
    log = tmp_path / "server.log"
    log.write_text(session.replace("CUDA out of memory.", "CUDA out of memory. " + HOSTILE))
    for action in ("parse", "summary"):
        code, out, err = on_terminal(monkeypatch, "logs", action, str(log))
        assert code == 0
        assert_shown_not_obeyed(out + err)
