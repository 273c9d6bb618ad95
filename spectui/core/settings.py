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
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spectui.core.alerts import AlertConfig
from spectui.core.errors import SpectuiError
from spectui.core.paths import settings_file
from spectui.core.profiles.errors import ProfileError

if TYPE_CHECKING:  # YAML loads only when there is a settings file to read or write
    from spectui.core.profiles.yamlsource import YamlDocument

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

    def line_of(self, fpath: tuple) -> int | None:
        """The line of the file that sets ``fpath`` (e.g. ``("ssh", "port")``), when the file sets it and the
        value was applied; None when the setting comes from elsewhere (a refused value keeps its default)."""
        if self.doc is None or tuple(fpath) not in self.doc.key_marks:
            return None
        name = ".".join(str(p) for p in fpath)
        if any(e.field == name or (e.field or "").startswith(name + ".") for e in self.errors):
            return None
        return self.doc.key_marks[tuple(fpath)][0]


def load_settings(path: str | Path | None = None) -> Settings:
    """Read the settings file (default: :func:`settings_file`); a missing file is no settings and no error."""
    p = Path(path) if path is not None else settings_file()
    settings = Settings(path=str(p))
    if not p.exists():
        return settings
    from spectui.core.profiles.yamlsource import load_yaml

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
    from spectui.core.schema_errors import located
    from spectui.core.settings_schema import read_settings

    got, problems = read_settings(data)
    settings.errors.extend(located(doc, problem, path=settings.path) for problem in problems)
    _apply(settings, got)
    return settings


def _apply(settings: Settings, got: Any) -> None:
    """Copy what converted (a ``settings_schema.SettingsFile``) into ``settings``; the rest keeps its default."""
    settings.theme, settings.default_host, settings.telemetry_hz = got.theme, got.default_host, got.telemetry_hz
    if got.demo is not None:
        settings.demo_port_base = got.demo.port_base
    if got.probe is not None:
        settings.probe_backend, settings.probe_device = got.probe.backend, got.probe.device
    settings.hosts = list(got.hosts or [])
    settings.keymap = dict(got.keymap or {})
    if got.ssh is not None:
        ssh = {f: getattr(got.ssh, f) for f in got.ssh.__struct_fields__ if getattr(got.ssh, f) is not None}
        identity = ssh.pop("identity_files", [])
        settings.ssh = SshDefaults(**ssh, identity_files=[identity] if isinstance(identity, str) else identity)
    if got.alerts is not None:
        settings.alerts = got.alerts.config()


# --- saving the theme ------------------------------------------------------------------------------------------------
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
_THEME_LINE = re.compile(r"theme[ \t]*:[ \t]*(?P<value>[^#\n]*?)[ \t]*(?P<comment>#[^\n]*)?")


def _scalar(text: str) -> str:
    """``text`` as a YAML scalar: plain when it reads back as itself, else double-quoted (JSON is YAML)."""
    import yaml

    if _PLAIN.fullmatch(text) and yaml.safe_load(text) == text:
        return text
    return json.dumps(text)


def save_theme(theme: str, path: str | Path | None = None) -> Path:
    """Set ``theme`` in the settings file, keeping every other key; returns the file written.

    Read-modify-write: the file is read again now, so keys the user added since the console started
    are kept. The ``theme:`` line is edited in place when that reads back right (comments stay);
    otherwise the whole map is written out again. A file that does not parse is left alone.
    """
    import yaml

    from spectui.core.profiles.yamlsource import load_yaml

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
    from spectui.core.profiles.yamlsource import parse_yaml

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
