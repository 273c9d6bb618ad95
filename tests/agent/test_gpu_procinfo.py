"""The user, command line and process group the agent adds to each GPU process, read from /proc."""

import getpass
import os
import subprocess
import time

from spectui.agent.gpu.procinfo import ProcessFacts


def test_each_gpu_process_gets_its_user_command_and_group_and_a_gone_one_gets_none():
    child = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        # Popen may return while the kernel is still setting up the new program's arguments (vfork wakes the parent
        # at the exec): the process this test describes is one that runs, so wait until its command line is there
        deadline = time.monotonic() + 10
        while not open(f"/proc/{child.pid}/cmdline", "rb").read() and time.monotonic() < deadline:
            time.sleep(0.01)
        gpus = [{"index": 0, "processes": [{"pid": child.pid, "used_mib": 512.0}]},
                {"index": 1, "processes": [{"pid": 2 ** 22 + 7, "used_mib": 1.0}]},  # beyond pid_max: gone
                {"index": 2, "processes": None}]  # a source that cannot list them
        facts = ProcessFacts()
        facts.annotate(gpus)
        p = gpus[0]["processes"][0]
        assert p == {"pid": child.pid, "used_mib": 512.0, "user": getpass.getuser(), "command": "sleep 30",
                     "pgid": child.pid}
        assert p["pgid"] != os.getpgid(0)
        assert gpus[1]["processes"][0]["user"] is None and gpus[1]["processes"][0]["command"] is None
        assert gpus[2]["processes"] is None
    finally:
        child.kill()
        child.wait()
    # the pid is gone: the next sample no longer names it
    gpus = [{"index": 0, "processes": [{"pid": child.pid, "used_mib": 512.0}]}]
    facts.annotate(gpus)
    assert gpus[0]["processes"][0]["command"] is None
