"""One opened source tree: its roots, where the SGLang package sits in it, listing and reading."""

from __future__ import annotations

import os
import re
import stat

from ..protocol import AgentError
from .grep import compile_pattern, grep_tree
from .paths import VIEW_CAP_BYTES, Roots, is_binary, kind_of, read_regular, require_regular
from .pyast import AstCache

SPEC_DIR = "srt/speculative"
PAGE_LINES = 1000
PAGE_LINES_LIMIT = 5000
PAGE_CHARS = 512 * 1024          # one page's JSON stays well under the 1 MB line limit
LINE_CHARS = 4000                # longer lines are cut, with a count in the reply
LIST_LIMIT = 5000

_VERSION_RE = re.compile(r"""^__version__\s*=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", re.M)
_META_VERSION_RE = re.compile(r"^Version:\s*(\S+)", re.M)


def _is_package(path):
    return os.path.isdir(os.path.join(path, "srt")) and (
        os.path.isfile(os.path.join(path, "__init__.py")) or os.path.isfile(os.path.join(path, "version.py")))


def find_package(root):
    """Where the ``sglang`` package is inside ``root``, relative ("" when root is the package)."""
    for rel in ("", "sglang", "python/sglang"):
        cand = os.path.join(root, rel) if rel else root
        if _is_package(cand) and (rel or os.path.basename(os.path.normpath(root)) == "sglang" or
                                  os.path.isfile(os.path.join(cand, "version.py"))):
            return rel
    return None


def _read_head(path, limit=65536):
    """The start of a small text file; None if it is missing or not a regular file (never blocks)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        return read_regular(path, path, limit)[0].decode("utf-8", "replace")
    except (OSError, AgentError):
        return None


def read_version(package_dir):
    """The package's version from its files: the build's ``_version.py``, a literal in ``version.py``,
    or the ``*.dist-info/METADATA`` beside it (a source checkout's ``version.py`` may only hold a
    development fallback, which is used last)."""
    fallback = None
    for name in ("_version.py", "version.py"):
        text = _read_head(os.path.join(package_dir, name))
        m = _VERSION_RE.search(text or "")
        if m:
            if not m.group(1).startswith("0.0.0"):
                return m.group(1)
            fallback = fallback or m.group(1)
    parent = os.path.dirname(os.path.normpath(package_dir))
    base = os.path.basename(os.path.normpath(package_dir))
    try:
        infos = sorted(n for n in os.listdir(parent) if n.endswith(".dist-info") and n.split("-")[0] == base)
    except OSError:
        infos = []
    for info in infos:
        m = _META_VERSION_RE.search(_read_head(os.path.join(parent, info, "METADATA"), 8192) or "")
        if m:
            return m.group(1)
    return fallback


class SourceTree(object):
    def __init__(self, roots, origin, python=None, installed=None):
        self.roots = Roots(roots)
        self.origin = origin            # "installed" | "configured"
        self.python = python
        self.installed = installed      # what the interpreter said about its SGLang, if asked
        self.package = find_package(self.roots.active_real)
        pkg_dir = self.package_dir()
        self.version = read_version(pkg_dir) if pkg_dir else None
        spec = self.join(self.package, SPEC_DIR) if self.package is not None else ""
        self.start = spec if spec and os.path.isdir(os.path.join(self.roots.active_real, spec)) else (self.package or "")
        self.asts = AstCache()
        self._last_file = None

    # --- naming -------------------------------------------------------------------
    @staticmethod
    def join(*parts):
        return "/".join(p.strip("/") for p in parts if p)

    def package_dir(self):
        if self.package is None:
            return None
        return os.path.join(self.roots.active_real, self.package) if self.package else self.roots.active_real

    def package_name(self):
        d = self.package_dir()
        return os.path.basename(os.path.normpath(d)) if d else None

    def module_of(self, path):
        """The dotted module for a display path inside the package (None outside it)."""
        if self.package is None or not path.endswith(".py"):
            return None
        prefix = self.package + "/" if self.package else ""
        if not path.startswith(prefix):
            return None
        rel = path[len(prefix):-3]
        parts = [self.package_name()] + [p for p in rel.split("/") if p]
        if parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts)

    def module_path(self, module):
        """The display path of a dotted module of the package, if that file exists."""
        name = self.package_name()
        if not module or name is None:
            return None
        parts = module.split(".")
        if parts[0] != name:
            return None
        base = self.join(self.package, *parts[1:])
        for cand in (base + ".py", self.join(base, "__init__.py")):
            if os.path.isfile(os.path.join(self.roots.active_real, cand)):
                return cand
        return None

    def info(self):
        return {"root": self.roots.active, "roots": list(self.roots.given), "origin": self.origin,
                "package": self.package, "start": self.start, "version": self.version, "python": self.python,
                "installed": self.installed}

    # --- search helpers ----------------------------------------------------------
    def top_real(self, path):
        shown, real, st = self.roots.stat(path)
        if not stat.S_ISDIR(st.st_mode):
            raise AgentError("not_directory", "%s is not a directory" % (path or "."))
        return shown, real

    def grep(self, pattern, include=None, max_hits=1000, path=None, ignore_case=False, on_hits=None,
             cancelled=None):
        rx = compile_pattern(pattern, ignore_case)
        _, top = self.top_real(path if path is not None else (self.package or ""))
        return grep_tree(top, rx, self.display_real, include=include, max_hits=max_hits, on_hits=on_hits,
                         cancelled=cancelled)

    def display_real(self, real):
        return self.roots.display(real)

    def read_bytes(self, path, cap=VIEW_CAP_BYTES * 4):
        """A confined regular file's bytes (None when it is not one)."""
        try:
            shown, real, st = self.roots.stat(path)
            require_regular(path, st)
            return read_regular(path, real, cap)[0]
        except AgentError:
            return None

    def parse(self, path):
        _, real = self.roots.resolve(path)
        return self.asts.parse(real)

    # --- listing ------------------------------------------------------------------
    def list_dir(self, path, depth=1):
        shown, real = self.top_real(path)
        entries = []
        truncated = [False]

        def walk(real_dir, shown_dir, level):
            try:
                with os.scandir(real_dir) as it:
                    items = list(it)
            except OSError as exc:
                raise AgentError("unreadable", "%s cannot be listed: %s" % (shown_dir or ".", exc.strerror or exc))
            rows = []
            for e in items:
                rows.append(self._entry(e, shown_dir))
            rows.sort(key=lambda r: (r["kind"] != "dir", r["name"].lower()))
            for r in rows:
                if len(entries) >= LIST_LIMIT:
                    truncated[0] = True
                    return
                r["depth"] = level
                entries.append(r)
                if r["kind"] == "dir" and not r.get("link") and level + 1 < depth:
                    walk(os.path.join(real_dir, r["name"]), r["path"], level + 1)

        walk(real, shown, 0)
        return {"path": shown, "entries": entries, "truncated": truncated[0]}

    def _entry(self, e, shown_dir):
        p = self.join(shown_dir, e.name) if not os.path.isabs(shown_dir) else os.path.join(shown_dir, e.name)
        row = {"name": e.name, "path": p}
        try:
            if e.is_symlink():
                row["link"] = True
                target = os.path.realpath(e.path)
                if not self.roots.contains_real(target):
                    row["kind"] = "outside"
                    return row
                st = os.stat(target)
            else:
                st = e.stat(follow_symlinks=False)
        except OSError:
            row["kind"] = "broken"
            return row
        if stat.S_ISDIR(st.st_mode):
            row["kind"] = "dir"
        elif stat.S_ISREG(st.st_mode):
            row["kind"] = "file"
            row["size"] = st.st_size
        else:
            row["kind"] = "special"
            row["what"] = kind_of(st.st_mode)
        return row

    # --- reading ------------------------------------------------------------------
    def _file_lines(self, path, shown, real, st, cap):
        """``(lines, size, shown_bytes)`` of a file, from a one-file cache while it is unchanged."""
        key = (real, st.st_mtime_ns, st.st_size, cap)
        cached = self._last_file
        if cached is not None and cached[0] == key:
            return cached[1]
        data, size = read_regular(path, real, cap)
        if is_binary(data):
            raise AgentError("binary", "%s is a binary file; the viewer shows text only" % shown)
        if size > len(data):  # truncated: end on a whole line
            cut = data.rfind(b"\n")
            if cut > 0:
                data = data[:cut + 1]
        result = (data.decode("utf-8", "replace").splitlines(), size, len(data))
        self._last_file = (key, result)
        return result

    def read_page(self, path, start=1, count=PAGE_LINES, cap=VIEW_CAP_BYTES):
        shown, real, st = self.roots.stat(path)
        require_regular(path, st)
        lines, size, shown_bytes = self._file_lines(path, shown, real, st, cap)
        truncated = size > shown_bytes
        total = len(lines)
        start = max(1, int(start))
        count = max(1, min(int(count), PAGE_LINES_LIMIT))
        page = []
        chars = 0
        long_lines = 0
        for line in lines[start - 1:start - 1 + count]:
            if len(line) > LINE_CHARS:
                line = line[:LINE_CHARS] + " ..."
                long_lines += 1
            # what the line costs on the wire: JSON escapes every non-ASCII character
            chars += (len(line) if line.isascii() else len(line.encode("ascii", "backslashreplace"))) + 3
            if page and chars > PAGE_CHARS:
                break
            page.append(line)
        end = start + len(page) - 1
        note = None
        if truncated:
            note = ("%s is %s; only its first %s are shown (the viewer's cap)"
                    % (shown, _size(size), _size(shown_bytes)))
        return {"path": shown, "module": self.module_of(shown), "size": size, "start": start, "end": end,
                "lines": page, "total_lines": total, "eof": end >= total, "truncated": truncated,
                "note": note, "long_lines": long_lines, "language": _language(shown)}


def _size(n):
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" % (n, unit)) if unit == "bytes" else ("%.1f %s" % (n, unit))
        n /= 1024.0
    return "%d" % n


_LANGS = {".py": "python", ".pyi": "python", ".cu": "cuda", ".cuh": "cuda", ".h": "cpp", ".cpp": "cpp",
          ".cc": "cpp", ".c": "c", ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".md": "markdown",
          ".toml": "toml", ".sh": "bash", ".js": "javascript", ".rs": "rust", ".txt": "text"}


def _language(path):
    return _LANGS.get(os.path.splitext(path)[1].lower(), "text")
