"""Host facts: who and what the host is, read cheaply (never importing torch or sglang)."""

from __future__ import annotations

from .source.locate import sglang_info

import os
import platform
import pwd
import socket
import sys


def _user():
    """The name of the user the agent runs as (its uid when the name is unknown)."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def _os_name():
    try:
        with open("/etc/os-release") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def host_facts(gpu_source):
    """``gpu_source`` is the selected GPU source (it knows the driver and the GPU list)."""
    inventory = gpu_source.inventory() if gpu_source is not None else {"driver_version": None, "gpus": []}
    return {
        "hostname": socket.gethostname(),
        "user": _user(),
        "os": _os_name(),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": {"path": sys.executable, "version": "%d.%d.%d" % sys.version_info[:3]},
        "sglang": sglang_info(),
        "nvidia_driver": inventory.get("driver_version"),
        "gpus": inventory.get("gpus", []),
        "gpu_source": gpu_source.name if gpu_source is not None else None,
    }
