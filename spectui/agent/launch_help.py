"""Asking a host interpreter about SGLang: its version (cheaply) and its launcher's ``--help``."""

from __future__ import annotations

import json
import subprocess

from .bootstrap import own_sources
from .protocol import AgentError

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
    r = _run([python, "-c", own_sources()["sglang_probe"]], 30)
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
