"""Older host interpreters for the agent's tests: ``$SPECTUI_PY38`` (scripts/test sets it from
scripts/py38.sh), else pyenv's versions, else one on PATH (not a pyenv shim, which may point nowhere)."""

from __future__ import annotations

import glob
import os
import shutil


def find_python(version: str) -> str | None:
    """An interpreter of ``version`` (``"3.8"``) on this machine, or None."""
    if version == "3.8" and os.environ.get("SPECTUI_PY38"):
        return os.environ["SPECTUI_PY38"]
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    for p in sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", f"python{version}"))):
        return p
    found = shutil.which("python" + version)
    return found if found and "/shims/" not in found else None
