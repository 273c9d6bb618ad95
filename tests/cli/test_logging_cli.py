"""``--debug``, ``--log-file`` and ``SPECTUI_LOG``: where spectui's log goes, at which level, and one clear
sentence for a setting that cannot be used. The log never reaches the terminal."""

from __future__ import annotations

import logging
import os

import pytest

from spectui.cli.main import main
from spectui.core import logsetup
from spectui.core.paths import log_file
from spectui.core.session import HostTarget

COMMAND = ["profiles", "list"]  # a command that needs no host


def started_line(path) -> str:
    text = path.read_text()
    assert "spectui.cli.main: spectui " in text, text
    return text


def test_debug_and_log_file_before_the_command(tmp_path, capsys):
    path = tmp_path / "spectui.log"
    assert main(["--debug", "--log-file", str(path), *COMMAND]) == 0
    text = started_line(path)
    assert "INFO" in text and "(log level DEBUG)" in text
    out, err = capsys.readouterr()
    assert "spectui.cli.main" not in out + err  # the terminal never shows log records


def test_log_options_after_the_command_too(tmp_path):
    path = tmp_path / "after.log"
    assert main([*COMMAND, "--debug", "--log-file", str(path)]) == 0
    assert "(log level DEBUG)" in started_line(path)


def test_without_debug_nothing_below_warning_is_written(tmp_path):
    path = tmp_path / "quiet.log"
    assert main(["--log-file", str(path), *COMMAND]) == 0
    assert not path.exists()  # the file is made at the first record, and INFO is not recorded


def test_spectui_log_gives_the_level_and_the_file(tmp_path, monkeypatch):
    path = tmp_path / "env.log"
    monkeypatch.setenv("SPECTUI_LOG", f"info,{path}")
    assert main(COMMAND) == 0
    assert "(log level INFO)" in started_line(path)
    # --log-file and --debug win over the variable
    other = tmp_path / "flag.log"
    assert main(["--debug", "--log-file", str(other), *COMMAND]) == 0
    assert "(log level DEBUG)" in started_line(other)
    assert path.read_text().count("spectui.cli.main: spectui ") == 1


def test_the_default_file_is_in_the_user_log_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("SPECTUI_LOG", "debug")
    assert log_file() == tmp_path / "state" / "spectui" / "log" / "spectui.log"
    assert main(COMMAND) == 0
    assert "(log level DEBUG)" in started_line(log_file())


def test_a_bad_spectui_log_is_one_sentence(monkeypatch, capsys):
    monkeypatch.setenv("SPECTUI_LOG", "verbose")
    assert main(COMMAND) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().count("\n") == 0
    assert "SPECTUI_LOG='verbose'" in err and "neither a level" in err and "Traceback" not in err


def test_a_log_file_that_cannot_be_written_is_one_sentence(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    assert main(["--log-file", str(blocker / "x.log"), *COMMAND]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip().count("\n") == 0
    assert f"Cannot write the log file {blocker / 'x.log'} (--log-file)" in err
    assert blocker.read_text() == "not a folder\n"


def test_an_unwritable_default_file_is_no_error(tmp_path, monkeypatch):
    blocker = tmp_path / "state"
    blocker.write_text("")  # the log folder's parent is a file
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))
    try:
        config = logsetup.configure(debug=True)
        assert config.path is None and "Cannot write the log file" in config.problem
        logging.getLogger("spectui.test").info("kept in memory")
        assert any(r.message == "kept in memory" for r in logsetup.recent().records())
    finally:
        logsetup.reset()


def test_a_command_leaves_logging_as_it_found_it(tmp_path):
    root = logging.getLogger()
    before = (list(root.handlers), root.level, logging.getLogger("spectui").level)
    assert main(["--debug", "--log-file", str(tmp_path / "x.log"), *COMMAND]) == 0
    assert (list(root.handlers), root.level, logging.getLogger("spectui").level) == before
    assert logsetup.active() is None


@pytest.mark.parametrize("debug, level", [(True, "debug"), (False, "warning")])
def test_the_agent_is_started_at_the_console_level(tmp_path, debug, level):
    try:
        logsetup.configure(debug=debug, log_file_path=tmp_path / "x.log")
        args = HostTarget.demo(str(tmp_path)).agent_args()
        assert args[args.index("--log-level") + 1] == level
    finally:
        logsetup.reset()


def test_parse_env_items():
    assert logsetup.parse_env("") == (None, None)
    assert logsetup.parse_env("DEBUG") == (logging.DEBUG, None)
    level, path = logsetup.parse_env("~/x.log, error")
    assert level == logging.ERROR and path == logsetup.Path(os.path.expanduser("~/x.log"))
    with pytest.raises(logsetup.LogSettingError):
        logsetup.parse_env("info,loud")


def test_secret_values_on_the_command_line_stay_out_of_the_log(tmp_path):
    path = tmp_path / "secret.log"
    main(["--debug", "--log-file", str(path), "profiles", "import", "--name", "x", "--", "python3", "-m",
          "sglang.launch_server", "--model-path", "m", "--api-key", "hunter2-secret"])
    text = started_line(path)
    assert "--api-key" in text and "hunter2-secret" not in text
