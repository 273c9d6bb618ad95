"""Where spectui keeps things: every folder it reads or writes on the operator's machine, and the
host's default state folder.

- shipped data (profiles, presets, prompts): package data in ``spectui/data/``, found with
  ``importlib.resources`` wherever the package is installed (``--user``, ``--prefix``, a venv);
- the user's config (``SPECTUI_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/spectui``, else the platform's),
  data (``SPECTUI_DATA_DIR``) and cache (``SPECTUI_CACHE_DIR``, else ``$XDG_CACHE_HOME/spectui``,
  else the platform's) folders.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

HOST_STATE_DEFAULT = "~/.cache/spectui"
SHIPPED_PACKAGE = "spectui.data"


def _xdg(variable: str) -> Path | None:
    value = os.environ.get(variable)
    if value and os.path.isabs(value):  # the XDG spec ignores a relative value
        return Path(value) / "spectui"
    return None


def _platform_dir(kind: str) -> Path:
    """The platform's ``kind`` folder for spectui (``config``, ``data``, ``cache``, ``log``)."""
    import platformdirs  # loaded when no variable names the folder: ``spectui --help`` starts without it

    return Path(getattr(platformdirs, f"user_{kind}_dir")("spectui"))


def shipped_data_dir(kind: str) -> Path:
    """The folder of shipped ``kind`` files (``profiles``, ``presets``, ``prompts``) inside the
    installed package."""
    return Path(str(resources.files(SHIPPED_PACKAGE).joinpath(kind)))


def path_list(value: str) -> list[Path]:
    """The folders of an ``os.pathsep``-separated environment value, ``~`` expanded."""
    return [Path(p).expanduser() for p in value.split(os.pathsep) if p]


def user_config_dir() -> Path:
    """The operator's spectui config folder: ``SPECTUI_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/spectui``,
    else the platform's (``~/.config/spectui`` on Linux)."""
    override = os.environ.get("SPECTUI_CONFIG_DIR")
    if override:
        return Path(override).expanduser()
    return _xdg("XDG_CONFIG_HOME") or _platform_dir("config")


def user_data_dir() -> Path:
    """The history and exports: ``SPECTUI_DATA_DIR``, else the platform's (``~/.local/share/spectui``)."""
    override = os.environ.get("SPECTUI_DATA_DIR")
    if override:
        return Path(override).expanduser()
    return _xdg("XDG_DATA_HOME") or _platform_dir("data")


def user_cache_dir() -> Path:
    """Caches (flag lists, SGLang source, the demo host): ``SPECTUI_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/spectui``, else the platform's (``~/.cache/spectui`` on Linux)."""
    override = os.environ.get("SPECTUI_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    return _xdg("XDG_CACHE_HOME") or _platform_dir("cache")


def log_file() -> Path:
    """The console's log file: ``$XDG_STATE_HOME/spectui/log/spectui.log``, else the platform's
    (``~/.local/state/spectui/log/spectui.log`` on Linux)."""
    state = _xdg("XDG_STATE_HOME")
    return (state / "log" if state else _platform_dir("log")) / "spectui.log"


def demo_state_dir() -> str:
    """The simulated host's state folder for ``--demo`` (override: ``SPECTUI_DEMO_STATE``)."""
    return os.environ.get("SPECTUI_DEMO_STATE") or str(user_cache_dir() / "demo")


def settings_file() -> Path:
    """The settings file, ``config.yaml`` in :func:`user_config_dir` (theme, default host, keymap, ...)."""
    return user_config_dir() / "config.yaml"


def flag_cache_dir() -> Path:
    """Hosts' launcher flag lists and parser verdicts (``spectui.core.profiles.flagcache``)."""
    return user_cache_dir() / "flags"


def sglang_cache_dir() -> Path:
    """Unpacked SGLang source trees (``spectui.core.source.wheels``)."""
    return user_cache_dir() / "sglang"


def recordings_dir() -> Path:
    """Where the console's record key (ctrl+r) writes: ``recordings`` in :func:`user_data_dir`."""
    return user_data_dir() / "recordings"
