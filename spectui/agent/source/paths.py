"""Confinement for the source browser: which paths it may serve, and opening them safely.

The browser serves files under its roots only: the SGLang package it found and the roots
the user configured. A path is refused when it has a ``..`` component, when it is absolute
and lies elsewhere, or when a symlink leads outside every root. Only regular files are read:
FIFOs, sockets and devices are refused after a ``stat`` and before any ``open`` (which is
non-blocking anyway), so a special file can never hang the agent.
"""

from __future__ import annotations

import os
import stat

from ..protocol import AgentError

# The viewer reads at most this much of one file; a larger file is shown truncated, with a note.
VIEW_CAP_BYTES = 4 * 1024 * 1024
# A file whose first block holds a NUL byte is binary.
BINARY_SNIFF_BYTES = 8192

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)


def kind_of(mode):
    """A file type in words, for messages."""
    if stat.S_ISREG(mode):
        return "regular file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "special file"


def _under(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class Roots(object):
    """The folders the browser may serve; the first is the active one (relative paths start there)."""

    def __init__(self, roots):
        if not roots:
            raise ValueError("at least one root")
        self.given = [os.path.normpath(os.path.abspath(r)) for r in roots]
        self.real = [os.path.realpath(r) for r in roots]

    @property
    def active(self):
        return self.given[0]

    @property
    def active_real(self):
        return self.real[0]

    def describe(self):
        return ", ".join(self.given)

    def contains_real(self, real):
        return any(_under(real, r) for r in self.real)

    def contains_lexical(self, path):
        return any(_under(path, r) for r in self.given) or any(_under(path, r) for r in self.real)

    def display(self, full):
        """How a path is shown: relative to the active root when under it, else absolute."""
        for base in (self.given[0], self.real[0]):
            if _under(full, base):
                rel = os.path.relpath(full, base)
                return "" if rel == "." else rel.replace(os.sep, "/")
        return full

    def resolve(self, path):
        """``(display, real)`` for a user path, or an AgentError saying why it is refused."""
        if path is None:
            path = ""
        if not isinstance(path, str):
            raise AgentError("bad_path", "a source path must be a string, not %s" % type(path).__name__)
        if "\0" in path:
            raise AgentError("bad_path", "the path %r holds a NUL byte" % path)
        parts = path.replace("\\", "/").split("/")
        if ".." in parts:
            raise AgentError("outside_roots", "%s is refused: source paths may not contain '..'" % path)
        if os.path.isabs(path):
            full = os.path.normpath(path)
            if not self.contains_lexical(full):
                raise AgentError("outside_roots", "%s is outside the source roots (%s)" % (path, self.describe()))
        else:
            full = os.path.normpath(os.path.join(self.active, path))
        real = os.path.realpath(full)
        if not self.contains_real(real):
            raise AgentError("outside_roots", "%s leads outside the source roots through a symlink (to %s)"
                             % (path or full, real))
        return self.display(full), real

    def stat(self, path):
        """``(display, real, stat_result)``; a missing path is one sentence."""
        shown, real = self.resolve(path)
        try:
            st = os.stat(real)
        except FileNotFoundError:
            raise AgentError("not_found", "%s does not exist under %s" % (path or ".", self.active))
        except PermissionError:
            raise AgentError("permission", "%s cannot be read (permission denied)" % (path or "."))
        except OSError as exc:
            raise AgentError("unreadable", "%s cannot be read: %s" % (path or ".", exc.strerror or exc))
        return shown, real, st


def require_regular(path, st):
    if stat.S_ISDIR(st.st_mode):
        raise AgentError("is_directory", "%s is a directory; list it with the tree instead" % path)
    if not stat.S_ISREG(st.st_mode):
        raise AgentError("special_file", "%s is a %s, not a regular file; the source browser reads regular files only"
                         % (path, kind_of(st.st_mode)))


def read_regular(path, real, cap):
    """``(data, size)``: at most ``cap`` bytes of a regular file, opened without following or blocking."""
    try:
        fd = os.open(real, _OPEN_FLAGS)
    except OSError as exc:
        raise AgentError("unreadable", "%s cannot be opened: %s" % (path, exc.strerror or exc))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped between the stat and the open
            raise AgentError("special_file", "%s is a %s, not a regular file" % (path, kind_of(st.st_mode)))
        chunks = []
        want = min(st.st_size, cap)
        got = 0
        while got < want:
            b = os.read(fd, want - got)
            if not b:
                break
            chunks.append(b)
            got += len(b)
        return b"".join(chunks), st.st_size
    finally:
        os.close(fd)


def is_binary(data):
    return b"\0" in data[:BINARY_SNIFF_BYTES]
