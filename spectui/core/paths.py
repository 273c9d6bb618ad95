"""Where spectui keeps things on the operator's machine, and the host's default state folder."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

HOST_STATE_DEFAULT = "~/.cache/spectui"


def demo_state_dir() -> str:
    """The simulated host's state folder for ``--demo`` (override: ``SPECTUI_DEMO_STATE``)."""
    return os.environ.get("SPECTUI_DEMO_STATE") or str(Path(platformdirs.user_cache_dir("spectui")) / "demo")


def user_data_dir() -> Path:
    return Path(os.environ.get("SPECTUI_DATA_DIR") or platformdirs.user_data_dir("spectui"))


def user_config_dir() -> Path:
    """The operator's spectui config folder: ``SPECTUI_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/spectui``,
    else the platform's (``~/.config/spectui`` on Linux)."""
    override = os.environ.get("SPECTUI_CONFIG_DIR")
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):  # the XDG spec ignores a relative value
        return Path(xdg) / "spectui"
    return Path(platformdirs.user_config_dir("spectui"))


def settings_file() -> Path:
    """The settings file, ``config.yaml`` in :func:`user_config_dir` (theme, default host, keymap, ...)."""
    return user_config_dir() / "config.yaml"
