"""How a profile becomes a command line and an environment.

The command is always an argv list, never a shell string: each value reaches SGLang as exactly
one argument, whatever characters it holds. Where a remote shell cannot be avoided, quote each
word with ``shlex.quote`` (``format_command`` does, for display).
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from spectui.core.profiles.model import Profile
from spectui.core.profiles.secret_flags import redact_argv

#: What replaces the profile's launcher on a simulated host.
SIM_LAUNCHER: tuple[str, ...] = ("-m", "spectui.sim.server")
#: Prefix of the simulator's own flags (``sim: {hardware: ...}`` becomes ``--sim-hardware ...``).
SIM_FLAG_PREFIX = "sim-"
DEFAULT_PYTHON = "python3"


def format_value(value: Any) -> str:
    """One argv word for a YAML scalar (maps become compact JSON, for SGLang's JSON flags)."""
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def flag_words(name: str, value: Any) -> list[str]:
    """argv words for one flag: ``true`` -> bare flag, list -> flag followed by each value,
    ``false``/None -> nothing. A single value starting with ``-`` is written ``--flag=value`` so
    argparse cannot mistake it for an option."""
    flag = "--" + name
    if value is None or value is False:
        return []
    if value is True:
        return [flag]
    if isinstance(value, (list, tuple)):
        return [flag, *(format_value(v) for v in value)]
    text = format_value(value)
    if text.startswith("-"):
        return [f"{flag}={text}"]
    return [flag, text]


def build_argv(profile: Profile, *, simulated: bool, python: str | None = None) -> list[str]:
    """The server command for ``profile`` as an argv list.

    ``python`` overrides the profile's interpreter (the lifecycle passes the host's own). On a
    simulated host the launcher is ``-m spectui.sim.server`` and the ``sim`` knobs are appended
    as ``--sim-KEY VALUE``; elsewhere they are left out.
    """
    interpreter = python or profile.python or DEFAULT_PYTHON
    launcher = SIM_LAUNCHER if simulated else profile.launcher
    argv = [interpreter, *launcher]
    argv += flag_words("model-path", profile.model)
    argv += flag_words("host", profile.host)
    argv += flag_words("port", profile.port)
    if profile.metrics:
        argv.append("--enable-metrics")
    for name, value in profile.args.items():
        argv += flag_words(name, value)
    if simulated:
        for name, value in profile.sim.items():
            argv += flag_words(SIM_FLAG_PREFIX + name, value)
    return argv


def build_env(profile: Profile) -> dict[str, str]:
    """Environment additions for the server: the profile's ``env`` (``${VAR}`` references left
    as written, for the host to expand) plus ``CUDA_VISIBLE_DEVICES`` from ``gpus``."""
    env = {name: str(value) for name, value in profile.env.items()}
    if profile.gpus is not None:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(profile.gpus)
    return env


def format_command(argv: list[str]) -> str:
    """The argv as one shell-quoted line, for display: no env values, and the values of secret
    flags (``--api-key``, see ``secret_flags``) shown as ``<redacted>``."""
    return shlex.join(redact_argv(argv))
