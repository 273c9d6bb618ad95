"""A per-host cache of ``FlagSet``s and parser verdicts, keyed by host and SGLang version.

Running ``--help`` or SGLang's parser on a host costs seconds (SGLang's imports are heavy), and
a host's flags change only when its SGLang does, so the parsed set, and the parser's verdict on
each command line already checked, are stored as JSON under
``spectui.core.paths.flag_cache_dir()`` (``<user cache>/spectui/flags/``, or the folder given).

The simulated SGLang has no release number that moves with its flags: its entries are keyed by a
digest of the files that define them (:func:`simulator_flags_key`), so a changed simulator gets a
new entry instead of an old list.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import tempfile
from pathlib import Path

from spectui.core.paths import flag_cache_dir
from spectui.core.profiles.flags import FlagSet

_FORMAT = 2


def default_flag_cache_dir() -> Path:
    return flag_cache_dir()


def _simulator_root() -> Path | None:
    """The simulator package's folder, found without importing it (the client only runs it)."""
    spec = importlib.util.find_spec("spectui.sim")
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


def simulator_flags_key(python: str, root: str | os.PathLike | None = None) -> str:
    """The cache key of the simulated SGLang run by ``python``: a digest of the files that define its
    flags (``server/*.py`` and the recorded tables ``data/sglang_flags_*.json`` under ``root``, the
    simulator's package folder of this installation by default, which the demo host runs)."""
    folder = Path(root) if root is not None else _simulator_root()
    digest = hashlib.sha256()
    files = sorted([*folder.glob("server/*.py"), *folder.glob("data/sglang_flags_*.json")]) if folder else []
    for path in files:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        digest.update(f"{path.relative_to(folder).as_posix()}\0{len(data)}\0".encode())
        digest.update(data)
    return f"spectui-sim-{digest.hexdigest()[:16]}@{python}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._@-]+", "_", text).strip("._") or "_"


class FlagCache:
    """``FlagSet`` JSON files, one per (host, SGLang version)."""

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else default_flag_cache_dir()

    def path_for(self, host: str, version: str) -> Path:
        digest = hashlib.sha256(f"{host}\0{version}".encode()).hexdigest()[:12]
        return self.root / f"{_slug(host)}--{_slug(version)}--{digest}.json"

    def get(self, host: str, version: str) -> FlagSet | None:
        """The cached set, or None when absent, unreadable or from another host/version."""
        path = self.path_for(host, version)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != _FORMAT \
                or data.get("host") != host or data.get("version") != version:
            return None
        try:
            return FlagSet.from_json(data)
        except (KeyError, TypeError, AttributeError):
            return None

    def put(self, host: str, version: str, flagset: FlagSet) -> Path:
        """Store ``flagset`` atomically; returns the file written."""
        path = self.path_for(host, version)
        self._write(path, {"format": _FORMAT, "host": host, "version": version, **flagset.to_json()})
        return path

    def verdict_path(self, host: str, version: str, words: list[list[str]]) -> Path:
        digest = hashlib.sha256(json.dumps([host, version, words]).encode()).hexdigest()[:24]
        return self.root / "verdicts" / f"{_slug(host)}--{digest}.json"

    def get_verdict(self, host: str, version: str, words: list[list[str]]) -> dict | None:
        """The host parser's stored verdict on the command ``words`` (one list per flag), or None."""
        try:
            data = json.loads(self.verdict_path(host, version, words).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != _FORMAT or data.get("host") != host \
                or data.get("version") != version or data.get("words") != words:
            return None
        verdict = data.get("verdict")
        return verdict if isinstance(verdict, dict) else None

    def put_verdict(self, host: str, version: str, words: list[list[str]], verdict: dict) -> Path:
        path = self.verdict_path(host, version, words)
        self._write(path, {"format": _FORMAT, "host": host, "version": version, "words": words, "verdict": verdict})
        return path

    def _write(self, path: Path, payload: dict) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".flags-", suffix=".json", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(payload, fh, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def forget(self, host: str, version: str | None = None) -> int:
        """Remove the cached sets of ``host`` (one version, or all); returns how many."""
        if version is not None:
            try:
                self.path_for(host, version).unlink()
                return 1
            except FileNotFoundError:
                return 0
        removed = 0
        for path in self.root.glob(f"{_slug(host)}--*.json"):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and data.get("host") == host:
                path.unlink(missing_ok=True)
                removed += 1
        return removed
