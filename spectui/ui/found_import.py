"""``I``: the profile that reproduces a server spectui found running, written to the user's profiles folder.

The profile comes from the core importer (:func:`spectui.core.profiles.importer.import_running_server`,
the same as ``spectui profiles import --from-running``). Its name is the importer's
(``<model>-<algorithm>``), with ``-2``, ``-3``... added when a loaded profile or a file already has it:
a user profile of the same name would replace a shipped one, so an import never takes a name in use.
Abbreviated flags (``--tp``) are resolved against the flag list of the launcher on the host (its
``--help``, read once per release and cached), as ``spectui profiles import`` does.
"""

from __future__ import annotations

from collections.abc import Container
from pathlib import Path

from spectui.core.errors import SpectuiError
from spectui.core.profiles import FlagSet, user_profile_dir
from spectui.core.profiles.host_flags import checked_yaml, server_python, session_flagset
from spectui.core.profiles.importer import import_running_server
from spectui.core.profiles.launch_command import LaunchCommandError
from spectui.core.session import Session

async def host_flagset(session: Session, view: dict) -> tuple[FlagSet, str]:
    """The flags of the launcher that runs ``view`` on the session's host (:func:`session_flagset`, with the
    server's own interpreter on a real host)."""
    return await session_flagset(session, python=server_python(view))


def free_name(base: str, taken: Container[str], folder: Path) -> str:
    name, n = base, 1
    while name in taken or (folder / f"{name}.yaml").exists():
        n += 1
        name = f"{base}-{n}"
    return name


def write_profile_from(view: dict, taken: Container[str] = (), where: str | None = None,
                       flags: tuple[FlagSet | None, str | None] = (None, None)) -> tuple[str, Path, list[str]]:
    """Write the profile of the running server ``view``; returns its name, its file and the importer's notes.
    ``flags``: the host's flag list and where it came from (:func:`host_flagset`)."""
    folder = user_profile_dir()
    flagset, source = flags
    try:
        imported = import_running_server(view, where=where, flagset=flagset, flag_source=source)
        name = free_name(imported.name, taken, folder)
        if name != imported.name:
            imported = import_running_server(view, where=where, flagset=flagset, flag_source=source, name=name)
    except LaunchCommandError as exc:
        raise SpectuiError(f"{view.get('name')} cannot be imported: {exc}") from None
    text = checked_yaml(imported, f"the profile made from {imported.source} does not load")
    path = folder / f"{imported.name}.yaml"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(path, "x", encoding="utf-8") as f:  # never replaces a file
            f.write(text)
    except OSError as exc:
        raise SpectuiError(f"cannot write {path}: {exc.strerror or exc}") from None
    return imported.name, path, imported.notes
