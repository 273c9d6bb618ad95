"""Asking a host interpreter about SGLang: its version (cheaply), its launcher's ``--help``, and
its own argument parser's verdict on launch commands (``launch.parse``)."""

from __future__ import annotations

import json
import subprocess

from ..bootstrap import own_sources
from ..protocol import AgentError
from ..source.locate import locate


def _run(argv, timeout, stdin_bytes=None, doing=None):
    """Run ``argv`` (a host interpreter and its arguments); ``doing`` words the timeout sentence."""
    try:
        return subprocess.run(argv, input=stdin_bytes, stdin=None if stdin_bytes is not None else subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except FileNotFoundError:
        raise AgentError("no_python", "%s does not exist on the host" % argv[0])
    except PermissionError:
        raise AgentError("no_python", "%s is not executable on the host" % argv[0])
    except subprocess.TimeoutExpired:
        raise AgentError("timeout", "%s did not %s within %d s" % (
            argv[0] if doing else " ".join(argv[:3]), doing or "finish", timeout))


def sglang_version(params):
    return locate(params["python"], timeout=30)


def launch_help(params):
    argv = [params["python"]] + list(params.get("launcher") or ["-m", "sglang.launch_server"]) + ["--help"]
    r = _run(argv, float(params.get("timeout_s") or 180))
    text = r.stdout.decode("utf-8", "replace")
    if r.returncode != 0 or "--" not in text:
        last = (r.stderr.decode("utf-8", "replace").strip().splitlines() or ["exit %d" % r.returncode])[-1]
        raise AgentError("help_failed", "%s printed no flag list: %s" % (" ".join(argv), last))
    return {"argv": argv, "text": text}


def _parse_request(params):
    request = {"commands": [{"items": [list(map(str, item)) for item in command.get("items") or []]}
                            for command in params.get("commands") or []]}
    if params.get("parser"):
        request["parser"] = {"kind": str(params["parser"].get("kind") or "add_cli_args"),
                             "target": str(params["parser"]["target"])}
    return request


def launch_parse(params):
    """Parse each command (a list of items: one flag and its values) with the host's SGLang parser.

    Answers ``{"mode": "parser", ...}`` with the parser's verdicts (see ``servers.sglang_argparse``); where
    that parser cannot be imported, ``{"mode": "help", "reason": ..., "text": ...}`` with the
    launcher's ``--help`` text instead, for the client to check against.
    """
    python = params["python"]
    timeout = float(params.get("timeout_s") or 180)
    request = json.dumps(_parse_request(params)).encode("utf-8")
    argv = [python, "-c", own_sources()["servers.sglang_argparse"]]
    r = _run(argv, timeout, stdin_bytes=request, doing="parse the launch flags")
    try:
        answer = json.loads(r.stdout.decode("utf-8", "replace"))
    except ValueError:
        answer = None
    if r.returncode != 0 or not isinstance(answer, dict):
        last = (r.stderr.decode("utf-8", "replace").strip().splitlines() or ["exit %d" % r.returncode])[-1]
        raise AgentError("python_failed", "%s could not run the flag check: %s" % (python, last))
    if answer.get("imported"):
        answer["mode"] = "parser"
        return answer
    reason = answer.get("reason") or "the parser could not be built"
    if params.get("help_text") is False:  # the client has this version's flags already
        return {"mode": "help", "reason": reason, "python": answer.get("python"), "argv": None, "text": None}
    try:
        helped = launch_help({"python": python, "launcher": params.get("launcher"), "timeout_s": timeout})
    except AgentError as exc:
        raise AgentError("help_failed", "%s; and its --help failed too: %s" % (reason, exc.message))
    return {"mode": "help", "reason": reason, "python": answer.get("python"), "argv": helped["argv"],
            "text": helped["text"]}
