"""Where profile files live.

Two layers, later overriding earlier by profile name:

1. shipped profiles: the folders in ``$SPECTUI_PROFILES_PATH`` (``os.pathsep``-separated) when it
   is set, otherwise the profiles shipped inside the package (``spectui/data/profiles``, read with
   ``importlib.resources`` wherever spectui is installed);
2. the user's profiles: ``profiles/`` in the config folder (``spectui.core.paths.user_config_dir``:
   ``SPECTUI_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/spectui``, else ``~/.config/spectui`` on Linux).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from spectui.core.paths import path_list, shipped_data_dir, user_config_dir

PROFILES_PATH_ENV = "SPECTUI_PROFILES_PATH"
PROFILE_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class ProfileLayer:
    """A group of profile folders; a later layer overrides an earlier one by profile name."""

    label: str
    dirs: tuple[Path, ...]

    def files(self) -> list[Path]:
        out: list[Path] = []
        for folder in self.dirs:
            out.extend(profile_files(folder))
        return out


def shipped_profile_dirs() -> list[Path]:
    """The folders holding shipped profiles (see the module docstring)."""
    value = os.environ.get(PROFILES_PATH_ENV)
    if value:
        return path_list(value)
    folder = shipped_data_dir("profiles")
    return [folder] if folder.is_dir() else []


def user_profile_dir() -> Path:
    """The user's own profiles folder (may not exist)."""
    return user_config_dir() / "profiles"


def default_layers() -> list[ProfileLayer]:
    """Shipped profiles, then the user's."""
    return [
        ProfileLayer("shipped", tuple(shipped_profile_dirs())),
        ProfileLayer("user", (user_profile_dir(),)),
    ]


def profile_files(folder: Path) -> list[Path]:
    """The ``*.yaml``/``*.yml`` files directly in ``folder``, sorted; none if it does not exist."""
    try:
        entries = sorted(Path(folder).iterdir())
    except OSError:
        return []
    return [p for p in entries if p.suffix in PROFILE_SUFFIXES and p.is_file() and not p.name.startswith(".")]
