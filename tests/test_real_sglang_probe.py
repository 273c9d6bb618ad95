"""The real-SGLang venv's check (tests/support/real_sglang.py ``_probe``): each test process asks it, and it imports
SGLang's server arguments (seconds of CPU); a venv found good is stamped, and the stamp holds only while the wheel's
files are the ones it was made for."""

from __future__ import annotations

import os
import stat

from tests.support import real_sglang as rs

FAKE_PYTHON = """#!/bin/sh
echo run >> "{calls}"
{answer}
"""


def fake_venv(tmp_path, answer="echo 0.5.23"):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    site = venv / "lib" / "python3.11" / "site-packages"
    (site / "sglang" / "srt").mkdir(parents=True)
    (site / "sglang" / "srt" / "server_args.py").write_text("# server args\n")
    (site / f"sglang-{rs.REAL_VERSION}.dist-info").mkdir()
    (site / f"sglang-{rs.REAL_VERSION}.dist-info" / "RECORD").write_text("sglang/__init__.py\n")
    python = venv / "bin" / "python"
    calls = tmp_path / "calls"
    python.write_text(FAKE_PYTHON.format(calls=calls, answer=answer))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    return str(python), calls, site


def runs(calls) -> int:
    return len(calls.read_text().split()) if calls.exists() else 0


def test_a_good_venv_is_probed_once_then_read_from_its_stamp(tmp_path):
    python, calls, _ = fake_venv(tmp_path)
    assert rs._probe(python) is None
    assert rs._probe(python) is None
    assert runs(calls) == 1


def test_another_wheel_is_probed_again(tmp_path):
    python, calls, site = fake_venv(tmp_path)
    assert rs._probe(python) is None
    (site / "sglang" / "srt" / "server_args.py").write_text("# another release's server args\n")
    assert rs._probe(python) is None
    assert runs(calls) == 2


def test_a_broken_venv_is_never_stamped(tmp_path):
    python, calls, _ = fake_venv(tmp_path, answer="echo 'ModuleNotFoundError: No module named torch' >&2; exit 1")
    for _ in range(2):
        assert "cannot import sglang.srt.server_args" in rs._probe(python)
    assert runs(calls) == 2
    assert not os.path.exists(os.path.join(os.path.dirname(os.path.dirname(python)), ".spectui-probed.json"))


def test_a_stamp_of_another_interpreter_is_not_taken(tmp_path):
    python, calls, _ = fake_venv(tmp_path)
    assert rs._probe(python) is None
    link = tmp_path / "venv" / "bin" / "python3"
    link.symlink_to(python)
    assert rs._probe(str(link)) is None
    assert runs(calls) == 2
