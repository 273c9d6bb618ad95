"""Looking at processes from tests, through /proc (a zombie counts as gone; a process whose main thread has ended
while another of its threads runs does not: spectui.agent.servers.process.running)."""

import os
import time

from spectui.agent.servers.process import proc_stat, running


def pid_alive(pid: int) -> bool:
    st = proc_stat(pid)
    return st is not None and running(pid, st)


def wait_gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return False


def _live_pids_where(field: int, value: int) -> list[int]:
    """Live processes whose /proc stat field ``field`` (after the command name: 1 ppid, 2 pgid)
    equals ``value``."""
    out = []
    for n in os.listdir("/proc"):
        if n.isdigit():
            try:
                with open(f"/proc/{n}/stat") as fh:
                    rest = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(rest[field]) == value and (rest[0] != "Z" or pid_alive(int(n))):
                out.append(int(n))
    return out


def group_pids(pgid: int) -> list[int]:
    """Live processes of process group ``pgid``."""
    return _live_pids_where(2, pgid)


def child_pids(ppid: int) -> list[int]:
    """Live child processes of ``ppid``."""
    return _live_pids_where(1, ppid)
