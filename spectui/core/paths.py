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
    return Path(os.environ.get("SPECTUI_CONFIG_DIR") or platformdirs.user_config_dir("spectui"))
