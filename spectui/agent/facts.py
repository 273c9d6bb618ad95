"""Host facts: who and what the host is, read cheaply (never importing torch or sglang)."""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import socket
import sys


def _os_name():
    try:
        with open("/etc/os-release") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def sglang_info():
    """Version and package path of SGLang for this Python, without importing it."""
    try:
        spec = importlib.util.find_spec("sglang")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return {"installed": False, "version": None, "path": None,
                "message": "SGLang is not installed for %s" % sys.executable}
    path = list(spec.submodule_search_locations)[0]
    version = None
    try:
        with open(os.path.join(path, "version.py")) as fh:
            m = re.search(r"""__version__\s*=\s*['"]([^'"]+)['"]""", fh.read())
            if m:
                version = m.group(1)
    except OSError:
        pass
    if version is None:
        try:
            from importlib import metadata  # Python 3.8+
            version = metadata.version("sglang")
        except Exception:
            version = None
    return {"installed": True, "version": version, "path": path, "message": None}


def host_facts(gpu_source):
    """``gpu_source`` is the selected GPU source (it knows the driver and the GPU list)."""
    inventory = gpu_source.inventory() if gpu_source is not None else {"driver_version": None, "gpus": []}
    return {
        "hostname": socket.gethostname(),
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
