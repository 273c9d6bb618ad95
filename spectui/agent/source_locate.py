"""Where an interpreter's SGLang package is installed, and its version, without importing it."""

from __future__ import annotations

import json
import subprocess

from .protocol import AgentError

# Run by the interpreter asked about (from "/", so a folder named sglang in the agent's working
# directory is not mistaken for the installed package).
_PROBE = r"""
import importlib.util, json, sys
out = {"python": sys.executable, "python_version": "%d.%d.%d" % sys.version_info[:3],
       "installed": False, "path": None, "version": None}
try:
    spec = importlib.util.find_spec("sglang")
except (ImportError, ValueError):
    spec = None
if spec is not None and spec.submodule_search_locations:
    out["installed"] = True
    out["path"] = list(spec.submodule_search_locations)[0]
    try:
        from importlib import metadata
        out["version"] = metadata.version("sglang")
    except Exception:
        pass
print(json.dumps(out))
"""


def locate(python, timeout=60.0):
    """``{"python", "installed", "path", "version", "message"}`` for the interpreter ``python``."""
    argv = [python, "-c", _PROBE]
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
