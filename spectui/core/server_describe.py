"""Server views as text: ``servers describe``, the stop plan a confirmation shows, switch holders.

Everything here comes from the host: argv words, commands, user names, the ``started_by`` and
``log_source`` sentences. Each is shown with its secret flag values masked
(:func:`spectui.core.profiles.secret_flags.redact_argv`) and its control characters made visible
(:func:`spectui.core.textsafe.visible`), so a command line cannot drive the operator's terminal.

A server SGLang was launched with is recognised by its leader command line (``python -m
sglang.launch_server ...`` or ``sglang serve ...``; sglang 0.5.23 wheel, sglang/cli/serve.py); the
processes a stop signals include its children, whose titles SGLang sets to ``sglang::scheduler_TP0``
and the like (sglang/srt/managers/scheduler.py:6294).
"""

from __future__ import annotations

import shlex
import time
from typing import Any

from spectui.agent.protocol import STOP_GRACE_S
from spectui.core.profiles.secret_flags import REDACTED, redact_argv
from spectui.core.textsafe import visible

ORIGIN_TEXT = {"spectui": "started by spectui", "external": "spectui did not start it",
               "adopted": "found running, adopted by spectui"}


def command_text(argv: list[str] | None, *, limit: int | None = None) -> str:
    """``argv`` as one shell-quoted line, secret values masked, control characters shown; cut to ``limit``."""
    if not argv:
        return "-"
    words = redact_argv([str(w) for w in argv]) or []
    text = visible(" ".join(w if w == REDACTED else shlex.quote(w) for w in words))
    return shorten(text, limit)


def process_command(command: str | None, *, limit: int | None = None) -> str:
    """A process's command line as the host gave it (one string), secret values masked, made visible."""
    if not command:
        return "-"
    words = redact_argv(str(command).split()) or []
    return shorten(visible(" ".join(words)), limit)


def shorten(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[:max(limit - 1, 1)] + "…"


def host_text(value: Any) -> str:
    """A one-line field from the host, made visible; ``-`` when absent."""
    return "-" if value in (None, "") else visible(str(value))


def origin_of(view: dict) -> str:
    return view.get("origin") or "spectui"


def started_by_text(view: dict) -> str:
    """How a server spectui did not start was started (``tmux pane %3 (session work, window 0)``)."""
    sb = view.get("started_by")
    if isinstance(sb, dict):
        return host_text(sb.get("text") or sb.get("kind"))
    return "spectui" if origin_of(view) == "spectui" else "-"


def log_source_text(view: dict) -> str:
    src = view.get("log_source")
    if isinstance(src, dict) and src.get("text"):
        return host_text(src["text"])
    if view.get("log_path"):
        return "following " + host_text(view["log_path"])
    return "-"


def gpus_text(gpus: Any) -> str:
    return ",".join(str(g) for g in gpus) if gpus else "-"


def user_text(view: dict) -> str:
    user = host_text(view.get("user"))
    return f"{user} (uid {view['uid']})" if view.get("uid") is not None else user


def _when(ts: Any) -> str:
    if not isinstance(ts, (int, float)):
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def speculative_text(view: dict) -> str:
    spec = view.get("speculative") or {}
    algorithm = spec.get("algorithm")
    if not algorithm:
        return "off"
    parts = [f"{k.replace('_', ' ')} {spec[k]}" for k in ("num_steps", "topk", "draft_tokens")
             if spec.get(k) is not None]
    return host_text(algorithm) + (f" ({', '.join(parts)})" if parts else "")


def describe(view: dict) -> list[str]:
    """``servers describe NAME``: every fact the host gave about one server, one ``label  value`` a line."""
    origin = origin_of(view)
    rows: list[tuple[str, str]] = [
        ("state", host_text(view.get("state")) + (f": {host_text(view['reason'])}" if view.get("reason") else "")),
        ("origin", f"{origin} ({ORIGIN_TEXT.get(origin, origin)})"),
        ("command", command_text(view.get("argv"))),
        ("env keys", ", ".join(host_text(k) for k in view.get("env_keys") or []) or "-"),
        ("started by", started_by_text(view)),
        ("log", log_source_text(view)),
        ("metrics", host_text(view["metrics_note"]) if view.get("metrics_note") else "on (/metrics)"),
        ("user", user_text(view)),
        ("process", f"pid {view.get('pid') or '-'}, process group {view.get('pgid') or '-'}, "
                    f"session {view.get('sid') or '-'}"),
        ("start time", _when(view.get("started_at"))
         + (f" (start ticks {view['start_ticks']})" if view.get("start_ticks") is not None else "")),
        ("model", host_text(view.get("model"))),
        ("tp size", host_text(view.get("tp_size"))),
        ("speculative", speculative_text(view)),
        ("GPUs", gpus_text(view.get("gpus"))),
        ("port", f"{view.get('port') or '-'} (host {host_text(view.get('host') or '127.0.0.1')})"),
        ("can stop", "yes" if view.get("can_signal", True) else f"no: {host_text(view.get('why_not'))}"),
    ]
    width = max(len(label) for label, _ in rows)
    return [f"{host_text(view.get('name'))}"] + [f"  {label:<{width}}  {value}" for label, value in rows]


def plan_lines(plan: dict, *, grace_s: float = STOP_GRACE_S, verb: str = "Stopping") -> list[str]:
    """The processes a stop will signal (``server.plan_stop``), for the operator to confirm.

    ``verb`` says what the confirmation is for (``Stopping``, ``Adopting``)."""
    name = host_text(plan.get("name"))
    procs = plan.get("processes") or []
    target = (f"its process group {plan.get('pgid')}" if plan.get("signal") == "group" and plan.get("pgid")
              else "these processes")
    origin = origin_of(plan)
    lines = [f"{name} ({ORIGIN_TEXT.get(origin, origin)}; pid {plan.get('pid') or '-'}, user "
             f"{host_text(plan.get('user'))}, GPUs {gpus_text(plan.get('gpus'))}):",
             "  " + command_text(plan.get("argv"))]
    if verb == "Stopping":
        lines.append(f"{verb} it sends SIGTERM, then SIGKILL after {grace_s:g} s, to {target}:")
    else:
        lines.append(f"{verb} it makes spectui stop it like its own later: a stop signals {target}:")
    users = [host_text(p.get("user")) for p in procs]
    uw = max([4] + [len(u) for u in users])
    lines.append(f"  {'PID':>8}  {'USER':<{uw}}  COMMAND")
    for p, user in zip(procs, users):
        lines.append(f"  {p.get('pid'):>8}  {user:<{uw}}  {process_command(p.get('command'), limit=160)}")
    if plan.get("unit"):
        lines.append(f"systemd unit: {host_text(plan['unit'])}")
    if plan.get("note"):
        lines.append("note: " + host_text(plan["note"]))
    if not plan.get("allowed", True):
        lines.append("spectui may not signal them: " + host_text(plan.get("why_not")))
    return lines


def holder_lines(stops: list[dict]) -> list[str]:
    """The servers spectui did not start that a switch would stop (``server.plan_switch`` ``stops``)."""
    lines = []
    for s in stops:
        pids = [str(p[0] if isinstance(p, (list, tuple)) else p.get("pid")) for p in s.get("processes") or []]
        lines.append(f"{host_text(s.get('name'))} holds {host_text(s.get('holds'))}: pid {s.get('pid') or '-'}, user "
                     f"{host_text(s.get('user'))}, {len(pids)} process{'es' if len(pids) != 1 else ''} "
                     f"({', '.join(pids) or '-'})")
        lines.append("  " + command_text(s.get("argv")))
        if not s.get("allowed", True):
            lines.append("  spectui may not stop it: " + host_text(s.get("why_not")))
    return lines
