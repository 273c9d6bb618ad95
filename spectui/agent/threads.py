"""Names for the agent's threads as the system shows them."""
from __future__ import annotations

import sys

_PR_SET_NAME = 15
_libc = []


def name_this_thread(name):
    """Name the running thread as the system shows it (``/proc/<pid>/task/<tid>/comm``: ``top -H``, ``ps -L``; at
    most 15 bytes, Linux only): an operator (and bench/soak.py) tells a server's health check or telemetry thread by
    the server it serves."""
    if not sys.platform.startswith("linux"):
        return
    try:
        if not _libc:
            import ctypes
            _libc.append(ctypes.CDLL(None, use_errno=True))
        _libc[0].prctl(_PR_SET_NAME, name.encode("ascii", "replace")[:15], 0, 0, 0)
    except Exception:  # a name is a courtesy
        pass
