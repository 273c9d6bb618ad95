"""The real launch commands of tests/fixtures/real/launch_commands, as server argv lists."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

COMMANDS_FILE = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "launch_commands" / "commands.json"
_SHELL_ENDS = {"|", "||", "&&", ";", "&"}


def server_argv(command: str) -> list[str]:
    """The words after ``-m sglang.launch_server`` (or ``sglang serve``) in a published shell
    command: line continuations joined, environment and ``docker run`` prefixes dropped."""
    words = shlex.split(command.replace("\\\n", " "))
    for i, word in enumerate(words):
        if word == "sglang.launch_server" and i and words[i - 1] == "-m":
            rest = words[i + 1:]
            break
        if word == "serve" and i and words[i - 1] == "sglang":
            rest = words[i + 1:]
            break
    else:
        raise ValueError(f"no SGLang launcher in {command[:60]!r}")
    out = []
    for word in rest:
        if word in _SHELL_ENDS or word.startswith((">", "2>")):
            break
        out.append(word)
    return out


def load_commands(path: Path = COMMANDS_FILE) -> list[dict]:
    """Each published command with its ``id``, ``url`` and server ``argv``."""
    items = json.loads(Path(path).read_text(encoding="utf-8"))
    return [{**item, "argv": server_argv(item["command"])} for item in items]
