"""Files of spectui's cache that hold code or secrets (a pickled profile library, the agent's compiled modules):
written whole and owner-only, read only when they are this user's own and nobody else may write them."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO


@contextlib.contextmanager
def open_private(path: Path) -> Iterator[BinaryIO | None]:
    """``path`` open for reading when this user owns it and neither its group nor others may write it; None when
    it is missing, unreadable or not so (what it holds is then made again)."""
    try:
        f = open(path, "rb")
    except OSError:
        yield None
        return
    with f:
        st = os.fstat(f.fileno())
        yield f if st.st_uid == os.geteuid() and not st.st_mode & 0o022 else None


def write_private(path: Path, write: Callable[[BinaryIO], None]) -> bool:
    """Make ``path`` with what ``write`` writes into it, mode 0600, in one step (a reader sees the old file or the
    whole new one); False when the folder cannot take it (read-only, full): the cache is then made again later."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix="." + path.stem + ".", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return False
    return True
