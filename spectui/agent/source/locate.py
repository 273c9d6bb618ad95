"""Where an interpreter's SGLang package is installed, and its version, without importing it
(no torch, no CUDA init).

The one SGLang locator. The agent calls ``sglang_info()`` for its own interpreter, and
``locate(python)`` runs this file's source with another interpreter (``python -c``, from ``/``
so that a folder named ``sglang`` in the working directory is not mistaken for the package)
to ask a profile's venv the same question. Standalone on purpose: standard library only, and
nothing of the agent imported at module level.
"""

import importlib.util
import json
import os
import re
import subprocess
import sys


def _read_version_file(path):
    try:
        with open(path) as fh:
            m = re.search(r"""__version__\s*(?::\s*str\s*)?=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", fh.read())
    except OSError:
        return None
    return m.group(1) if m else None


def _installed_version(path):
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
                return v
    return version


def sglang_info():
    """``{"python", "python_version", "installed", "path", "version", "message"}`` for this
    interpreter. A folder named ``sglang`` without ``__init__.py`` (a namespace package, such as
    a git checkout's top folder) is not SGLang."""
    out = {"python": sys.executable, "python_version": "%d.%d.%d" % sys.version_info[:3],
           "installed": False, "path": None, "version": None, "message": None}
    try:
        spec = importlib.util.find_spec("sglang")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations or spec.origin in (None, "namespace"):
        out["message"] = "SGLang is not installed for %s" % sys.executable
        return out
    out["installed"] = True
    out["path"] = list(spec.submodule_search_locations)[0]
    out["version"] = _installed_version(out["path"])
    return out


def locate(python, timeout=60.0):
    """``sglang_info()`` as the interpreter ``python`` answers it, plus ``asked`` (``python``
    as given); ``message`` names ``python`` and, where it differs, the interpreter it runs."""
    # Imported here, not at the top: this file also runs alone (``python -c``).
    from ..bootstrap import own_sources
    from ..protocol import AgentError

    argv = [python, "-c", own_sources()["source.locate"]]
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, cwd="/")
    except FileNotFoundError:
        raise AgentError("no_python", "%s does not exist on the host" % python)
    except PermissionError:
        raise AgentError("no_python", "%s is not executable on the host" % python)
    except subprocess.TimeoutExpired:
        raise AgentError("timeout", "%s did not answer within %d s" % (python, timeout))
    try:
        out = json.loads(r.stdout.decode("utf-8").strip().splitlines()[-1])
    except (ValueError, IndexError):
        last = (r.stderr.decode("utf-8", "replace").strip().splitlines() or ["exit %d" % r.returncode])[-1]
        raise AgentError("python_failed", "%s could not look for SGLang: %s" % (python, last))
    out["asked"] = python
    real = out.get("python") or python
    out["message"] = None if out["installed"] else (
        "SGLang is not installed for %s" % python + ("" if real == python else " (%s)" % real))
    return out


if __name__ == "__main__":
    print(json.dumps(sglang_info()))
