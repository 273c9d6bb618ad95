"""The flag list of the launcher a profile runs on a host, and an imported profile checked by loading it back.

Shared by ``spectui profiles import`` and the console's import of a running server (``I``): abbreviated
flags (``--tp``) are resolved against the flags of the launcher on the host: the simulator's on a
simulated host, else SGLang's for the given interpreter (a running server's own, else the target's).
The ``--help`` text is read once per release (the simulator's: once per content) and cached
(:class:`FlagCache`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from spectui.agent.protocol import Method
from spectui.core.errors import SpectuiError
from spectui.core.profiles.argv import SIM_LAUNCHER
from spectui.core.profiles.errors import ProfileError
from spectui.core.profiles.flagcache import FlagCache, simulator_flags_key
from spectui.core.profiles.flags import FlagSet, parse_help_flags
from spectui.core.profiles.importer import ImportedProfile
from spectui.core.profiles.loader import load_profile

SGLANG_LAUNCHER = ["-m", "sglang.launch_server"]
HELP_TIMEOUT_S = 240  # a real SGLang's --help imports torch


def server_python(view: dict) -> str | None:
    """The interpreter a running server was started with (its argv[0], when that is a Python)."""
    argv = view.get("argv") or []
    return str(argv[0]) if argv and Path(str(argv[0])).name.startswith("python") else None


async def session_flagset(session, cache: FlagCache | None = None, *,
                          python: str | None = None) -> tuple[FlagSet, str]:
    """The launcher's flags on the session's host and where they came from; ``python`` (a running server's
    own interpreter) overrides the target's on a real host."""
    cache = cache or FlagCache()
    host = session.transport.destination
    if session.target.simulated:
        python, launcher = session.hello.get("python"), SIM_LAUNCHER
        version, label = simulator_flags_key(str(python)), f"the simulated SGLang on {host}"
    else:
        python, launcher = python or session.target.python or "python3", SGLANG_LAUNCHER
        info = await session.client.call(Method.PYTHON_SGLANG, {"python": python}, timeout=60)
        version = f"sglang-{info.get('version') or 'unknown'}@{python}:{' '.join(launcher)}"
        label = f"SGLang {info.get('version') or '(version unknown)'} on {host}"
    flagset = cache.get(host, version)
    if flagset is None:
        res = await session.client.call(Method.LAUNCH_HELP, {"python": python, "launcher": launcher},
                                        timeout=HELP_TIMEOUT_S)
        flagset = parse_help_flags(res["text"])
        cache.put(host, version, flagset)
    return flagset, label


def checked_yaml(imported: ImportedProfile, failure: str) -> str:
    """The profile's YAML, after loading it back the way spectui will; a failure raises ``SpectuiError``
    with ``failure`` and the loader's sentence."""
    text = imported.to_yaml()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{imported.name}.yaml"
        path.write_text(text, encoding="utf-8")
        try:
            load_profile(path, layers=[])
        except ProfileError as exc:
            raise SpectuiError(f"{failure} ({exc.message})") from None
    return text
