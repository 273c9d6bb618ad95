"""Loading profiles: read every file, check it, apply ``extends``, and collect all errors.

``load_profiles()`` never stops at the first problem: it returns a ``ProfileLibrary`` holding the
profiles that resolved and a list of every ``ProfileError`` found along the way.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from spectui.core.profiles import librarycache
from spectui.core.profiles.discovery import ProfileLayer, default_layers, profile_files
from spectui.core.profiles.errors import ProfileError
from spectui.core.profiles.model import Profile, ProfileLibrary
from spectui.core.profiles.schema import NAME_RE

if TYPE_CHECKING:
    from spectui.core.profiles.resolve import RawProfile

__all__ = ["ProfileLibrary", "expand_profile_paths", "load_profile", "load_profiles", "read_profile_file"]


def read_profile_file(path: str | Path) -> tuple[RawProfile | None, list[ProfileError]]:
    """Parse and schema-check one file. The RawProfile is returned (marked invalid) even with
    schema errors, so profiles extending it can say so; it is None when the YAML is unreadable."""
    from spectui.core.profiles.resolve import RawProfile
    from spectui.core.profiles.yamlsource import load_yaml

    try:
        doc = load_yaml(path)
    except ProfileError as exc:
        return None, [exc]
    name = Path(path).stem
    named = isinstance(doc.data, dict) and "name" in doc.data
    if named and isinstance(doc.data.get("name"), str) and NAME_RE.match(doc.data["name"]):
        name = doc.data["name"]
    from spectui.core.profiles.profile_schema import validate_document  # msgspec only when a file is checked

    errors = validate_document(doc, profile=name)
    if not named and not NAME_RE.match(name):
        # the name comes from the file name: held to the same rule as a 'name' field
        errors.append(ProfileError(
            f"the profile takes its name from the file name '{name}', which may hold only letters, digits, "
            "'.', '_' and '-', starting with a letter or digit; rename the file or set 'name'",
            path=path, line=1, column=1, field="name", profile=name))
    return RawProfile(name=name, doc=doc, valid=not errors), errors


def expand_profile_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files as given, folders replaced by the profile files in them."""
    out: list[Path] = []
    seen: set[Path] = set()
    for p in paths:
        p = Path(p)
        for f in profile_files(p) if p.is_dir() else [p]:
            key = f.resolve()
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out


def load_profiles(
    paths: Iterable[str | Path] | None = None,
    *,
    layers: list[ProfileLayer] | None = None,
) -> ProfileLibrary:
    """Load the profile library.

    ``layers`` defaults to the shipped and user folders (``discovery.default_layers``). ``paths``
    (files or folders) are loaded as a last, highest layer: with them, the result's ``errors``
    are only those located in these files, so checking one file that extends a shipped profile
    is not drowned by problems elsewhere.
    """
    default = layers is None and paths is None  # the library every console and command starts from: cached
    layers = default_layers() if layers is None else list(layers)
    groups: list[list[Path]] = [layer.files() for layer in layers]
    explicit = expand_profile_paths(paths) if paths is not None else None
    if explicit is not None:
        groups.append(explicit)
    folders = [folder for layer in layers for folder in layer.dirs]
    made_from = librarycache.key(groups) if default else None
    library = librarycache.read(folders, made_from)
    if library is None:
        library = _read_library(groups, explicit)
        librarycache.write(folders, made_from, library)
    return library


def _read_library(groups: list[list[Path]], explicit: list[Path] | None) -> ProfileLibrary:
    """Read, check and resolve every file of ``groups`` (the last is ``explicit`` when given)."""
    from spectui.core.profiles.resolve import resolve_profiles

    library = ProfileLibrary()
    raws: dict[str, RawProfile] = {}
    errors: list[ProfileError] = []
    for files in groups:
        layer_seen: dict[str, str] = {}
        for path in files:
            library.files.append(str(path))
            raw, file_errors = read_profile_file(path)
            errors.extend(file_errors)
            if raw is None:
                continue
            if raw.name in layer_seen:
                line, col = raw.doc.where(("name",))
                errors.append(ProfileError(
                    f"profile name '{raw.name}' is already used by {layer_seen[raw.name]}; rename one of them",
                    path=raw.path, line=line, column=col, field="name", profile=raw.name))
                continue
            layer_seen[raw.name] = raw.path
            if raw.name in raws:
                library.shadowed.setdefault(raw.name, []).append(raws[raw.name].path)
            raws[raw.name] = raw

    library.profiles, resolve_errors = resolve_profiles(raws)
    errors.extend(resolve_errors)
    if explicit is not None:
        wanted = {str(p) for p in explicit}
        errors = [e for e in errors if e.path in wanted]
    library.errors = sorted(errors, key=lambda e: (e.path or "", e.line or 0, e.column or 0))
    return library


def load_profile(path: str | Path, *, layers: list[ProfileLayer] | None = None) -> Profile:
    """Load one file (its parents come from ``layers``) and return its profile, or raise its first error."""
    library = load_profiles([path], layers=layers)
    if library.errors:
        raise library.errors[0]
    raw, _ = read_profile_file(path)
    assert raw is not None
    return library.get(raw.name)
