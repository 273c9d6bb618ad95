"""Server profiles: YAML files describing how to launch an SGLang server, and their checks.

Layout (one job per module):

- ``yamlsource``: YAML reading that keeps each key's and value's line and column;
- ``schema``: the fields a profile may have, and checking one file against them;
- ``resolve``: applying ``extends`` and filling in defaults;
- ``discovery``: where profile folders are (shipped, ``$SPECTUI_PROFILES_PATH``, user config);
- ``loader``: reading them all into a ``ProfileLibrary``, collecting every error;
- ``model``: ``Profile``, the resolved result (with a redacted view and a content hash);
- ``argv``: turning a profile into an argv list and an environment;
- ``multinode``: a profile over several hosts (``nodes``): each node's argv, and what SGLang would refuse;
- ``render``: a profile as a Slurm batch script, a Kubernetes LeaderWorkerSet or shell commands;
- ``flags`` / ``flagcache``: checking a profile against a host's ``--help``, and caching that;
- ``errors``: ``ProfileError``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# each name loads its module when first used: a command that needs one model class or the errors does not load
# the YAML reader, the schema checks and the flag parser with it (``spectui demo`` reads a cached library)
_HOMES = {
    "build_argv": "argv", "build_env": "argv", "format_command": "argv",
    "PROFILES_PATH_ENV": "discovery", "ProfileLayer": "discovery", "default_layers": "discovery",
    "shipped_profile_dirs": "discovery", "user_profile_dir": "discovery",
    "ProfileError": "errors",
    "FlagCache": "flagcache",
    "FlagInfo": "flags", "FlagSet": "flags", "check_against": "flags", "parse_help_flags": "flags",
    "ProfileLibrary": "model", "load_profile": "loader", "load_profiles": "loader",
    "Location": "model", "Profile": "model",
}

if TYPE_CHECKING:
    from spectui.core.profiles.argv import build_argv, build_env, format_command
    from spectui.core.profiles.discovery import (PROFILES_PATH_ENV, ProfileLayer, default_layers,
                                                 shipped_profile_dirs, user_profile_dir)
    from spectui.core.profiles.errors import ProfileError
    from spectui.core.profiles.flagcache import FlagCache
    from spectui.core.profiles.flags import FlagInfo, FlagSet, check_against, parse_help_flags
    from spectui.core.profiles.loader import load_profile, load_profiles
    from spectui.core.profiles.model import Location, Profile, ProfileLibrary


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "PROFILES_PATH_ENV",
    "FlagCache",
    "FlagInfo",
    "FlagSet",
    "Location",
    "Profile",
    "ProfileError",
    "ProfileLayer",
    "ProfileLibrary",
    "build_argv",
    "build_env",
    "check_against",
    "default_layers",
    "format_command",
    "load_profile",
    "load_profiles",
    "parse_help_flags",
    "shipped_profile_dirs",
    "user_profile_dir",
]
