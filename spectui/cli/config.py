"""``spectui config path`` and ``spectui config show [--json]``: the settings file, and each setting in
force with where it came from: a command-line flag, an environment variable, the settings file (with its
line) or the default. See docs/settings.md.

``config show`` takes the flags that other commands take for the same settings (``-p 2222``,
``--telemetry-hz 2``, ...), so ``spectui config show -p 2222`` shows what ``spectui connect gpu -p 2222``
would use.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass
from typing import Any

# The settings a flag can set: (name in the file, flag, argparse options).
FLAGS = (
    ("telemetry_hz", "--telemetry-hz", {"metavar": "HZ", "type": float}),
    ("ssh.config", "-F", {"metavar": "FILE"}),
    ("ssh.identity", "-i", {"metavar": "KEY", "action": "append"}),
    ("ssh.port", "-p", {"metavar": "PORT", "type": int}),
    ("ssh.jump", "-J", {"metavar": "JUMP"}),
    ("ssh.known_hosts", "--known-hosts", {"metavar": "FILE"}),
    ("ssh.accept_new_host_key", "--accept-new-host-key", {"action": "store_const", "const": True}),
    ("ssh.connect_timeout", "--connect-timeout", {"metavar": "S", "type": float}),
    ("demo.port_base", "--port-base", {"metavar": "N", "type": int}),
    ("probe.backend", "--backend", {"choices": ("auto", "nccl", "gloo")}),
    ("probe.device", "--device", {"choices": ("auto", "cuda", "cpu")}),
)


@dataclass
class Setting:
    """One setting in force: ``source`` is flag, env, file or default; ``where`` the flag, the variable,
    ``FILE:LINE``, or what the default is."""

    name: str
    value: Any
    source: str
    where: str


def register(sub) -> None:
    p = sub.add_parser("config", help="show the settings in force and where each came from",
                       description="The settings file's path, or each setting in force and its source.")
    cs = p.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    path = cs.add_parser("path", help="print the settings file's path", description="Print the settings file's "
                         "path (it may not exist yet).")
    path.set_defaults(func=run_path)
    show = cs.add_parser("show", help="show each setting, its value and where it came from",
                         description="Show each setting, its value and where it came from: a flag given here, "
                                     "an environment variable, the settings file (with its line) or the default.")
    show.add_argument("--json", action="store_true", help="print JSON")
    flags = show.add_argument_group("flags", "as other commands take them; a flag given here wins")
    for name, flag, options in FLAGS:
        flags.add_argument(flag, dest="flag_" + name.replace(".", "_"), help=f"sets {name}", **options)
    show.set_defaults(func=run_show)


def run_path(args: argparse.Namespace) -> int:
    from spectui.core.paths import settings_file

    print(settings_file())
    return 0


def run_show(args: argparse.Namespace) -> int:
    from spectui.cli.hostopts import host_settings

    settings = host_settings(args)
    for problem in console_problems(settings):  # after the file's own: each in full, as the console finds them
        print(f"spectui: {problem} (ignored; the other settings apply)", file=sys.stderr)
    rows = settings_in_force(args, settings)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
        return 0
    width = max(len(r.name) for r in rows)
    for r in rows:
        value = "-" if r.value is None else (",".join(map(str, r.value)) if isinstance(r.value, list) else r.value)
        print(f"{r.name:<{width}}  {value}  ({r.source}: {r.where})" if r.where else
              f"{r.name:<{width}}  {value}  ({r.source})")
    return 0


def console_problems(settings) -> list[str]:
    """The problems the console finds in the settings file when it starts (a theme it does not have, a keymap
    entry it leaves out), each in full: its notification names the first and counts the others."""
    from textual.theme import BUILTIN_THEMES

    from spectui.ui import keys

    out = []
    if settings.theme is not None and settings.theme not in BUILTIN_THEMES:
        out.append(settings.error_at(("theme",), f"there is no theme '{settings.theme}'; the console keeps its "
                                                 "default (its palette's Theme command lists the themes)"))
    _usable, keymap = keys.check_keymap(settings.keymap)
    out += [settings.error_at(("keymap", bid), text) for bid, text in keymap]
    return [str(p) for p in out]


def _env(variable: str, value: Any, default: Any, default_where: str = "") -> Setting:
    name = variable.lower().removeprefix("spectui_")
    if os.environ.get(variable):
        return Setting(name, value, "env", variable)
    return Setting(name, default, "default", default_where)


def _folder(name: str, variable: str, xdg: str, value: Any) -> Setting:
    if os.environ.get(variable):
        return Setting(name, str(value), "env", variable)
    xdg_value = os.environ.get(xdg)
    if xdg_value and os.path.isabs(xdg_value):
        return Setting(name, str(value), "env", xdg)
    return Setting(name, str(value), "default", "the platform's folder")


def settings_in_force(args: argparse.Namespace, settings) -> list[Setting]:
    """Every setting spectui reads, in the order of docs/settings.md."""
    from spectui.cli.console import TELEMETRY_HZ_DEFAULT
    from spectui.cli.hostopts import CONNECT_TIMEOUT_S
    from spectui.core import paths
    from spectui.core.bench.presets import PRESETS_PATH_ENV
    from spectui.core.logsetup import ENV as LOG_ENV
    from spectui.core.profiles.discovery import PROFILES_PATH_ENV, shipped_profile_dirs
    from spectui.core.source.wheels import WHEEL_CACHE_ENV

    rows = [
        _folder("config_dir", "SPECTUI_CONFIG_DIR", "XDG_CONFIG_HOME", paths.user_config_dir()),
        Setting("config_file", str(paths.settings_file()), "file" if os.path.exists(paths.settings_file())
                else "default", "exists" if os.path.exists(paths.settings_file()) else "not created yet"),
        _folder("data_dir", "SPECTUI_DATA_DIR", "XDG_DATA_HOME", paths.user_data_dir()),
        _folder("cache_dir", "SPECTUI_CACHE_DIR", "XDG_CACHE_HOME", paths.user_cache_dir()),
        _env(PROFILES_PATH_ENV, [str(p) for p in shipped_profile_dirs()], [str(p) for p in shipped_profile_dirs()],
             "the shipped profiles"),
        _env(PRESETS_PATH_ENV, os.environ.get(PRESETS_PATH_ENV), None, "the shipped presets"),
        _env("SPECTUI_DEMO_STATE", paths.demo_state_dir(), paths.demo_state_dir(), "cache_dir/demo"),
        _env(WHEEL_CACHE_ENV, os.environ.get(WHEEL_CACHE_ENV), str(paths.sglang_cache_dir() / "wheels"),
             "cache_dir/sglang/wheels"),
        _log(args, LOG_ENV, paths.log_file()),
        _from_file(settings, "theme", settings.theme, None, "the console's default theme"),
        _from_file(settings, "default_host", settings.default_host, None, ""),
        _from_file(settings, "hosts", settings.hosts or None, None, ""),
    ]
    defaults = {"telemetry_hz": (TELEMETRY_HZ_DEFAULT, ""), "ssh.config": ("~/.ssh/config", ""),
                "ssh.identity": (None, "the SSH config's, else OpenSSH's"), "ssh.port": (None, "the SSH config's, "
                "else 22"), "ssh.jump": (None, "the SSH config's ProxyJump"), "ssh.known_hosts": (None, "the SSH "
                "config's UserKnownHostsFile, else ~/.ssh/known_hosts"), "ssh.accept_new_host_key": (False, ""),
                "ssh.connect_timeout": (CONNECT_TIMEOUT_S, ""), "demo.port_base": (None, "the profiles' ports"),
                "probe.backend": ("auto", ""), "probe.device": ("auto", "")}
    ssh = settings.ssh
    in_file = {"telemetry_hz": settings.telemetry_hz, "ssh.config": ssh.config_file,
               "ssh.identity": ssh.identity_files or None, "ssh.port": ssh.port, "ssh.jump": ssh.jump,
               "ssh.known_hosts": ssh.known_hosts, "ssh.accept_new_host_key": ssh.accept_new_host_key,
               "ssh.connect_timeout": ssh.connect_timeout, "demo.port_base": settings.demo_port_base,
               "probe.backend": settings.probe_backend, "probe.device": settings.probe_device}
    for name, flag, _ in FLAGS:
        given = getattr(args, "flag_" + name.replace(".", "_"), None)
        if given is not None:
            rows.append(Setting(name, given, "flag", flag))
        else:
            rows.append(_from_file(settings, name, in_file[name], *defaults[name]))
    rows += [Setting(f"keymap.{binding}", keys, "file", _at(settings, ("keymap", binding)))
             for binding, keys in settings.keymap.items() if settings.line_of(("keymap", binding))]
    rows += _alerts(settings)
    return rows


def _at(settings, fpath: tuple) -> str:
    return f"{settings.path}:{settings.line_of(fpath)}"


def _from_file(settings, name: str, value: Any, default: Any, default_where: str) -> Setting:
    fpath = ("ssh", "identity") if name == "ssh.identity" else tuple(name.split("."))
    if value is not None and settings.line_of(fpath):
        return Setting(name, value, "file", _at(settings, fpath))
    return Setting(name, default, "default", default_where)


def _log(args: argparse.Namespace, variable: str, default_file) -> Setting:
    if getattr(args, "debug", False) or getattr(args, "log_file", None):
        where = " ".join(f for f, on in (("--debug", args.debug), ("--log-file", args.log_file)) if on)
        return Setting("log", "debug" if args.debug and not args.log_file else args.log_file, "flag", where)
    if os.environ.get(variable):
        return Setting("log", os.environ[variable], "env", variable)
    return Setting("log", f"warning, {default_file}", "default", "")


def _alerts(settings) -> list[Setting]:
    """The alert outputs and rules the file sets; the others are the defaults of docs/recording.md."""
    from spectui.core.alerts import DEFAULT_RULES, OUTPUT_KEYS

    rows = []
    for key in (*OUTPUT_KEYS, *DEFAULT_RULES):
        fpath = ("alerts", key)
        value = getattr(settings.alerts, key) if key in OUTPUT_KEYS else settings.alerts.rules[key]
        value = value if key in OUTPUT_KEYS else {k: v for k, v in asdict(value).items() if v is not None}
        if settings.line_of(fpath):
            rows.append(Setting(f"alerts.{key}", value, "file", _at(settings, fpath)))
        else:
            rows.append(Setting(f"alerts.{key}", value, "default", ""))
    return rows
