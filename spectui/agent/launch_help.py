"""Asking a host interpreter about SGLang: its version (cheaply) and its launcher's ``--help``."""

from __future__ import annotations

import json
import subprocess

from .protocol import AgentError

# Runs in the profile's interpreter: find SGLang's version without importing sglang.
_VERSION_PROBE = r"""
import importlib.util, json, os, re, sys
spec = importlib.util.find_spec("sglang")
out = {"installed": False, "version": None, "path": None, "python": sys.executable}
if spec is not None and spec.submodule_search_locations:
    path = list(spec.submodule_search_locations)[0]
    out.update(installed=True, path=path)
    try:
        m = re.search(r'__version__\s*=\s*[\'"]([^\'"]+)[\'"]', open(os.path.join(path, "version.py")).read())
        out["version"] = m.group(1) if m else None
    except OSError:
        pass
print(json.dumps(out))
"""


def _run(argv, timeout):
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout)
    except FileNotFoundError:
        raise AgentError("no_python", "%s does not exist on the host" % argv[0])
    except PermissionError:
        raise AgentError("no_python", "%s is not executable on the host" % argv[0])
    except subprocess.TimeoutExpired:
        raise AgentError("timeout", "%s did not finish within %d s" % (" ".join(argv[:3]), timeout))


def sglang_version(params):
    python = params["python"]
    r = _run([python, "-c", _VERSION_PROBE], 30)
    if r.returncode != 0:
        last = (r.stderr.decode("utf-8", "replace").strip().splitlines() or ["exit %d" % r.returncode])[-1]
        raise AgentError("python_failed", "%s could not run: %s" % (python, last))
    return json.loads(r.stdout.decode("utf-8"))


def launch_help(params):
    argv = [params["python"]] + list(params.get("launcher") or ["-m", "sglang.launch_server"]) + ["--help"]
    r = _run(argv, float(params.get("timeout_s") or 180))
    text = r.stdout.decode("utf-8", "replace")
    if r.returncode != 0 or "--" not in text:
        last = (r.stderr.decode("utf-8", "replace").strip().splitlines() or ["exit %d" % r.returncode])[-1]
        raise AgentError("help_failed", "%s printed no flag list: %s" % (" ".join(argv), last))
    return {"argv": argv, "text": text}
