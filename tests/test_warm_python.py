"""The warm interpreter that answers the real-SGLang venv's short runs (tests/support/warm_python.py) behaves as
``subprocess.run([python, *args], capture_output=True, text=True)`` would: arguments, standard input, environment,
working folder, output, exit status, a run's failure, a hung run; and one run leaves nothing for the next."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.warm_python import WarmPython


@pytest.fixture
def warm():
    w = WarmPython(sys.executable, ["json"])
    yield w
    w.close()


def both(warm, args, **kw):
    """The warm run and a fresh interpreter's, side by side."""
    fresh = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60, **kw)
    return warm.run(args, **kw), fresh


def test_a_source_run_gets_its_arguments_input_and_exit_status(warm):
    src = "import sys, json; print(json.dumps(sys.argv)); print(sys.stdin.read().upper()); sys.exit(3)"
    got, fresh = both(warm, ["-c", src, "a", "b c"], input="some input\n")
    assert (got.returncode, got.stdout, got.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
    assert got.returncode == 3 and '["-c", "a", "b c"]' in got.stdout and "SOME INPUT" in got.stdout


def test_a_module_run_is_main_with_its_arguments(warm):
    got, fresh = both(warm, ["-m", "json.tool", "--help"])
    assert got.returncode == fresh.returncode == 0
    assert got.stdout == fresh.stdout


def test_the_runs_environment_and_folder_are_its_own(warm, tmp_path):
    src = "import os; print(os.environ.get('ONLY_HERE'), os.environ.get('HOME'), os.getcwd())"
    got, fresh = both(warm, ["-c", src], env={"ONLY_HERE": "yes"}, cwd=str(tmp_path))
    assert got.stdout == fresh.stdout == f"yes None {tmp_path}\n"


def test_a_failing_run_says_why_on_its_error_output(warm):
    got, fresh = both(warm, ["-c", "raise ValueError('no such thing')"])
    assert got.returncode == fresh.returncode == 1
    assert "ValueError: no such thing" in got.stderr and got.stderr.splitlines()[-1] == fresh.stderr.splitlines()[-1]
    got, fresh = both(warm, ["-c", "import sys; sys.exit('a message')"])
    assert (got.returncode, got.stderr) == (fresh.returncode, fresh.stderr) == (1, "a message\n")


def test_a_run_leaves_nothing_for_the_next(warm):
    assert warm.run(["-c", "import json; json.CHANGED = 1; import os; os.environ['LEFT'] = '1'"]).returncode == 0
    got = warm.run(["-c", "import json, os; print(hasattr(json, 'CHANGED'), 'LEFT' in os.environ)"])
    assert got.stdout == "False False\n"


def test_a_hung_run_ends_at_its_time_limit_and_the_next_run_is_answered(warm):
    with pytest.raises(subprocess.TimeoutExpired):
        warm.run(["-c", "import time; time.sleep(60)"], timeout=1.0)
    assert warm.run(["-c", "print('after')"]).stdout == "after\n"
