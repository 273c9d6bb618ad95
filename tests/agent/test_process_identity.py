"""What a process runs (``process.identity``) is told only from a finished exec: a process that shows no command line
(a zombie, or one whose exec has not set up its arguments yet, right after ``subprocess.Popen`` returned) has no
identity yet, so a record never keeps the identity of half an exec, which would later read as "it exec'd" and leave
spectui's own server unsignalled and listed as a found one."""
from __future__ import annotations

import subprocess
import sys
import time

from spectui.agent.servers import process


def test_a_process_without_a_command_line_has_no_identity_yet():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 10
        while (process.proc_stat(child.pid) or ("?",))[0] != "Z":  # exited, not reaped: a zombie, argv empty
            assert time.monotonic() < deadline, "the child never exited"
            time.sleep(0.01)
        with open("/proc/%d/cmdline" % child.pid, "rb") as fh:
            assert fh.read() == b""
        assert process.identity(child.pid) is None
        assert process.became_other(child.pid, "0123456789abcdef0123") is None  # nothing known, nothing claimed
        t = time.monotonic()
        assert process.identity_after_exec(child.pid, wait_s=5.0) is None
        assert time.monotonic() - t < 1.0, "it waited out its whole deadline on a process that has ended"
    finally:
        child.wait()


def test_the_identity_taken_right_after_a_start_is_the_one_a_later_look_sees(tmp_path):
    """A start reads the identity as soon as ``spawn`` returns; on this machine about one start in twenty is then
    still in its exec (no command line yet). Two hundred starts: each recorded identity is the server's own."""
    log = str(tmp_path / "log")
    mismatched = []
    for i in range(200):
        popen = process.spawn([sys.executable, "-c", "import time; time.sleep(30)", str(i)], {}, log)
        try:
            ident = process.identity_after_exec(popen.pid)
            deadline = time.monotonic() + 5
            while not process.cmdline(popen.pid) and time.monotonic() < deadline:
                time.sleep(0.005)
            if ident is None or process.became_other(popen.pid, ident) is not None:
                mismatched.append(i)
        finally:
            popen.kill()
            popen.wait()
    assert not mismatched, "starts %s recorded another identity than the program they run" % mismatched
