"""The operator's settings file: what the console remembers between runs.

``config.yaml`` in the config folder (:func:`spectui.core.paths.settings_file`)::

    theme: textual-dark          # saved by the console when you change it (ctrl+p, "Theme")
    default_host: gpu-box        # `spectui connect` with no DEST
    hosts: [gpu-a, gpu-b]        # `spectui connect` with no DEST and several hosts: all of them, in one console
    telemetry_hz: 2              # the default of --telemetry-hz
    ssh:                         # the defaults of the SSH options; the command line wins
      config: ~/.ssh/config      # -F
      identity: ~/.ssh/id_ed25519  # -i (one path or a list)
      port: 22                   # -p
      jump: bastion              # -J
      known_hosts: ~/.ssh/known_hosts
      accept_new_host_key: false
      connect_timeout: 15
    keymap:                      # binding id -> "key,key" (see docs/settings.md for the ids)
      dashboard.stop: X
    demo:
      port_base: 31000
    alerts:                      # rules and where alerts go (spectui.core.alerts; docs/recording.md)
      below_break_even: {for_s: 60}
      gpu_memory: false
      bell: true
      webhook: https://hooks.example.org/spectui

Loading never stops at the first problem and never raises: each unknown key or bad value becomes a
:class:`ProfileError` located at ``FILE:LINE:COL`` (one sentence), that setting keeps its default
and the rest still applies. Binding ids and theme names are checked by the console, which knows
them, through :meth:`Settings.error_at`.

Saving the theme reads the file again, changes only ``theme`` and writes it back atomically; every
other key stays, and so do the comments where the ``theme:`` line can be edited in place.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from spectui.core.alerts import AlertConfig, alert_config
from spectui.core.errors import SpectuiError
from spectui.core.paths import settings_file
from spectui.core.profiles.errors import ProfileError, close_matches, did_you_mean
from spectui.core.profiles.yamlsource import YamlDocument, load_yaml, parse_yaml

TOP_KEYS = ("theme", "default_host", "hosts", "ssh", "telemetry_hz", "keymap", "demo", "alerts", "probe")
SSH_KEYS = ("config", "identity", "port", "jump", "known_hosts", "accept_new_host_key", "connect_timeout")
DEMO_KEYS = ("port_base",)
# The console's verify-cost probe (p): torch.distributed backend and where the ranks' tensors live, as
# `spectui probe --backend/--device` (gloo on cpu rehearses a probe on hosts without GPUs).
PROBE_CHOICES = {"backend": ("auto", "nccl", "gloo"), "device": ("auto", "cuda", "cpu")}
TELEMETRY_HZ_MAX = 10.0


class SettingsSaveError(SpectuiError):
    """The settings file could not be written; ``str()`` says which file and why, in one sentence."""


@dataclass
class SshDefaults:
    """SSH options from the settings; ``None`` (or empty) where the file says nothing."""

    config_file: str | None = None
    identity_files: list[str] = field(default_factory=list)
    port: int | None = None
    jump: str | None = None
    known_hosts: str | None = None
    accept_new_host_key: bool | None = None
    connect_timeout: float | None = None


@dataclass
class Settings:
    """The settings that loaded, and every problem found in the file."""

    path: str
    theme: str | None = None
    default_host: str | None = None
    hosts: list[str] = field(default_factory=list)
    telemetry_hz: float | None = None
    ssh: SshDefaults = field(default_factory=SshDefaults)
    keymap: dict[str, str] = field(default_factory=dict)
    demo_port_base: int | None = None
    alerts: AlertConfig = field(default_factory=AlertConfig)
    probe_backend: str | None = None
    probe_device: str | None = None
    errors: list[ProfileError] = field(default_factory=list)
    doc: YamlDocument | None = field(default=None, repr=False)

    def error_at(self, fpath: tuple, message: str, *, key: bool = False) -> ProfileError:
        """A ``ProfileError`` located at the value (or key) ``fpath`` of this file, e.g. ``("keymap", "x")``."""
        line, column = self.doc.where(fpath, key=key) if self.doc is not None else (None, None)
        return ProfileError(message, path=self.path, line=line, column=column,
                            field=".".join(str(p) for p in fpath))


def load_settings(path: str | Path | None = None) -> Settings:
    """Read the settings file (default: :func:`settings_file`); a missing file is no settings and no error."""
    p = Path(path) if path is not None else settings_file()
    settings = Settings(path=str(p))
    if not p.exists():
        return settings
    try:
        doc = load_yaml(p)
    except ProfileError as exc:
        settings.errors.append(exc)
        return settings
    settings.doc = doc
    data = doc.data
    if data is None:
        return settings
    if not isinstance(data, dict):
        settings.errors.append(settings.error_at((), "the settings file must be a map of settings "
                                                     "(theme:, default_host:, ...); nothing in it was applied"))
        return settings
    _Reader(settings).read(data)
    return settings


class _Reader:
    """Checks each value and stores the good ones; a bad one is an error and keeps its default."""

    def __init__(self, settings: Settings) -> None:
        self.s = settings

    def problem(self, fpath: tuple, message: str, *, key: bool = False) -> None:
        self.s.errors.append(self.s.error_at(fpath, message, key=key))

    def unknown(self, fpath: tuple, known: tuple) -> None:
        name = str(fpath[-1])
        where = "a setting" if len(fpath) == 1 else f"an option of '{fpath[0]}'"
        matches = close_matches(name, known)
        self.problem(fpath, f"'{name}' is not {where}" + did_you_mean(matches)
                     + ("" if matches else "; the known ones are " + ", ".join(known)), key=True)

    def read(self, data: dict) -> None:
        for k, value in data.items():
            fpath = (k,)
            if k not in TOP_KEYS:
                self.unknown(fpath, TOP_KEYS)
            elif k == "theme":
                self.s.theme = self.word(fpath, value, "a theme name such as textual-dark")
            elif k == "default_host":
                self.s.default_host = self.destination(fpath, value)
            elif k == "hosts":
                if not isinstance(value, list) or not value:
                    self.problem(fpath, "'hosts' takes a list of [user@]host[:port] or SSH config aliases, such as "
                                        "[gpu-a, gpu-b]")
                else:
                    for i, v in enumerate(value):
                        if isinstance(v, str) and re.fullmatch(r"[^\s\-][^\s]*", v) and v.isprintable():
                            self.s.hosts.append(v)
                        else:
                            self.problem(fpath + (i,), f"'hosts' entry {i + 1} takes one [user@]host[:port] or SSH "
                                                       "config alias, without spaces and not starting with '-'")
            elif k == "telemetry_hz":
                hz = self.number(fpath, value, 0.0, TELEMETRY_HZ_MAX, "GPU telemetry rate in Hz")
                self.s.telemetry_hz = hz
            elif k == "ssh":
                if self.mapping(fpath, value):
                    self.read_ssh(value)
            elif k == "keymap":
                if self.mapping(fpath, value):
                    self.read_keymap(value)
            elif k == "demo":
                if self.mapping(fpath, value):
                    self.read_demo(value)
            elif k == "probe":
                if self.mapping(fpath, value):
                    self.read_probe(value)
            elif k == "alerts":
                self.s.alerts, problems = alert_config(value)
                for where, sentence in problems:
                    self.problem(where, sentence, key=sentence.startswith("unknown alert rule"))

    def read_ssh(self, data: dict) -> None:
        ssh = self.s.ssh
        for k, value in data.items():
            fpath = ("ssh", k)
            if k not in SSH_KEYS:
                self.unknown(fpath, SSH_KEYS)
            elif k == "config":
                ssh.config_file = self.file_path(fpath, value)
            elif k == "known_hosts":
                ssh.known_hosts = self.file_path(fpath, value)
            elif k == "identity":
                items = value if isinstance(value, list) else [value]
                paths = [self.file_path(fpath + ((i,) if isinstance(value, list) else ()), item)
                         for i, item in enumerate(items)]
                ssh.identity_files = [p for p in paths if p is not None]
            elif k == "port":
                port = self.integer(fpath, value, 1, 65535, "SSH port")
                ssh.port = port
            elif k == "jump":
                ssh.jump = self.destination(fpath, value)
            elif k == "accept_new_host_key":
                if isinstance(value, bool):
                    ssh.accept_new_host_key = value
                else:
                    self.problem(fpath, "accept_new_host_key takes true or false")
            elif k == "connect_timeout":
                ssh.connect_timeout = self.number(fpath, value, 0.1, 600.0, "connect timeout in seconds")

    def read_keymap(self, data: dict) -> None:
        for binding_id, value in data.items():
            fpath = ("keymap", binding_id)
            if not isinstance(binding_id, str):
                self.problem(fpath, "a keymap entry is a binding id such as dashboard.stop", key=True)
                continue
            keys = value if isinstance(value, list) else [value]
            if not keys or not all(isinstance(k, str) and k.strip() for k in keys):
                self.problem(fpath, f"give {binding_id} its keys as text, e.g. \"x\" or \"x,ctrl+x\"")
                continue
            names = [n.strip() for k in keys for n in k.split(",")]
            if not all(names):
                self.problem(fpath, f"the keys of {binding_id} have an empty name between commas; remove it")
                continue
            self.s.keymap[binding_id] = ",".join(names)

    def read_demo(self, data: dict) -> None:
        for k, value in data.items():
            fpath = ("demo", k)
            if k not in DEMO_KEYS:
                self.unknown(fpath, DEMO_KEYS)
            else:
                self.s.demo_port_base = self.integer(fpath, value, 1024, 65535, "first port of the demo servers")

    def read_probe(self, data: dict) -> None:
        for k, value in data.items():
            fpath = ("probe", k)
            if k not in PROBE_CHOICES:
                self.unknown(fpath, tuple(PROBE_CHOICES))
            elif value not in PROBE_CHOICES[k]:
                self.problem(fpath, f"'probe.{k}' is one of {', '.join(PROBE_CHOICES[k])}, not {_shown(value)}")
            else:
                setattr(self.s, f"probe_{k}", value)

    # --- value checks ----------------------------------------------------------------------------------------
    def mapping(self, fpath: tuple, value: Any) -> bool:
        if isinstance(value, dict):
            return True
        if value is not None:
            self.problem(fpath, f"'{fpath[-1]}' takes a map of options (one 'name: value' per line below it)")
        return False

    def word(self, fpath: tuple, value: Any, what: str) -> str | None:
        if isinstance(value, str) and value.strip() and value.isprintable():
            return value.strip()
        self.problem(fpath, f"'{fpath[-1]}' takes {what}")
        return None

    def destination(self, fpath: tuple, value: Any) -> str | None:
        if isinstance(value, str) and re.fullmatch(r"[^\s\-][^\s]*", value) and value.isprintable():
            return value
        self.problem(fpath, f"'{fpath[-1]}' takes one [user@]host[:port] or SSH config alias, without spaces "
                            "and not starting with '-'")
        return None

    def file_path(self, fpath: tuple, value: Any) -> str | None:
        if isinstance(value, str) and value.strip() and "\0" not in value:
            return os.path.expanduser(value.strip())
        self.problem(fpath, f"'{fpath[0] if len(fpath) > 2 else fpath[-1]}' takes a file path")
        return None

    def number(self, fpath: tuple, value: Any, low: float, high: float, what: str) -> float | None:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
                and low <= value <= high:
            return float(value)
        self.problem(fpath, f"'{fpath[-1]}' is the {what}: a number from {low:g} to {high:g}, not {_shown(value)}")
        return None

    def integer(self, fpath: tuple, value: Any, low: int, high: int, what: str) -> int | None:
        if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
            return value
        self.problem(fpath, f"'{fpath[-1]}' is the {what}: a whole number from {low} to {high}, "
                            f"not {_shown(value)}")
        return None


def _shown(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return "a map" if isinstance(value, dict) else "a list"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# --- saving the theme ------------------------------------------------------------------------------------------------
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
_THEME_LINE = re.compile(r"theme[ \t]*:[ \t]*(?P<value>[^#\n]*?)[ \t]*(?P<comment>#[^\n]*)?")


def _scalar(text: str) -> str:
    """``text`` as a YAML scalar: plain when it reads back as itself, else double-quoted (JSON is YAML)."""
    if _PLAIN.fullmatch(text) and yaml.safe_load(text) == text:
        return text
    return json.dumps(text)


def save_theme(theme: str, path: str | Path | None = None) -> Path:
    """Set ``theme`` in the settings file, keeping every other key; returns the file written.

    Read-modify-write: the file is read again now, so keys the user added since the console started
    are kept. The ``theme:`` line is edited in place when that reads back right (comments stay);
    otherwise the whole map is written out again. A file that does not parse is left alone.
    """
    p = Path(path) if path is not None else settings_file()
    target = Path(os.path.realpath(p))  # a symlinked dotfile: write its target, keep the link
    data: dict = {}
    text = ""
    if target.exists():
        try:
            doc = load_yaml(target)
        except ProfileError as exc:
            raise SettingsSaveError(f"the theme was not saved, because {exc} (fix the file, then change the "
                                    "theme again)") from None
        if doc.data is not None and not isinstance(doc.data, dict):
            raise SettingsSaveError(f"the theme was not saved: {p} is not a map of settings; fix the file, "
                                    "then change the theme again")
        data = doc.data or {}
        text = target.read_text(encoding="utf-8")
    wanted = {**data, "theme": theme}
    new_text = _edited(text, data, theme, target)
    if new_text is None:
        new_text = yaml.safe_dump(wanted, sort_keys=False, default_flow_style=False, allow_unicode=True)
    _write_atomically(target, new_text)
    return p


def _edited(text: str, data: dict, theme: str, path: Path) -> str | None:
    """``text`` with its top-level ``theme:`` replaced (or appended); None when that would not read back right."""
    value = _scalar(theme)
    lines = text.splitlines(keepends=True)
    if "theme" in data:
        hits = [i for i, line in enumerate(lines) if _THEME_LINE.fullmatch(line.rstrip("\r\n"))]
        if len(hits) != 1:
            return None
        i = hits[0]
        m = _THEME_LINE.fullmatch(lines[i].rstrip("\r\n"))
        ending = lines[i][len(lines[i].rstrip("\r\n")):]
        comment = f"  {m.group('comment')}" if m.group("comment") else ""
        lines[i] = f"theme: {value}{comment}{ending}"
        candidate = "".join(lines)
    else:
        candidate = text + ("" if not text or text.endswith("\n") else "\n") + f"theme: {value}\n"
    try:
        reread = parse_yaml(candidate, path).data
    except ProfileError:
        return None
    return candidate if reread == {**data, "theme": theme} else None


def _write_atomically(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if path.exists() else None
        fd, tmp = tempfile.mkstemp(prefix=".config.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            if mode is not None:
                os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise SettingsSaveError(f"the theme was not saved to {path}: {exc.strerror or exc}") from None
