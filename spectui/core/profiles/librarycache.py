"""A cache of the default profile library (the shipped and the user's profiles), so that a start reads one file
instead of parsing and checking every profile: ``spectui demo`` and ``spectui connect`` show their first frame
without loading the YAML reader and the schema checks.

The cache is a pickle in the cache folder (``profiles/library-*.pickle`` under
:func:`spectui.core.paths.user_cache_dir`, one per set of profile folders), valid for exactly the files it was
made from. Its key holds each profile file's path, size and CRC-32 of its bytes, in layer order; the path, size,
modification time and inode of every module that reads profiles (a changed reader makes a new cache, as Python's
compiled files do); and the Python version. Only a library without errors is kept; one with errors is read afresh
each time, so its errors are always current. The cache holds what the profiles hold, secrets included, so it is
written readable by its owner only. A cache that is missing, stale, unreadable, not the user's own, or writable
by others is ignored; writing it is atomic and a failure to write is ignored.
"""

from __future__ import annotations

import os
import pickle
import sys
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from spectui.core.paths import user_cache_dir
from spectui.core.privatecache import open_private, write_private

if TYPE_CHECKING:
    from spectui.core.profiles.model import ProfileLibrary

FORMAT = 1
#: the modules whose code decides what a profile file loads as (``schema_errors`` and ``textsafe``: the messages)
READERS = (Path(__file__).parent, Path(__file__).parent.parent / "schema_errors.py",
           Path(__file__).parent.parent / "textsafe.py")


def cache_file(folders: list[Path]) -> Path:
    """The cache of the library read from ``folders`` (each layer's, in order): one per set of folders, so that
    a command run with another ``SPECTUI_PROFILES_PATH`` does not replace the console's."""
    where = zlib.crc32("\0".join(str(f) for f in folders).encode("utf-8", "surrogateescape"))
    return user_cache_dir() / "profiles" / f"library-{where:08x}.pickle"


def _stamp(path: Path) -> tuple:
    st = os.stat(path)
    return str(path), st.st_size, st.st_mtime_ns, st.st_ino


def _content(path: Path) -> tuple:
    """A profile file by what it holds: an edit within the file system's timestamp granularity still counts."""
    data = path.read_bytes()
    return str(path), len(data), zlib.crc32(data)


def _readers() -> list[Path]:
    out: list[Path] = []
    for p in READERS:
        out.extend(sorted(p.glob("*.py")) if p.is_dir() else [p])
    return out


def key(groups: list[list[Path]]) -> tuple | None:
    """What the library made from ``groups`` (each layer's files, in order) depends on; None when a file cannot be
    read (the load then says why)."""
    try:
        return (FORMAT, sys.version_info[:3], tuple(_stamp(p) for p in _readers()),
                tuple(tuple(_content(p) for p in files) for files in groups))
    except OSError:
        return None


def read(folders: list[Path], wanted: tuple | None) -> ProfileLibrary | None:
    """The cached library of ``folders`` made from exactly ``wanted``; None when there is none."""
    if wanted is None:
        return None
    with open_private(cache_file(folders)) as f:  # only a cache this user wrote is unpickled
        if f is None:
            return None
        try:
            if pickle.load(f) != wanted:
                return None
            return pickle.load(f)
        except Exception:  # noqa: BLE001 (cut short or made by other code: made again)
            return None


def write(folders: list[Path], wanted: tuple | None, library: ProfileLibrary) -> None:
    """Keep ``library`` as read from ``folders`` and made from ``wanted`` (an error-free one only); a read-only or
    full cache folder keeps nothing, and the next start reads the profiles again."""
    if wanted is None or not library.ok:
        return

    def dump(f) -> None:
        pickle.dump(wanted, f, protocol=pickle.HIGHEST_PROTOCOL)  # read first: a stale cache stops there
        pickle.dump(library, f, protocol=pickle.HIGHEST_PROTOCOL)

    write_private(cache_file(folders), dump)
