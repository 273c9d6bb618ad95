"""Which SGLang a Python has, without importing it (no torch, no CUDA init).

Standalone on purpose: the agent imports it, and also runs this file's source with another
interpreter (``python -c``) to ask a profile's venv the same question.
"""

import importlib.util
import json
import os
import re
import sys


def _read_version_file(path):
    try:
        with open(path) as fh:
            m = re.search(r"""__version__\s*(?::\s*str\s*)?=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", fh.read())
    except OSError:
        return None
    return m.group(1) if m else None


def sglang_info():
    try:
        spec = importlib.util.find_spec("sglang")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return {"installed": False, "version": None, "path": None, "python": sys.executable,
                "message": "SGLang is not installed for %s" % sys.executable}
    path = list(spec.submodule_search_locations)[0]
    version = None
    try:
        from importlib import metadata  # the installed distribution's own record

        version = metadata.version("sglang")
    except Exception:
        version = None
    if not version:
        # A source checkout: setuptools-scm writes _version.py; version.py may hold only a
        # fallback such as 0.0.0.dev0.
        for name in ("_version.py", "version.py"):
            v = _read_version_file(os.path.join(path, name))
            if v and not v.startswith("0.0.0"):
                version = v
                break
    return {"installed": True, "version": version, "path": path, "python": sys.executable, "message": None}


if __name__ == "__main__":
    print(json.dumps(sglang_info()))
