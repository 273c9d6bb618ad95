"""Who a GPU process is: its user, command line and process group, read from /proc.

NVML (``nvmlDeviceGetComputeRunningProcesses``) and the simulated GPUs give only a pid and the
memory it holds. nvitop shows the user and command beside them; so does the console, which
also matches the process group to the server that owns it. Each process is read once per
lifetime (the start time in ``/proc/PID/stat`` tells a reused pid apart); a process of another
PID namespace (a container), one that exited, or one this user may not read gets ``None``.
"""

from __future__ import annotations

from ..servers.proc_table import cmdline, read_proc, user_name

COMMAND_LIMIT = 4096  # characters of a command line a frame carries


class ProcessFacts(object):
    def __init__(self):
        self._known = {}  # pid -> (start_ticks, {"user", "command", "pgid"})

    def facts(self, pid):
        """``{"user", "command", "pgid"}`` of ``pid`` (each None when it cannot be read)."""
        p = read_proc(pid)
        if p is None:
            self._known.pop(pid, None)
            return {"user": None, "command": None, "pgid": None}
        seen = self._known.get(pid)
        if seen is not None and seen[0] == p.start_ticks:
            return seen[1]
        argv = cmdline(pid)
        command = " ".join(argv) if argv else "[%s]" % p.comm
        d = {"user": user_name(p.uid), "command": command[:COMMAND_LIMIT], "pgid": p.pgid}
        self._known[pid] = (p.start_ticks, d)
        return d

    def annotate(self, gpus):
        """Add ``user``, ``command`` and ``pgid`` to every process of a sample's GPUs (in place)."""
        seen = set()
        for g in gpus:
            for proc in g.get("processes") or ():
                pid = proc.get("pid")
                if isinstance(pid, int) and pid > 0:
                    proc.update(self.facts(pid))
                    seen.add(pid)
        for pid in [p for p in self._known if p not in seen]:
            del self._known[pid]  # gone from the GPUs: forget it
        return gpus
